"""A slow or throttled Slack (issue #34, item 2): start-up never holds requests on
``auth.test``, 429s wait for ``Retry-After``, and a mention's reply lands once however often
its post times out. The served app (uvicorn) with the fake Slack Web API on loopback and a
real Redis.

Before the fix, a throttled ``auth.test`` held every request ~40 s (slack_sdk slept through
``Retry-After`` while requests waited on it), and a slow Slack got a mention's reply posted
once per try: up to 24 copies."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta

import httpx
import pytest

from bot.app import build_app
from bot.identity import AUTHORIZE_WAIT_S, NOT_READY_TEXT, SlackIdentity
from bot.listeners.mentions import REPLY_EVENT_TYPE, sweep_replies
from bot.outbox import ReplyOutbox
from bot.server import EVENTS_PATH, build_asgi
from bot.services import Services
from tests.bot.slack_requests import (
    CHANNEL_ID,
    JSON,
    VERIFIER,
    mention_body,
    signed_headers,
)
from tests.factories import NOW
from tests.fake_slack import FakeSlack
from tests.reliability.conftest import app_services, post_command, serving

TOP = 3
#: The reply post's timeout, shortened: Slack answers each post after SLOW_S, so each try
#: times out although its message lands.
POST_TIMEOUT_S = 0.3
SLOW_S = 0.8


@asynccontextmanager
async def app_at(
    fake: FakeSlack, redis_url: str, *, warm_up: bool = False
) -> AsyncIterator[tuple[str, Services]]:
    settings, services = app_services(fake, redis_url)
    redis = services.redis
    identity = SlackIdentity(services.client)
    app = build_app(settings, services, identity=identity)
    stop = asyncio.Event()
    warming = asyncio.create_task(identity.warm_up(stop)) if warm_up else None
    try:
        async with serving(build_asgi(services, app, verifier=VERIFIER, identity=identity)) as url:
            yield url, services
    finally:
        stop.set()
        if warming is not None:
            await asyncio.wait([warming], timeout=5)
        await services.background.drain(10)
        await redis.aclose()


async def test_a_throttled_auth_test_at_start_holds_no_request(
    fake_slack: FakeSlack, redis_url: str
) -> None:
    """auth.test answers 429 (Retry-After 30 s) at start-up: every command is acked at once
    and told to try again, and auth.test is not asked again before Retry-After."""
    fake_slack.fail_next("auth.test", 1, status=429, retry_after=30)
    async with app_at(fake_slack, redis_url, warm_up=True) as (url, _), httpx.AsyncClient() as http:
        await fake_slack.wait_for("auth.test")
        start = time.monotonic()
        for i in range(5):
            response = await post_command(
                http, url, "help", response_url=fake_slack.hook_url(f"h{i}")
            )
            assert response.status_code == 200
        took = time.monotonic() - start
    assert took < 5 * AUTHORIZE_WAIT_S
    assert len(fake_slack.calls("auth.test")) == 1  # Retry-After honoured: no second ask
    said = {c.body.get("text") for c in fake_slack.calls("hook")}
    assert said == {NOT_READY_TEXT}


async def test_a_slow_auth_test_holds_a_request_at_most_its_wait(
    fake_slack: FakeSlack, redis_url: str
) -> None:
    fake_slack.slow_next("auth.test", 1, delay_s=3.0)
    async with app_at(fake_slack, redis_url, warm_up=True) as (url, _), httpx.AsyncClient() as http:
        await fake_slack.wait_for("auth.test")
        start = time.monotonic()
        response = await post_command(http, url, "help", response_url=fake_slack.hook_url("h"))
        took = time.monotonic() - start
    assert response.status_code == 200
    assert took < AUTHORIZE_WAIT_S + 1.0


async def _mention(http: httpx.AsyncClient, url: str, event_id: str, ts: str) -> None:
    body = mention_body("13B lora 1 day", event_id=event_id, ts=ts)
    response = await http.post(
        url + EVENTS_PATH, content=body, headers=signed_headers(body, content_type=JSON)
    )
    assert response.status_code == 200


async def test_a_reply_whose_posts_time_out_lands_once(
    fake_slack: FakeSlack, redis_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Slack answers each post after the client gave up, but posts it: the next try reads the
    thread, finds the reply (by its event id in the message metadata) and stops."""
    monkeypatch.setattr("bot.listeners.mentions.REPLY_POST_TIMEOUT_S", POST_TIMEOUT_S)
    fake_slack.slow_next("chat.postMessage", 3, delay_s=SLOW_S)
    ts = "1700010000.000100"
    async with app_at(fake_slack, redis_url) as (url, services), httpx.AsyncClient() as http:
        await _mention(http, url, "EvSlow", ts)
        await services.background.drain(10)
        await asyncio.sleep(SLOW_S)  # the fake finishes the post it is still answering
        outbox = ReplyOutbox(services.redis)
        pending = await outbox.pending()
    replies = fake_slack.thread(CHANNEL_ID, ts)
    assert len(replies) == 1, [r.get("ts") for r in replies]
    assert replies[0]["metadata"]["event_type"] == REPLY_EVENT_TYPE
    assert replies[0]["metadata"]["event_payload"] == {"event_id": "EvSlow"}
    assert len(fake_slack.calls("conversations.replies")) >= 1
    assert pending == 0


async def test_a_429_on_a_reply_waits_for_retry_after_then_posts_once(
    fake_slack: FakeSlack, redis_url: str
) -> None:
    """Three 429s (Retry-After 1 s): slack_sdk waits out two, the third puts the reply back
    in the outbox due after Retry-After; nothing is sent to Slack before then."""
    fake_slack.fail_next("chat.postMessage", 3, status=429, retry_after=1)
    ts = "1700011000.000100"
    async with app_at(fake_slack, redis_url) as (url, services), httpx.AsyncClient() as http:
        await _mention(http, url, "Ev429", ts)
        await services.background.drain(10)
        calls = fake_slack.calls("chat.postMessage")
        due = await services.redis.zscore("gpufit:replies:due", "Ev429")
        early = await sweep_replies(services, top=TOP)
        later = _later(services, 1.5)
        sent = await sweep_replies(later, top=TOP)
    gaps = [b.at - a.at for a, b in itertools.pairwise(calls)]
    assert len(calls) == 3
    assert min(gaps) >= 0.9, gaps  # slack_sdk slept Retry-After between them
    assert due is not None
    assert due >= NOW.timestamp() + 1  # due after Retry-After
    assert early == []  # not before it
    assert sent == ["sent"]
    assert len(fake_slack.thread(CHANNEL_ID, ts)) == 1


def _later(services: Services, seconds: float) -> Services:
    return dataclasses.replace(services, now=lambda: NOW + timedelta(seconds=seconds))


async def test_a_reply_through_slack_5xx_lands_once(fake_slack: FakeSlack, redis_url: str) -> None:
    """Two HTTP 500s: a 5xx may hide a post that landed, so each retry reads the thread
    first; the reply lands once."""
    fake_slack.fail_next("chat.postMessage", 2, status=500, error="internal_error")
    ts = "1700012000.000100"
    async with app_at(fake_slack, redis_url) as (url, services), httpx.AsyncClient() as http:
        await _mention(http, url, "Ev5xx", ts)
        await services.background.drain(10)
        pending = await ReplyOutbox(services.redis).pending()
    assert len(fake_slack.thread(CHANNEL_ID, ts)) == 1
    assert len(fake_slack.calls("chat.postMessage")) == 3
    assert len(fake_slack.calls("conversations.replies")) == 2
    assert pending == 0
