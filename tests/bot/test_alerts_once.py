"""Alerts at most once per crossing, when a post's answer never comes back (#18 item 5).

A real Redis and the fake Slack Web API on loopback (``tests.bot.alerts_helpers``): the fake
posts the message, then holds the answer past the worker's posting timeout, or the worker is
killed while it waits. The next try must find the post in the channel's history (by the
alert's metadata key) instead of posting again.
"""

from __future__ import annotations

import asyncio
import logging

import pytest
import redis.asyncio as aioredis

from bot.alerts import WatchStore, parse_watch
from bot.alerts.delivery import (
    ALERT_EVENT_TYPE,
    DELIVERY_DEADLINE_S,
    LEASE_S,
    MAX_INLINE_WAIT_S,
    POST_TIMEOUT_S,
    POST_TRIES,
)
from bot.worker import Worker
from tests.bot.alerts_helpers import ChangingFeed, FakeSlack, h100x8, redis, redis_server, slack
from tests.factories import NOW

__all__ = ["redis", "redis_server", "slack"]  # fixtures used by name below

TEAM = "T1"


async def _nap(seconds: float) -> None:
    """The retry backoff, without its wait (Redis still paces the channel)."""
    await asyncio.sleep(0)


def _worker(
    client: aioredis.Redis,
    feed: ChangingFeed,
    slack: FakeSlack,
    *,
    owner: str = "w1",
    lease_s: float = 2.0,
    deadline_s: float = 1.5,
    post_timeout_s: float = 0.3,
) -> Worker:
    return Worker(
        redis=client,
        catalog_source=feed,
        client_for=lambda team: slack.client(),
        owner=owner,
        post_interval_s=0.01,
        clock=NOW.timestamp,
        sleep=_nap,
        lease_s=lease_s,
        deadline_s=deadline_s,
        post_timeout_s=post_timeout_s,
    )


async def _watch(client: aioredis.Redis) -> None:
    text = "watch 8xH100 below $20/h"
    spec = parse_watch(text)
    await WatchStore(client).add(
        team_id=TEAM,
        channel_id="C1",
        created_by="U1",
        spec=spec,
        text=text,
        now=NOW,
        current=None,  # armed: the first pass alerts
    )


def test_the_posting_deadline_is_below_the_lease() -> None:
    """One call, and a whole attempt with every try and pacing wait, end before the lease."""
    assert POST_TIMEOUT_S < DELIVERY_DEADLINE_S < LEASE_S
    assert POST_TRIES * (MAX_INLINE_WAIT_S + POST_TIMEOUT_S) <= DELIVERY_DEADLINE_S


async def test_a_post_slower_than_the_timeout_is_found_not_posted_again(
    redis: aioredis.Redis, slack: FakeSlack
) -> None:
    """Slack stores the alert but answers after the worker's timeout: the retry reads the
    channel, finds the alert's metadata key, marks it sent with that post's ts and does not
    post a second time."""
    feed = ChangingFeed(h100x8(19.0))
    await _watch(redis)
    slack.slow_posts.append(1.0)  # past post_timeout_s
    report = await _worker(redis, feed, slack).run_once()
    [first] = slack.posts()
    assert [o.status for o in report.outcomes] == ["sent"]
    assert len(slack.attempts()) == 1  # one chat.postMessage, not two
    assert len(slack.history_reads()) == 1
    assert first.body["metadata"] == {
        "event_type": ALERT_EVENT_TYPE,
        "event_payload": {"key": report.claimed[0]},
    }
    [outcome] = report.outcomes
    assert outcome.record is not None
    assert outcome.record.ts == first.body["_ts"]
    assert await redis.zcard("gpufit:alerts:due") == 0


async def test_a_worker_killed_mid_post_leaves_no_second_post(
    redis_server: str, redis: aioredis.Redis, slack: FakeSlack
) -> None:
    """A worker dies while its post is in flight (the message landed); once its lease lapses,
    another replica finds the post in the channel and marks the alert sent."""
    feed = ChangingFeed(h100x8(19.0))
    await _watch(redis)
    slack.slow_posts.append(2.0)
    dying = _worker(redis, feed, slack, owner="dying", lease_s=1.0, deadline_s=0.9,
                    post_timeout_s=0.8)  # fmt: skip
    task = asyncio.create_task(dying.run_once())
    await _posted(slack)
    task.cancel()  # killed: no outcome written, the lease still held
    with pytest.raises(asyncio.CancelledError):
        await task
    other = _worker(redis, feed, slack, owner="other")
    assert (await other.run_once()).outcomes[0].status == "skipped"  # the lease is held
    await asyncio.sleep(1.1)  # the dead worker's lease lapses
    report = await other.run_once()
    assert [o.status for o in report.outcomes] == ["sent"]
    assert len(slack.attempts()) == 1


async def test_an_unreadable_history_posts_again_and_says_so(
    redis: aioredis.Redis, slack: FakeSlack, caplog: pytest.LogCaptureFixture
) -> None:
    """Without a history scope the check cannot be made: the alert is posted again (delivery
    wins over a possible duplicate) and a warning says it may appear twice."""
    feed = ChangingFeed(h100x8(19.0))
    await _watch(redis)
    slack.slow_posts.append(1.0)
    slack.history_error = "missing_scope"
    with caplog.at_level(logging.WARNING, logger="bot.alerts.delivery"):
        report = await _worker(redis, feed, slack).run_once()
    assert [o.status for o in report.outcomes] == ["sent"]
    assert len(slack.posts()) == 2
    assert "may appear twice" in caplog.text


async def test_a_refused_post_needs_no_history_read(
    redis: aioredis.Redis, slack: FakeSlack
) -> None:
    """Slack answered 429: nothing was posted, so the retry posts without reading history."""
    feed = ChangingFeed(h100x8(19.0))
    await _watch(redis)
    slack.rate_limit(1, retry_after_s=0)
    report = await _worker(redis, feed, slack).run_once()
    assert [o.status for o in report.outcomes] == ["sent"]
    assert slack.history_reads() == []
    assert len(slack.posts()) == 1


async def _posted(slack: FakeSlack) -> None:
    """Wait until the fake has stored one post (its answer still held back)."""
    for _ in range(500):
        if slack.posts():
            return
        await asyncio.sleep(0.01)
    raise AssertionError("no post arrived")
