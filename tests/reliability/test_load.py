"""Load: 1,000 signed slash commands at concurrency 32 against the app ``gpufit serve`` runs.

The ASGI app is built as ``gpufit serve`` builds it (``build_services`` on a real Redis with
the price store and metrics, ``build_app``, ``build_asgi``) and served by uvicorn on a free
loopback port; each command's ``response_url`` is its own hook on the fake Slack. Every
request must be acked with 200 and every answer must arrive at its hook.
"""

from __future__ import annotations

import asyncio

import httpx
import pytest

from bot.app import build_app
from bot.server import build_asgi
from bot.services import build_services
from tests.fake_slack import FakeSlack
from tests.reliability.conftest import post_command, serving, settings_for

COMMANDS = 1_000
CONCURRENCY = 32
QUESTIONS = (
    "13B full finetune 2 days",
    "7b lora on 1x A100-40GB spot ok aws only",
    "llama-3-70b qlora on 2B tokens under $3,000",
    "help",
    "gpus",
)


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
                    text = QUESTIONS[i % len(QUESTIONS)]
                    try:
                        acks[i] = await post_command(
                            http, base_url, text, response_url=fake_slack.hook_url(f"r{i}")
                        )
                    except httpx.HTTPError as exc:
                        failures.append(f"request {i}: {exc!r}")

        try:
            app = build_app(settings, services)
            async with serving(build_asgi(services, app, metrics=services.metrics)) as url:
                await asyncio.gather(*(client(url) for _ in range(CONCURRENCY)))
                # help and gpus are answered in the ack itself; questions at response_url.
                expected = {
                    f"hook:r{i}"
                    for i in range(COMMANDS)
                    if QUESTIONS[i % len(QUESTIONS)] not in ("help", "gpus")
                }
                await fake_slack.wait_for("hook", len(expected), within_s=60)
        finally:
            await services.redis.aclose()
            if services.store is not None:
                await services.store.aclose()
        assert failures == []
        assert sorted(acks) == list(range(COMMANDS))
        assert {r.status_code for r in acks.values()} == {200}
        assert all(r.json()["response_type"] == "ephemeral" for r in acks.values())
        hooks = fake_slack.calls("hook")
        assert {c.method for c in hooks} == expected
        assert len(hooks) == len(expected)  # one answer each, no duplicates
        assert all(c.body["text"].startswith("gpufit: ") for c in hooks)
