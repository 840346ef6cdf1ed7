"""The alert worker end to end: a real Redis, the fake Slack Web API on loopback and a feed whose
prices change between passes."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from datetime import timedelta

import httpx
import pytest
import redis.asyncio as aioredis

from bot.alerts import (
    TOKEN_ERRORS,
    ChannelPacer,
    WatchNotFoundError,
    WatchStore,
    current_price,
    parse_watch,
)
from bot.alerts.delivery import MAX_RETRY_AFTER_S, POST_TRIES
from bot.health import start_metrics_server
from bot.metrics import Metrics
from bot.worker import Worker
from recommender import Catalog, PriceFeedError
from tests.bot.alerts_helpers import (
    ChangingFeed,
    FakeSlack,
    h100x8,
    new_client,
    redis,
    redis_server,
    slack,
)
from tests.factories import NOW, catalog

__all__ = ["redis", "redis_server", "slack"]  # fixtures used by name below

TEAM = "T1"


@dataclass
class Clock:
    """Wall-clock seconds a test moves by hand (due times, the digest's day)."""

    t: float = field(default_factory=NOW.timestamp)

    def __call__(self) -> float:
        return self.t

    def advance(self, seconds: float) -> None:
        self.t += seconds


@dataclass
class Sleeps:
    """Records the waits the worker asks for, without waiting (Redis still paces)."""

    waits: list[float] = field(default_factory=list)

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)
        await asyncio.sleep(0)


def worker(
    client: aioredis.Redis,
    feed: ChangingFeed,
    slack: FakeSlack,
    *,
    clock: Clock | None = None,
    sleep: Sleeps | None = None,
    owner: str = "w1",
) -> Worker:
    return Worker(
        redis=client,
        catalog_source=feed,
        client_for=lambda team: slack.client(),
        owner=owner,
        post_interval_s=0.01,
        clock=clock or Clock(),
        **({"sleep": sleep} if sleep is not None else {}),
    )


async def watch(
    client: aioredis.Redis,
    text: str = "watch 8xH100 below $20/h",
    *,
    channel: str = "C1",
    feed: ChangingFeed | None = None,
) -> str:
    spec = parse_watch(text)
    current = current_price(spec, await feed(), now=NOW) if feed is not None else None
    w = await WatchStore(client).add(
        team_id=TEAM,
        channel_id=channel,
        created_by="U1",
        spec=spec,
        text=text,
        now=NOW,
        current=current,
    )
    return w.id


class TestPasses:
    async def test_alert_on_crossing_with_old_and_new_price(
        self, redis: aioredis.Redis, slack: FakeSlack
    ) -> None:
        """A pass that sees the price cross posts what crossed, old → new, and where."""
        feed = ChangingFeed(h100x8(25.0))
        wid = await watch(redis, feed=feed)
        w = worker(redis, feed, slack)
        assert (await w.run_once()).claimed == ()
        feed.set(h100x8(19.0))
        report = await w.run_once()
        assert report.sent == 1
        [post] = slack.posts("C1")
        assert "$25.00/h → $19.00/h" in post.body["text"]
        assert "lambda gpu_8x_h100_sxm5" in post.body["text"]
        assert wid in str(post.body["blocks"])
        assert "us-east-1" in str(post.body["blocks"])

    async def test_hysteresis_across_passes(self, redis: aioredis.Redis, slack: FakeSlack) -> None:
        """No repeat while below; re-armed past the margin; the next fall alerts again."""
        feed = ChangingFeed(h100x8(25.0))
        await watch(redis, feed=feed)
        w = worker(redis, feed, slack)
        sent = []
        for price in [25.0, 19.0, 19.5, 20.5, 18.9, 21.5, 18.0]:
            feed.set(h100x8(price))
            sent.append((await w.run_once()).sent)
        assert sent == [0, 1, 0, 0, 0, 0, 1]
        assert len(slack.posts()) == 2
        assert "$21.50/h → $18.00/h" in slack.posts()[1].body["text"]

    async def test_caveats_stale_and_spot(self, redis: aioredis.Redis, slack: FakeSlack) -> None:
        """An alert on an old spot price says the price is stale and spot can be reclaimed."""

        async def old_spot_feed() -> Catalog:
            return catalog(h100x8(19.0, spot=True), as_of=NOW - timedelta(days=5))

        await watch(redis)
        w = Worker(
            redis=redis,
            catalog_source=old_spot_feed,
            client_for=lambda team: slack.client(),
            post_interval_s=0.01,
            clock=Clock(),
        )
        await w.run_once()
        [post] = slack.posts()
        blocks = str(post.body["blocks"])
        assert "5 days old" in blocks
        assert "spot capacity can be reclaimed" in blocks

    async def test_workload_watch(self, redis: aioredis.Redis, slack: FakeSlack) -> None:
        """A workload watch alerts when the best option's run cost falls under the budget."""
        feed = ChangingFeed(h100x8(80.0))
        await watch(redis, "watch 13B full finetune 2 days under $3000", feed=feed)
        w = worker(redis, feed, slack)
        await w.run_once()
        assert slack.posts() == []
        feed.set(h100x8(40.0))
        await w.run_once()
        [post] = slack.posts()
        assert "for the run" in post.body["text"]

    async def test_daily_digest_once_per_day(self, redis: aioredis.Redis, slack: FakeSlack) -> None:
        """A channel with daily watches gets one digest a day, however many passes run."""
        feed = ChangingFeed(h100x8(25.0))
        await watch(redis, "watch 8xH100 below $20/h daily", feed=feed)
        await watch(redis, "watch H100 below $2/gpu-hour daily", feed=feed)
        await watch(redis, "watch 8xH100 below $20/h", channel="C2", feed=feed)
        clock = Clock()
        w = worker(redis, feed, slack, clock=clock)
        await w.run_once()
        await w.run_once()
        [digest] = slack.posts("C1")
        assert "Daily GPU price digest" in str(digest.body["blocks"])
        assert "$25.00/h" in str(digest.body["blocks"])
        assert slack.posts("C2") == []
        clock.advance(24 * 3600)
        await w.run_once()
        assert len(slack.posts("C1")) == 2


class TestRunForever:
    async def test_keeps_passing_until_stopped_and_survives_a_failed_pass(
        self, redis: aioredis.Redis, slack: FakeSlack
    ) -> None:
        """A pass that raises is logged; the loop goes on until the stop event is set."""
        stop = asyncio.Event()
        calls = 0

        async def flaky_feed() -> Catalog:
            nonlocal calls
            calls += 1
            if calls == 1:
                raise PriceFeedError("feed down")
            if calls == 3:
                stop.set()
            return catalog(h100x8(19.0))

        await watch(redis)
        w = Worker(
            redis=redis,
            catalog_source=flaky_feed,
            client_for=lambda team: slack.client(),
            post_interval_s=0.01,
        )
        await asyncio.wait_for(w.run_forever(interval_s=0.01, stop=stop), timeout=30)
        assert calls == 3
        assert len(slack.posts()) == 1


class TestExactlyOnce:
    async def test_two_workers_at_once_post_each_alert_once(
        self, redis_server: str, slack: FakeSlack
    ) -> None:
        """Two replicas (separate Redis clients) running passes at once post each alert once."""
        a, b = new_client(redis_server), new_client(redis_server)
        try:
            await a.flushdb()
            feed = ChangingFeed(h100x8(25.0))
            ids = [await watch(a, channel=f"C{i % 3}", feed=feed) for i in range(6)]
            w1 = worker(a, feed, slack, owner="replica-1")
            w2 = worker(b, feed, slack, owner="replica-2")
            await asyncio.gather(w1.run_once(), w2.run_once())
            feed.set(h100x8(19.0))
            for _ in range(3):
                await asyncio.gather(w1.run_once(), w2.run_once())
            posts = slack.posts()
            assert len(posts) == len(ids)
            posted_ids = sorted(i for p in posts for i in ids if f"`{i}`" in str(p.body["blocks"]))
            assert posted_ids == sorted(ids)
        finally:
            await a.aclose()
            await b.aclose()

    async def test_claimed_but_unsent_is_retried_after_the_lease(
        self, redis: aioredis.Redis, slack: FakeSlack
    ) -> None:
        """An alert claimed by a replica that died before posting is posted after its lease."""
        feed = ChangingFeed(h100x8(19.0))
        await watch(redis)
        w = worker(redis, feed, slack)
        [key] = (await w.run_once()).claimed  # claimed and sent; make a second crossing...
        feed.set(h100x8(30.0))
        await w.run_once()
        feed.set(h100x8(18.0))
        # ...claimed by a "dead" replica: it holds a short lease and never posts.
        dead = worker(redis, feed, slack, owner="dead")
        dead.delivery.deliver_due = _nothing  # type: ignore[method-assign]
        [key2] = (await dead.run_once()).claimed
        assert key2 != key
        assert await dead.queue.lease(key2, "dead", 0.05)
        assert (await w.run_once()).sent == 0  # the lease is held: not posted twice
        await asyncio.sleep(0.2)  # the dead replica's lease expires
        assert (await w.run_once()).sent == 1
        assert len(slack.posts()) == 2


async def _nothing() -> list[object]:
    return []


class TestRateLimits:
    async def test_429_burst_delays_but_loses_nothing(
        self, redis: aioredis.Redis, slack: FakeSlack
    ) -> None:
        """A burst of 429s is waited out (Retry-After) and every alert still arrives once."""
        feed = ChangingFeed(h100x8(25.0))
        ids = [await watch(redis, channel="C1", feed=feed) for _ in range(3)]
        sleeps = Sleeps()
        w = worker(redis, feed, slack, sleep=sleeps)
        await w.run_once()
        feed.set(h100x8(19.0))
        slack.rate_limit(POST_TRIES - 1, retry_after_s=2)
        report = await w.run_once()
        assert report.sent == len(ids)
        assert len(slack.posts()) == len(ids)
        assert len(slack.attempts()) == len(ids) + POST_TRIES - 1
        # Retry-After honoured: each retry first waited (about) the 2 s Slack asked for.
        assert sum(1 for s in sleeps.waits if s >= 1.5) >= POST_TRIES - 1

    async def test_longer_burst_goes_back_to_the_outbox(
        self, redis: aioredis.Redis, slack: FakeSlack
    ) -> None:
        """More 429s than one pass retries leave the alert queued; a later pass posts it."""
        feed = ChangingFeed(h100x8(19.0))
        await watch(redis)
        clock = Clock()
        w = worker(redis, feed, slack, clock=clock, sleep=Sleeps())
        slack.rate_limit(POST_TRIES + 2, retry_after_s=1)
        first = await w.run_once()
        assert [o.status for o in first.outcomes] == ["retry"]
        assert slack.posts() == []
        assert await w.queue.pending_count() == 1
        clock.advance(5)
        await w.run_once()
        assert len(slack.posts()) == 1
        assert await w.queue.pending_count() == 0

    async def test_transient_errors_are_retried(
        self, redis: aioredis.Redis, slack: FakeSlack
    ) -> None:
        """A 500 / internal_error is retried, not dropped."""
        feed = ChangingFeed(h100x8(19.0))
        await watch(redis)
        slack.fail("internal_error", status=500, times=2)
        await worker(redis, feed, slack, sleep=Sleeps()).run_once()
        assert len(slack.posts()) == 1

    async def test_posts_to_one_channel_get_distinct_slots_across_replicas(
        self, redis_server: str
    ) -> None:
        """Two replicas reserving posts to one channel get slots one interval apart."""
        a, b = new_client(redis_server), new_client(redis_server)
        interval = 1000.0  # long enough that the test's own runtime cannot blur the slots
        try:
            await a.flushdb()
            pacers = [ChannelPacer(a, interval_s=interval), ChannelPacer(b, interval_s=interval)]
            waits = sorted(
                await asyncio.gather(*(pacers[i % 2].reserve(TEAM, "C1") for i in range(6)))
            )
            for k, wait in enumerate(waits):
                assert k * interval - 5 <= wait <= k * interval
            assert await pacers[0].reserve(TEAM, "C2") == 0  # other channels are not held up
        finally:
            await a.aclose()
            await b.aclose()


class TestPermanentErrors:
    @pytest.mark.parametrize("error", ["channel_not_found", "not_in_channel", "is_archived"])
    async def test_disables_the_watch_and_says_why(
        self, redis: aioredis.Redis, slack: FakeSlack, error: str
    ) -> None:
        """A permanent error disables the watch with its reason instead of retrying forever."""
        feed = ChangingFeed(h100x8(19.0))
        wid = await watch(redis, channel="CGONE")
        slack.channel_errors["CGONE"] = error
        w = worker(redis, feed, slack, sleep=Sleeps())
        report = await w.run_once()
        assert [o.status for o in report.outcomes] == ["dropped"]
        [listed] = await w.watches.list_channel(TEAM, "CGONE")
        assert listed.id == wid
        assert listed.disabled_reason is not None
        assert listed.disabled_reason.startswith(error)
        feed.set(h100x8(30.0))
        await w.run_once()
        feed.set(h100x8(15.0))
        await w.run_once()
        assert len(slack.attempts()) == 1  # never tried again
        assert await w.queue.pending_count() == 0

    async def test_channel_error_leaves_other_channels_working(
        self, redis: aioredis.Redis, slack: FakeSlack
    ) -> None:
        """channel_not_found in one channel does not stop alerts to another."""
        feed = ChangingFeed(h100x8(19.0))
        await watch(redis, channel="CGONE")
        await watch(redis, channel="C1")
        slack.channel_errors["CGONE"] = "channel_not_found"
        await worker(redis, feed, slack, sleep=Sleeps()).run_once()
        assert len(slack.posts("C1")) == 1
        assert [w.enabled for w in await WatchStore(redis).list_channel(TEAM, "C1")] == [True]


class TestTokenErrors:
    """Issue #18 item 3: one ``invalid_auth`` disabled every watch of the workspace for good,
    and the same pass went on posting 47 more alerts with the same token."""

    async def test_a_confirmed_token_error_pauses_posting_and_disables_nothing(
        self, redis: aioredis.Redis, slack: FakeSlack
    ) -> None:
        feed = ChangingFeed(h100x8(25.0))
        ids = [await watch(redis, channel=f"C{i}", feed=feed) for i in range(5)]
        w = worker(redis, feed, slack, sleep=Sleeps())
        await w.run_once()
        feed.set(h100x8(19.0))
        slack.token_error = "invalid_auth"
        report = await w.run_once()
        assert len(slack.attempts()) == 1  # the first post; the other 4 were not tried
        assert len(slack.auth_tests()) == 1  # confirmed before anything else happened
        assert {o.status for o in report.outcomes} == {"paused"}
        assert w.delivery.paused == {TEAM: "invalid_auth: " + TOKEN_ERRORS["invalid_auth"]}
        assert all(x.enabled for x in await w.watches.all_watches())
        assert await w.queue.pending_count() == len(ids)
        # Still broken: one auth.test per pass, no posts.
        await w.run_once()
        assert len(slack.attempts()) == 1
        assert len(slack.auth_tests()) == 2
        # The token works again (reinstalled): every alert arrives, once.
        slack.token_error = None
        report = await w.run_once()
        assert w.delivery.paused == {}
        assert report.sent == len(ids)
        assert sorted(c.body["channel"] for c in slack.posts()) == [f"C{i}" for i in range(5)]
        assert await w.queue.pending_count() == 0

    async def test_a_paused_workspace_is_reported_on_readyz(
        self, redis: aioredis.Redis, slack: FakeSlack
    ) -> None:
        feed = ChangingFeed(h100x8(19.0))
        await watch(redis)
        w = worker(redis, feed, slack, sleep=Sleeps())
        server = start_metrics_server("127.0.0.1", 0, Metrics(), ready=w.readiness)
        try:
            async with httpx.AsyncClient() as http:
                url = f"http://127.0.0.1:{server.port}/readyz"
                slack.token_error = "token_revoked"
                await w.run_once()
                broken = await http.get(url)
                assert broken.status_code == 503
                assert broken.json()["checks"] == {"slack_token": False}
                assert broken.json()["paused"][TEAM].startswith("token_revoked")
                slack.token_error = None
                await w.run_once()
                assert (await http.get(url)).status_code == 200
                assert len(slack.posts()) == 1
        finally:
            server.close()

    async def test_an_unconfirmed_token_error_disables_nothing_and_retries(
        self, redis: aioredis.Redis, slack: FakeSlack
    ) -> None:
        """Slack answered one post with invalid_auth but auth.test passes: a glitch."""
        feed = ChangingFeed(h100x8(19.0))
        await watch(redis)
        clock = Clock()
        w = worker(redis, feed, slack, clock=clock, sleep=Sleeps())
        slack.fail("invalid_auth")
        report = await w.run_once()
        assert [o.status for o in report.outcomes] == ["retry"]
        assert w.delivery.paused == {}
        assert all(x.enabled for x in await w.watches.all_watches())
        clock.advance(3600)
        await w.run_once()
        assert len(slack.posts()) == 1

    async def test_retry_after_is_capped(
        self, redis: aioredis.Redis, slack: FakeSlack, caplog: pytest.LogCaptureFixture
    ) -> None:
        """A Retry-After of a day holds the alert back at most a minute, and is logged."""
        feed = ChangingFeed(h100x8(19.0))
        await watch(redis)
        clock = Clock()
        w = worker(redis, feed, slack, clock=clock, sleep=Sleeps())
        slack.rate_limit(1, retry_after_s=86_400)
        with caplog.at_level(logging.WARNING, logger="bot.alerts.delivery"):
            report = await w.run_once()
        assert [o.status for o in report.outcomes] == ["retry"]
        record = report.outcomes[0].record
        assert record is not None
        assert record.attempts == 0  # a wait Slack asks for spends no attempt
        assert "capped" in caplog.text
        [(_key, due)] = await redis.zrange("gpufit:alerts:due", 0, -1, withscores=True)
        assert clock() < due <= clock() + MAX_RETRY_AFTER_S
        # The channel is held (for every replica) a minute, not a day.
        held_ms = await redis.pttl(f"gpufit:pace:{TEAM}:C1")
        assert 0 < held_ms <= (MAX_RETRY_AFTER_S + 60) * 1000


class TestEnable:
    async def test_a_watch_disabled_for_its_channel_can_be_enabled_again(
        self, redis: aioredis.Redis, slack: FakeSlack
    ) -> None:
        feed = ChangingFeed(h100x8(19.0))
        wid = await watch(redis, channel="CGONE")
        slack.channel_errors["CGONE"] = "not_in_channel"
        w = worker(redis, feed, slack, sleep=Sleeps())
        await w.run_once()
        assert not (await w.watches.get(wid)).enabled  # type: ignore[union-attr]
        del slack.channel_errors["CGONE"]  # the bot was invited
        with pytest.raises(WatchNotFoundError):
            await w.watches.enable(TEAM, "COTHER", wid)  # only from its own channel
        enabled = await w.watches.enable(TEAM, "CGONE", wid.lower())
        assert enabled.enabled
        feed.set(h100x8(30.0))
        await w.run_once()
        feed.set(h100x8(15.0))
        await w.run_once()
        assert len(slack.posts("CGONE")) == 1
