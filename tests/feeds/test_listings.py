"""The listing log over several refreshes: real Redis, the real Lambda rows served on loopback.

A shape dropped from one refresh's catalog and back in the next is counted missing once; a
refresh answered 304 lists what the one before listed; the catalog a store loads carries the
log, and the answer's availability caveat is computed from it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import httpx
import pytest

from recommender.feeds.cache import RedisSnapshots
from recommender.feeds.fetch import FetchTimeouts, RetryPolicy, make_client
from recommender.feeds.listings import LISTING_MAX_AGE, ListingLog
from recommender.feeds.store import FeedSource, PriceStore, RefreshOutcome
from recommender.pricing.availability import (
    availability,
    availability_caveat,
    legacy_listing_key,
    listing_key,
)
from recommender.ranking.caveats import CaveatKind, Severity
from tests.factories import Clock, offer
from tests.feeds.conftest import FeedServer, Route, catalog_bytes

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
FAST = FetchTimeouts(connect_s=2.0, read_s=1.0, write_s=2.0, pool_s=2.0, total_s=5.0)
PATH = "/catalogs/v8/lambda/vms.csv"
#: The row dropped from one refresh (a real row of the fixture).
DROPPED = b"gpu_8x_h100_sxm5,H100,8.0,208.0,1800.0,31.92,us-east-1,"
DROPPED_SHAPE = "lambda/gpu_8x_h100_sxm5/8xH100-SXM-80GB/us-east-1/od"


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with make_client(FAST) as client:
        yield client


def _without_dropped(body: bytes) -> bytes:
    lines = body.splitlines(keepends=True)
    kept = [line for line in lines if not line.startswith(DROPPED)]
    assert len(kept) == len(lines) - 1  # the fixture has the row
    return b"".join(kept)


async def _refresh(
    store: PriceStore, server: FeedServer, body: bytes, etag: str, http: httpx.AsyncClient
) -> RefreshOutcome:
    # Each version of the file has its own ETag and time (v1 06:00, v2 07:00, ...).
    stamp = f"Mon, 30 Nov 2026 0{5 + int(etag.strip(chr(34))[1:])}:00:00 GMT"
    server.serve(PATH, Route(body, etag=etag, last_modified=stamp))
    source = FeedSource.parse(f"lambda={server.url(PATH)}")
    report = await store.refresh([source], client=http, policy=RetryPolicy.no_wait(2))
    [result] = report.sources
    return result.outcome


async def test_a_shape_missing_from_one_refresh_of_four_is_counted_once(
    redis_url: str, feed_server: FeedServer, http: httpx.AsyncClient
) -> None:
    clock = Clock(T0)
    prefix = f"test:listings:{id(clock)}"
    store = PriceStore(RedisSnapshots.from_url(redis_url, prefix=prefix), clock=clock)
    full = catalog_bytes("lambda")
    try:
        outcomes = []
        for hours, body, etag in [
            (0, full, '"v1"'),
            (1, full, '"v1"'),  # 304: unchanged
            (2, _without_dropped(full), '"v2"'),
            (3, full, '"v3"'),
        ]:
            clock.now = T0 + timedelta(hours=hours)
            outcomes.append(await _refresh(store, feed_server, body, etag, http))
        catalog = await store.load_catalog()
    finally:
        await store.aclose()
    assert outcomes == [
        RefreshOutcome.UPDATED,
        RefreshOutcome.UNCHANGED,
        RefreshOutcome.UPDATED,
        RefreshOutcome.UPDATED,
    ]
    [info] = catalog.sources
    assert [(x.changed, x.first) for x in info.listings] == [
        (True, True),
        (False, False),
        (True, False),
        (True, False),
    ]
    assert info.listings[2].gone == {DROPPED_SHAPE}
    assert info.listings[3].added == {DROPPED_SHAPE}
    now = T0 + timedelta(hours=4)
    dropped = availability(DROPPED_SHAPE, info.listings, listed_now=True, now=now)
    assert (dropped.refreshes, dropped.listed) == (4, 3)
    assert dropped.last_listed == T0 + timedelta(hours=3)
    other = next(o for o in catalog.offers if listing_key(o) != DROPPED_SHAPE)
    kept = availability(listing_key(other), info.listings, listed_now=True, now=now)
    assert (kept.refreshes, kept.listed) == (4, 4)
    # What the answer says of each, from the loaded catalog alone.
    offer = next(o for o in catalog.offers if listing_key(o) == DROPPED_SHAPE)
    caveat = availability_caveat(offer, info.listings, now)
    assert caveat is not None
    assert caveat.kind is CaveatKind.AVAILABILITY
    assert caveat.severity is Severity.WARN  # 1 of 4 is the "often missing" line
    assert "absent from 1 of 4 price refreshes" in caveat.text
    steady = availability_caveat(other, info.listings, now)
    assert steady is not None
    assert steady.severity is Severity.INFO
    assert "every price refresh" in steady.text
    assert "(4 of 4)" in steady.text


async def test_old_refreshes_are_trimmed_and_an_unknown_catalog_logs_nothing(
    redis_url: str,
) -> None:
    """Entries older than LISTING_MAX_AGE go at the next write; an unchanged refresh of a
    source with no recorded catalog (written by an older version) is not logged."""
    import redis.asyncio as aioredis

    a, b, c = (offer(region=r) for r in ("a", "b", "c"))
    client = aioredis.Redis.from_url(redis_url, decode_responses=True)
    log = ListingLog(client, prefix=f"test:listings:trim:{id(client)}")
    try:
        await log.record_unchanged("aws", at=T0)
        assert await log.load(["aws"]) == {}
        await log.record_update("aws", [a, b], at=T0)
        await log.record_update("aws", [b], at=T0 + timedelta(days=1))
        later = T0 + LISTING_MAX_AGE + timedelta(days=1, seconds=1)
        await log.record_update("aws", [b, c], at=later)
        [(name, entries)] = (await log.load(["aws"])).items()
    finally:
        await client.aclose()
    assert name == "aws"
    assert [e.at for e in entries] == [later]  # both older entries trimmed
    assert (entries[0].added, entries[0].gone) == ({listing_key(c)}, set())


async def test_a_shape_set_an_earlier_version_wrote_is_read_in_the_new_terms(
    redis_url: str,
) -> None:
    """A store whose shape set and log an earlier version wrote (shapes without GPUs): the
    first refresh of this version logs only what changed, each old shape read as every shape
    of the new catalog it names, so no shape looks absent before the upgrade; the old set is
    left in place for older replicas."""
    import redis.asyncio as aioredis

    aws = offer()
    t4 = offer(provider="gcp", instance_type="n1-highmem-8", gpu_id="T4", gpu_count=1)
    p4 = replace(t4, gpu_id="P4")
    gone = offer(region="eu-north-1")
    client = aioredis.Redis.from_url(redis_url, decode_responses=True)
    prefix = f"test:listings:carry:{id(client)}"
    log = ListingLog(client, prefix=prefix)
    old_names = sorted(legacy_listing_key(o) for o in (aws, t4, gone))
    try:
        # What an earlier version left: its set, a first entry and an unchanged refresh.
        await client.sadd(f"{prefix}:shapes:gcp", *old_names)
        for hours, entry in (
            (0, '{"at":%s,"changed":true,"first":true}'),
            (1, '{"at":%s,"changed":false}'),
        ):
            at = (T0 + timedelta(hours=hours)).timestamp()
            await client.zadd(f"{prefix}:listings:gcp", {entry % at: at})
        await log.record_update("gcp", [aws, t4, p4], at=T0 + timedelta(hours=2))
        await log.record_update("gcp", [aws, p4], at=T0 + timedelta(hours=3))
        [entries] = (await log.load(["gcp"])).values()
        legacy_set = await client.smembers(f"{prefix}:shapes:gcp")
    finally:
        await client.aclose()
    upgrade, after = entries[2], entries[3]
    assert upgrade.added == set()  # aws, T4 and P4 were listed under their old names
    assert upgrade.gone == {legacy_listing_key(gone)}  # kept by its old name
    assert (after.added, after.gone) == (set(), {listing_key(t4)})
    assert sorted(legacy_set) == old_names
    now = T0 + timedelta(hours=4)
    for o, missing in ((aws, 0), (p4, 0)):
        record = availability(
            listing_key(o), entries, listed_now=True, now=now, legacy=legacy_listing_key(o)
        )
        assert (record.refreshes, record.missing) == (4, missing), o
