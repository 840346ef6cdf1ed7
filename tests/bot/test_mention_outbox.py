"""Mention replies are posted at least once (#18 item 6): the reply outbox in a real Redis,
the fake Slack Web API on loopback failing the posts."""

from __future__ import annotations

import asyncio
import dataclasses
import json
from datetime import timedelta
from typing import Any

import pytest
import redis.asyncio as aioredis
from slack_bolt.async_app import AsyncApp

from bot.app import build_app
from bot.listeners.mentions import REPLY_RETRY_BASE_S, sweep_replies
from bot.outbox import MAX_REPLY_ATTEMPTS, ReplyJob, ReplyOutbox
from bot.services import Services
from bot.settings import Settings
from tests.asgi_server import free_port
from tests.bot.slack_requests import CHANNEL_ID, JSON, mention_body, request
from tests.factories import NOW
from tests.fake_slack import TEAM_ID, FakeSlack

TOP = 3


async def _mention(app: AsyncApp, text: str, *, event_id: str, ts: str) -> None:
    response = await app.async_dispatch(request(mention_body(text, event_id=event_id, ts=ts), JSON))
    assert response.status == 200


async def _settled(services: Services) -> None:
    """Wait until the replies started after the ack have finished their attempt."""
    for _ in range(1000):
        if not len(services.background):
            return
        await asyncio.sleep(0.01)
    raise AssertionError("background replies still running")


def _answered(call: Any) -> bool:
    """A post carrying an answer (not an apology or notice)."""
    return "13B" in json.dumps(call.body.get("blocks", [])) + call.body.get("text", "")


def _later(services: Services, seconds: float) -> Services:
    return dataclasses.replace(services, now=lambda: NOW + timedelta(seconds=seconds))


async def test_a_reply_whose_post_fails_twice_is_still_posted(
    app: AsyncApp, fake_slack: FakeSlack, services: Services
) -> None:
    """Two failed posts (HTTP 500) are retried; the third carries the answer, once."""
    fake_slack.fail_next("chat.postMessage", 2, status=500, error="internal_error")
    await _mention(app, "13B lora 1 day", event_id="EvFlaky", ts="1700006000.000100")
    await _settled(services)
    posts = fake_slack.calls("chat.postMessage")
    assert len(posts) == 3
    assert _answered(posts[-1])
    assert posts[-1].body["thread_ts"] == "1700006000.000100"
    assert await ReplyOutbox(services.redis).pending() == 0


async def test_a_reply_slack_keeps_refusing_waits_and_a_later_sweep_posts_it(
    app: AsyncApp, fake_slack: FakeSlack, services: Services
) -> None:
    """Past the quick tries the reply stays in the outbox (the event is not handled yet);
    Slack's retry of the event is still dropped, and the sweep after the backoff posts it."""
    fake_slack.fail_next("chat.postMessage", 3, status=503, error="service_unavailable")
    await _mention(app, "13B lora 1 day", event_id="EvDown", ts="1700007000.000100")
    await _settled(services)
    outbox = ReplyOutbox(services.redis)
    assert await outbox.pending() == 1
    await _mention(app, "13B lora 1 day", event_id="EvDown", ts="1700007000.000100")
    await _settled(services)
    assert len(fake_slack.calls("chat.postMessage")) == 3  # the duplicate started nothing
    assert await sweep_replies(services, top=TOP) == []  # not due yet
    assert await sweep_replies(_later(services, REPLY_RETRY_BASE_S + 1), top=TOP) == ["sent"]
    posts = fake_slack.calls("chat.postMessage")
    assert len(posts) == 4
    assert _answered(posts[-1])
    assert posts[-1].body == posts[0].body  # rendered once, posted as rendered
    assert await outbox.pending() == 0


async def test_a_permanent_refusal_ends_the_job(
    app: AsyncApp, fake_slack: FakeSlack, services: Services
) -> None:
    """``not_in_channel`` is not retried: one post, and the job leaves the outbox."""
    fake_slack.fail_next("chat.postMessage", 1, status=200, error="not_in_channel")
    await _mention(app, "13B lora 1 day", event_id="EvOut", ts="1700008000.000100")
    await _settled(services)
    assert len(fake_slack.calls("chat.postMessage")) == 1
    assert await ReplyOutbox(services.redis).pending() == 0


async def test_a_reply_left_by_a_dead_replica_is_posted_after_its_lease(
    fake_slack: FakeSlack, services: Services, redis: aioredis.Redis
) -> None:
    """A replica queued the mention and died before replying: its lease lapses and another
    replica's sweep posts the reply."""
    outbox = ReplyOutbox(services.redis)
    job = ReplyJob(
        event_id="EvOrphan",
        team_id=TEAM_ID,
        channel=CHANNEL_ID,
        thread_ts="1700009000.000100",
        text="13B lora 1 day",
    )
    assert await outbox.enqueue(job, NOW.timestamp())
    assert await outbox.lease("EvOrphan", "dead-replica", 0.2)
    assert await sweep_replies(services, top=TOP) == ["skipped"]
    await asyncio.sleep(0.3)
    assert await sweep_replies(services, top=TOP) == ["sent"]
    [post] = fake_slack.calls("chat.postMessage")
    assert post.body["thread_ts"] == "1700009000.000100"
    assert _answered(post)


async def test_a_reply_is_given_up_after_the_last_attempt(
    fake_slack: FakeSlack, services: Services, caplog: pytest.LogCaptureFixture
) -> None:
    """A reply failing on every attempt is given up (logged), not retried forever."""
    outbox = ReplyOutbox(services.redis)
    job = ReplyJob(
        event_id="EvHopeless",
        team_id=TEAM_ID,
        channel=CHANNEL_ID,
        thread_ts="1700009100.000100",
        text="13B lora 1 day",
        attempts=MAX_REPLY_ATTEMPTS - 1,
    )
    assert await outbox.enqueue(job, NOW.timestamp())
    fake_slack.fail_next("chat.postMessage", 3, status=500, error="internal_error")
    assert await sweep_replies(services, top=TOP) == ["failed"]
    assert await outbox.pending() == 0
    assert "given up" in caplog.text


async def test_without_redis_the_mention_is_still_answered(
    settings: Settings, fake_slack: FakeSlack, services: Services
) -> None:
    """Redis refuses connections (nothing listens on its port): no outbox and no thread memory,
    but the mention still gets its answer, not an apology."""
    down = aioredis.Redis.from_url(f"redis://127.0.0.1:{free_port()}/0", socket_connect_timeout=1)
    offline = dataclasses.replace(services, redis=down)
    try:
        app = build_app(settings, offline)
        await _mention(app, "13B lora 1 day", event_id="EvNoRedis", ts="1700009000.000100")
        await _settled(offline)
    finally:
        await down.aclose()
    posts = fake_slack.calls("chat.postMessage")
    assert len(posts) == 1
    assert _answered(posts[0])
