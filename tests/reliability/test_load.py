"""Load: 1,000 signed slash commands at concurrency 32 against the app ``gpufit serve`` runs.

The ASGI app is built as ``gpufit serve`` builds it (``build_services`` on a real Redis with
the price store and metrics, ``build_app``, ``build_asgi``) and served by uvicorn on a free
loopback port; each command's ``response_url`` is its own hook on the fake Slack. Every
request must be acked with 200, and every question answered exactly once: in its ack, or (when
the answer missed the ack budget) at its hook after a "Working on it…" ack. Some questions
repeat (answered from the answer cache) and some are new each time (computed under load).
"""

from __future__ import annotations

import asyncio

import httpx
import pytest

from bot.app import build_app
from bot.server import build_asgi
from bot.services import build_services
from tests.bot.slack_requests import VERIFIER, settings_for
from tests.fake_slack import FakeSlack
from tests.reliability.conftest import post_command, serving

COMMANDS = 1_000
CONCURRENCY = 32
QUESTIONS = (
    "13B full finetune 2 days",
    "7b lora on 1x A100-40GB spot ok aws only",
    "llama-3-70b qlora on 2B tokens under $3,000",
    "help",
    "gpus",
    "mistral-7b full finetune {i} hours",  # a new question each time: never from the cache
)


def _question(i: int) -> str:
    return QUESTIONS[i % len(QUESTIONS)].format(i=i + 1)


@pytest.mark.slow
class TestLoad:
    async def test_1000_commands_at_concurrency_32_are_all_acked_and_answered(
        self, fake_slack: FakeSlack, redis_url: str
    ) -> None:
        """Zero errors: 1,000 commands (questions and subcommands) 32 at a time are all acked
        200 with a body, and every question's answer reaches its response_url."""
        settings = settings_for(fake_slack, redis_url)
        services = build_services(settings)
        acks: dict[int, httpx.Response] = {}
        failures: list[str] = []
        queue = iter(range(COMMANDS))

        async def client(base_url: str) -> None:
            async with httpx.AsyncClient(timeout=30) as http:
                for i in queue:
                    text = _question(i)
                    try:
                        acks[i] = await post_command(
                            http, base_url, text, response_url=fake_slack.hook_url(f"r{i}")
                        )
                    except httpx.HTTPError as exc:
                        failures.append(f"request {i}: {exc!r}")

        try:
            app = build_app(settings, services)
            async with serving(
                build_asgi(services, app, verifier=VERIFIER, metrics=services.metrics)
            ) as url:
                await asyncio.gather(*(client(url) for _ in range(CONCURRENCY)))
                late = {
                    f"hook:r{i}" for i, r in acks.items() if "Working on it" in r.json()["text"]
                }
                if late:
                    await fake_slack.wait_for("hook", len(late), within_s=60)
                await services.background.drain(10)
        finally:
            await services.redis.aclose()
            if services.store is not None:
                await services.store.aclose()
        assert failures == []
        assert sorted(acks) == list(range(COMMANDS))
        assert {r.status_code for r in acks.values()} == {200}
        assert all(r.json()["response_type"] == "ephemeral" for r in acks.values())
        questions = {i for i in range(COMMANDS) if _question(i) not in ("help", "gpus")}
        in_ack = {i for i in questions if acks[i].json()["text"].startswith("gpufit: ")}
        hooks = fake_slack.calls("hook")
        assert {c.method for c in hooks} == late
        assert len(hooks) == len(late)  # one late answer each, no duplicates
        assert all(c.body["text"].startswith("gpufit: ") for c in hooks)
        assert in_ack | {int(m.removeprefix("hook:r")) for m in late} == questions
        assert not in_ack & {int(m.removeprefix("hook:r")) for m in late}
        assert services.answers.hits > 0
        for i in range(COMMANDS):
            if _question(i) in ("help", "gpus"):
                assert acks[i].json()["blocks"], i  # answered in the ack
