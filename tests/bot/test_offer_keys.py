"""Offers on one GCP N1 host type, from real catalog rows: one key each, so their own price
history, caveats, listings, watches and checkpoint buckets; and what an earlier version
stored under keys without the GPUs keeps working.

GCP attaches T4, V100, P100 and P4 GPUs to N1 hosts (SkyPilot's ``gcp/vms.csv`` prices a GPU
VM as a host row plus an accelerator row), so one instance type, region, zone and kind carries
several offers: in the real rows of ``tests/feeds/data/skypilot_gcp_gpu_rows.csv``, 90 keys of
the earlier format (``provider/instance/region/zone/kind``) each named two to four offers.
A real Redis and the fake Slack Web API on loopback (``tests.bot.alerts_helpers``).
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import timedelta

import pytest
import redis.asyncio as aioredis
from slack_bolt.context.async_context import AsyncBoltContext
from slack_bolt.context.respond.async_respond import AsyncRespond

from bot.alerts import WatchStore
from bot.listeners.watches import BUTTON_DROP_FRAC, handle_watch_button
from bot.services import Services, static_catalog
from bot.worker import Worker
from recommender import Catalog, Offer, launch_spec, offers_for_key, parse_workload, recommend
from recommender.feeds.base import ParsedFeed
from recommender.feeds.cache import RedisSnapshots
from recommender.feeds.skypilot import parse_skypilot
from recommender.pricing.availability import legacy_listing_key, listing_key
from recommender.ranking.caveats import CaveatKind
from tests.bot.alerts_helpers import ChangingFeed, FakeSlack, redis, redis_server, slack
from tests.factories import NOW, catalog
from tests.feeds.conftest import fixture_bytes

__all__ = ["redis", "redis_server", "slack"]  # fixtures used by name below

#: The host, place and kind of the pair these tests follow: spot n1-highmem-8 in asia-east1-a
#: carries a P100 (1x, 0.6 USD/h: two outlier caveats) and two T4s (no caveat).
SHARED = "gcp/n1-highmem-8/asia-east1/asia-east1-a/spot"
#: The clicker's ids, as Bolt's context carries them.
CONTEXT = AsyncBoltContext(team_id="T1", channel_id="C1", user_id="U1")


def real_rows() -> ParsedFeed:
    body = fixture_bytes("skypilot_gcp_gpu_rows.csv").split(b"\n", 1)[1]  # the source comment
    return parse_skypilot(body, source="catalogs/v8/gcp/vms.csv")


@pytest.fixture(scope="module")
def feed() -> ParsedFeed:
    return real_rows()


def pair(feed: ParsedFeed) -> tuple[Offer, Offer]:
    """The P100 and the T4 offer that shared :data:`SHARED`."""
    found = sorted(offers_for_key(SHARED, feed.offers), key=lambda o: o.gpu_id)
    assert [(o.gpu_id, o.gpu_count) for o in found] == [("P100-16GB", 1), ("T4", 2)]
    return found[0], found[1]


def services(redis: aioredis.Redis, slack: FakeSlack, prices: Catalog) -> Services:
    return Services(
        redis=redis, catalog=static_catalog(prices), now=lambda: NOW, client=slack.client()
    )


async def click_watch(redis: aioredis.Redis, slack: FakeSlack, prices: Catalog, key: str) -> str:
    """Click "Watch price" with ``key`` in its value; the reply's text."""
    before = len(slack.hooks())
    await handle_watch_button(
        query="6B LoRA 10 hours",
        offer_key=key,
        context=CONTEXT,
        respond=AsyncRespond(response_url=slack.hook_url("button")),
        services=services(redis, slack, prices),
    )
    [reply] = slack.hooks()[before:]
    return str(reply.body["text"])


class TestOneKeyPerOffer:
    def test_every_offer_has_its_own_key_and_shape(self, feed: ParsedFeed) -> None:
        offers = feed.offers
        assert len({o.key for o in offers}) == len(offers) == 1159
        assert len({o.legacy_key for o in offers}) == len(offers) - 116  # 90 named 206
        p100, t4 = pair(feed)
        assert p100.key == "gcp/n1-highmem-8/1xP100-16GB/asia-east1/asia-east1-a/spot"
        assert t4.key == "gcp/n1-highmem-8/2xT4/asia-east1/asia-east1-a/spot"
        assert t4.instance_type == p100.instance_type == "n1-highmem-8"  # what SkyPilot gets
        assert listing_key(t4) != listing_key(p100)
        assert legacy_listing_key(t4) == legacy_listing_key(p100)

    def test_each_keeps_its_own_caveats(self, feed: ParsedFeed) -> None:
        """The P100's spot price is an outlier for its shape; the T4 on the same host is not.
        Under one key the T4 was filed with the P100's caveats."""
        p100, t4 = pair(feed)
        screened = Catalog.of(feed.offers).screened
        assert {c.kind for c in screened.caveats[p100.key]} == {CaveatKind.OUTLIER}
        assert t4.key not in screened.caveats

    def test_each_launches_its_host_with_its_own_checkpoint_bucket(self, feed: ParsedFeed) -> None:
        """Both run on n1-highmem-8 (the instance type SkyPilot launches), each resuming from
        its own bucket: with one key, a 2x T4 run and a 1x P100 run of one model shared one."""
        p100, t4 = pair(feed)
        work = parse_workload("GPT-2 small LoRA 10 hours", now=NOW)
        rec = recommend(work, catalog(p100, t4), now=NOW, top=5)
        specs = {o.offer.gpu_id: launch_spec(work, o) for o in rec.options}
        assert {s.instance_type for s in specs.values()} == {"n1-highmem-8"}
        assert specs["T4"].checkpoint_bucket != specs["P100-16GB"].checkpoint_bucket

    async def test_each_keeps_its_own_history(self, redis_server: str, feed: ParsedFeed) -> None:
        """Two refreshes, the T4's price moving between them: each key holds its own GPU's
        prices only (under one key, both GPUs' prices were interleaved)."""
        p100, t4 = pair(feed)
        store = RedisSnapshots.from_url(redis_server, prefix="test:offerkeys")
        try:
            await store.client.flushdb()
            await store.record_history(feed.offers, at=NOW)
            moved = [replace(o, price_usd_per_hour=0.5) if o == t4 else o for o in feed.offers]
            await store.record_history(moved, at=NOW + timedelta(minutes=10))
            t4_prices = [p.price_usd_per_hour for p in await store.history(t4.key)]
            p100_prices = [p.price_usd_per_hour for p in await store.history(p100.key)]
            hist_keys = [k async for k in store.client.scan_iter("test:offerkeys:hist:*")]
        finally:
            await store.aclose()
        assert t4_prices == [round(t4.price_usd_per_hour, 6), 0.5]
        assert p100_prices == [round(p100.price_usd_per_hour, 6)]
        assert len(hist_keys) == len(feed.offers)

    async def test_each_watch_button_watches_its_own_gpu(
        self, redis: aioredis.Redis, slack: FakeSlack, feed: ParsedFeed
    ) -> None:
        """The P100's button watches P100s and the T4's T4s (with one key, both buttons found
        the same offer); when both drop, each watch claims its own alert, keyed by its GPU."""
        p100, t4 = pair(feed)
        prices = catalog(*feed.offers)
        for o in (p100, t4):
            await click_watch(redis, slack, prices, o.key)
        watches = await WatchStore(redis).list_channel("T1", "C1")
        shapes = [(w.spec.query.gpu_id, w.spec.query.gpu_count) for w in watches if w.spec.query]
        assert shapes == [("P100-16GB", 1), ("T4", 2)]
        assert [w.threshold.usd for w in watches] == [
            pytest.approx(round(o.price_usd_per_hour * (1 - BUTTON_DROP_FRAC), 2), abs=0.01)
            for o in (p100, t4)
        ]
        cheaper = ChangingFeed(
            *(replace(o, price_usd_per_hour=o.price_usd_per_hour / 2) for o in feed.offers)
        )
        report = await Worker(
            redis=redis, catalog_source=cheaper, client_for=lambda t: slack.client()
        ).run_once()
        assert len(report.claimed) == 2
        assert "/1xP100-16GB/asia-east1/" in report.claimed[0]
        assert "/2xT4/asia-east1/" in report.claimed[1]
        assert report.sent == 2


class TestStoredByAnEarlierVersion:
    """Keys without the GPUs, as earlier versions wrote them into Redis and Slack buttons."""

    async def test_an_old_watch_button_finds_the_one_offer_its_key_named(
        self, redis: aioredis.Redis, slack: FakeSlack, feed: ParsedFeed
    ) -> None:
        a100 = next(o for o in feed.offers if o.instance_type == "a2-highgpu-1g" and o.spot)
        assert offers_for_key(a100.legacy_key, feed.offers) == (a100,)
        await click_watch(redis, slack, catalog(*feed.offers), a100.legacy_key)
        [watch] = await WatchStore(redis).list_channel("T1", "C1")
        assert watch.spec.query is not None
        assert (watch.spec.query.gpu_id, watch.spec.query.regions) == (
            a100.gpu_id,
            (a100.region,),
        )

    async def test_an_old_watch_button_on_a_shared_host_says_it_cannot_tell(
        self, redis: aioredis.Redis, slack: FakeSlack, feed: ParsedFeed
    ) -> None:
        """The old key named the P100 and the T4 alike: no guess, a notice, nothing stored."""
        text = await click_watch(redis, slack, catalog(*feed.offers), SHARED)
        assert "several GPU models" in text
        assert await WatchStore(redis).all_watches() == []

    async def test_a_watch_and_a_pending_alert_keep_working(
        self, redis: aioredis.Redis, slack: FakeSlack, feed: ParsedFeed
    ) -> None:
        """An earlier version stored a watch on 2x T4 spot in asia-east1, its state (alerted
        at 0.28 USD/h), and that alert claimed but not yet posted, keyed by the offer without
        its GPUs. This version posts that alert under its old key, and the watch's next
        crossing claims a key that names the GPUs."""
        _, t4 = pair(feed)
        watch = {
            "id": "W1", "team_id": "T1", "channel_id": "C1", "created_by": "U1",
            "created_at": NOW.isoformat(), "text": "2xT4 spot in asia-east1 below $0.30/h",
            "disabled_reason": None, "threshold_usd": 0.3, "basis": "instance_hour",
            "workload_text": None, "daily_digest": False, "assumed": [],
            "query": {"gpu_id": "T4", "gpu_count": 2, "providers": ["gcp"],
                      "regions": ["asia-east1"], "spot": True, "place": "in asia-east1"},
        }  # fmt: skip
        state = {"armed": False, "alerts": 1, "last_price_usd": 0.28, "alerted_price_usd": 0.28}
        old_alert = f"gpufit:alert:W1:1:{t4.legacy_key}*1"
        record = {
            "key": old_alert, "watch_ids": ["W1"], "team_id": "T1", "channel_id": "C1",
            "kind": "crossed", "text": "2x T4 spot is at $0.28/h", "blocks": [],
            "status": "pending", "attempts": 0, "error": None, "ts": None,
            "extra": {"old_usd": 0.45, "new_usd": 0.28, "offer": f"{t4.legacy_key}*1"},
        }  # fmt: skip
        await redis.set("gpufit:watch:W1", json.dumps(watch))
        await redis.set("gpufit:watchstate:W1", json.dumps(state))
        for key in ("gpufit:watches:all", "gpufit:watches:team:T1", "gpufit:watches:user:T1:U1"):
            await redis.sadd(key, "W1")
        await redis.zadd("gpufit:watches:T1:C1", {"W1": 1})
        await redis.set(old_alert, json.dumps(record))
        await redis.zadd("gpufit:alerts:due", {old_alert: 0})

        # The real prices (0.37 USD/h in both zones) re-arm it; then zone a drops.
        source = ChangingFeed(*feed.offers)
        worker = Worker(redis=redis, catalog_source=source, client_for=lambda t: slack.client())
        first = await worker.run_once()
        assert (first.verdicts, first.claimed) == ({"rearmed": 1}, ())
        [posted] = slack.posts("C1")
        assert posted.body["text"] == "2x T4 spot is at $0.28/h"
        assert posted.body["metadata"]["event_payload"] == {"key": old_alert}
        assert json.loads(await redis.get(old_alert))["status"] == "sent"
        source.set(*(replace(o, price_usd_per_hour=0.25) if o == t4 else o for o in feed.offers))
        again = await worker.run_once()
        assert again.claimed == (f"gpufit:alert:W1:2:{t4.key}*1",)
        assert again.sent == 1
        assert "0.25" in slack.posts("C1")[-1].body["text"]
