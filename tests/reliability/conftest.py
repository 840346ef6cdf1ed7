"""Fixtures for the reliability suite: the fake Slack, the Slack app served by uvicorn on a
free loopback port, the loopback feed server (``tests/feeds/conftest.py``) and a real Redis
(``tests/redis_server.py``)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
import redis.asyncio as aioredis

from bot.app import build_app
from bot.catalog import bundled_catalog
from bot.server import EVENTS_PATH, build_asgi
from bot.services import Services, build_web_client, static_catalog
from bot.settings import Settings
from tests.asgi_server import free_port, serving
from tests.bot.slack_requests import FORM, VERIFIER, command_body, settings_for, signed_headers
from tests.factories import NOW
from tests.fake_slack import Call, FakeSlack, clean_slack_env, fake_slack
from tests.feeds.conftest import feed_server
from tests.redis_server import redis_server, redis_url

__all__ = [
    "answer_text",
    "app_url",
    "clean_slack_env",
    "command_answer",
    "fake_slack",
    "feed_server",
    "free_port",
    "message_text",
    "post_command",
    "redis_server",
    "redis_url",
    "serving",
]


async def post_command(
    http: httpx.AsyncClient, base_url: str, text: str, *, response_url: str
) -> httpx.Response:
    """POST a signed ``/gpufit TEXT`` to the app, as Slack would."""
    body = command_body(text, response_url=response_url)
    return await http.post(
        base_url + EVENTS_PATH, content=body, headers=signed_headers(body, content_type=FORM)
    )


async def answer_text(fake: FakeSlack, hook: str, *, within_s: float = 20.0) -> str:
    """Everything the answer posted to ``response_url`` ``hook`` says (text and blocks)."""
    [call] = await fake.wait_for(f"hook:{hook}", within_s=within_s)
    return message_text(call)


def message_text(call: Call) -> str:
    return body_text(call.body)


def body_text(body: dict[str, Any]) -> str:
    return f"{body.get('text', '')}\n{body.get('blocks', '')}"


async def command_answer(fake: FakeSlack, response: httpx.Response, hook: str) -> str:
    """What a command was answered with: its ack, or (when the ack only says it is working on
    it) what followed at ``response_url`` ``hook``."""
    assert response.status_code == 200, response.text
    ack: dict[str, Any] = response.json()
    if str(ack.get("text", "")).startswith("Working on it"):
        return await answer_text(fake, hook)
    return body_text(ack)


def app_services(fake: FakeSlack, redis_url: str) -> tuple[Settings, Services]:
    """Settings for the fake Slack and a real Redis, and the services a served app runs on:
    the bundled catalog, the tests' clock, the Web API client `gpufit serve` builds."""
    settings = settings_for(fake, redis_url)
    services = Services(
        redis=aioredis.Redis.from_url(redis_url),
        catalog=static_catalog(bundled_catalog()),
        now=lambda: NOW,
        client=build_web_client(settings),
    )
    return settings, services


@pytest.fixture
async def app_url(fake_slack: FakeSlack, redis_url: str) -> AsyncIterator[str]:
    """The Slack app as `gpufit serve` builds it, under uvicorn on loopback; its base URL."""
    settings, services = app_services(fake_slack, redis_url)
    redis = services.redis
    asgi = build_asgi(services, build_app(settings, services), verifier=VERIFIER)
    async with serving(asgi) as url:
        yield url
    await services.background.drain(10)
    await redis.aclose()
