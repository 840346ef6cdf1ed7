"""``Background``: work after the ack is kept alive, its failures logged, and drained."""

from __future__ import annotations

import asyncio

import pytest

from bot.background import Background


class TestBackground:
    async def test_spawned_work_runs_and_is_forgotten_when_done(self) -> None:
        """A task is held while it runs and dropped once it has finished."""
        background = Background()
        ran = asyncio.Event()

        async def work() -> None:
            ran.set()

        task = background.spawn(work(), name="work")
        assert len(background) == 1
        await task
        await asyncio.sleep(0)  # done callbacks run on the next loop pass
        assert ran.is_set()
        assert len(background) == 0

    async def test_a_failure_is_logged_with_the_task_name(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        """An exception that escapes a task is logged, not lost as "never retrieved"."""
        background = Background()

        async def broken() -> None:
            raise RuntimeError("boom")

        with caplog.at_level("ERROR", logger="bot.background"):
            task = background.spawn(broken(), name="gpufit-test")
            await asyncio.wait({task})
            await asyncio.sleep(0)
        [record] = [r for r in caplog.records if r.name == "bot.background"]
        assert "gpufit-test" in record.getMessage()
        assert record.exc_info is not None
        assert len(background) == 0

    async def test_drain_waits_for_quick_work_and_cancels_the_rest(self) -> None:
        """At shutdown work that finishes within the grace completes; the rest is cancelled."""
        background = Background()
        finished: list[str] = []

        async def sleep_then(name: str, seconds: float) -> None:
            await asyncio.sleep(seconds)
            finished.append(name)

        background.spawn(sleep_then("quick", 0.01), name="quick")
        slow = background.spawn(sleep_then("slow", 30), name="slow")
        assert await background.drain(0.5) == 1
        assert finished == ["quick"]
        assert slow.cancelled()
        assert len(background) == 0

    async def test_drain_with_nothing_running_returns_at_once(self) -> None:
        assert await Background().drain(10) == 0

    async def test_adopted_tasks_are_drained_too(self) -> None:
        """A task started elsewhere (an answer past the ack budget) is supervised the same."""
        background = Background()
        task = asyncio.create_task(asyncio.sleep(30))
        background.adopt(task)
        assert await background.drain(0.01) == 1
        assert task.cancelled()
