"""Work that outlives the Slack request that started it.

The app runs in Bolt's ``process_before_response`` mode: an ack function's return *is* the
HTTP response (or the Socket Mode envelope ack). The work after it (a command's answer or a
button's follow-up, in Bolt's lazy listeners, which adopt their own task here; a thread
reply, spawned here) is held by :class:`Background`, which keeps a strong reference to each
task (the event loop, and Bolt's lazy-listener runner, hold only weak ones), logs what escapes
it, and lets the server wait for the work still in flight before it exits.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Coroutine
from typing import Any

__all__ = ["Background"]

logger = logging.getLogger(__name__)


class Background:
    """A set of supervised tasks on the running event loop."""

    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()

    def __len__(self) -> int:
        return len(self._tasks)

    def spawn(self, work: Coroutine[Any, Any, None], *, name: str) -> asyncio.Task[None]:
        """Run ``work`` after the current request; the request's log context goes with it
        (tasks copy the context they are created in)."""
        task = asyncio.create_task(work, name=name)
        self.adopt(task)
        return task

    def adopt(self, task: asyncio.Task[Any]) -> None:
        """Supervise a task started elsewhere (e.g. an answer that missed the ack budget)."""
        self._tasks.add(task)
        task.add_done_callback(self._finished)

    def adopt_current(self) -> None:
        """Supervise the task running the caller (a Bolt lazy listener's work after its ack),
        so that shutdown drains it like the rest."""
        task = asyncio.current_task()
        if task is not None:
            self.adopt(task)

    def _finished(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if task.cancelled():
            return
        error = task.exception()
        if error is not None:
            # Listeners report their own failures to the user; this is the net under them.
            logger.error("background task %s failed", task.get_name(), exc_info=error)

    async def drain(self, timeout_s: float) -> int:
        """Wait up to ``timeout_s`` for the tasks in flight; cancel the rest.

        Returns:
            How many tasks were cancelled.
        """
        pending = set(self._tasks)
        if not pending:
            return 0
        logger.info("waiting for %d background task(s)", len(pending))
        _, late = await asyncio.wait(pending, timeout=timeout_s)
        for task in late:
            task.cancel()
        if late:
            await asyncio.wait(late)
            logger.warning("cancelled %d background task(s) still running at shutdown", len(late))
        return len(late)
