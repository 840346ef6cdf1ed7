"""PriceStore end to end: real Redis, real loopback feeds, honest staleness and degradation."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import redis.asyncio as aioredis

from recommender.errors import CatalogError, StoreError
from recommender.feeds.bundled import BUNDLED_SOURCE
from recommender.feeds.cache import RedisSnapshots
from recommender.feeds.fetch import FetchTimeouts, RetryPolicy, make_client
from recommender.feeds.store import (
    FeedSource,
    PriceStore,
    RefreshOutcome,
    SourceRefresh,
    parse_sources,
)
from tests.factories import Clock
from tests.feeds.conftest import FeedServer, Route, fixture_bytes
from tests.redis_server import start_redis_server

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
LAST_MODIFIED = "Mon, 30 Nov 2026 06:00:00 GMT"
FAST = FetchTimeouts(connect_s=2.0, read_s=0.3, write_s=2.0, pool_s=2.0, total_s=5.0)


class Ticks:
    """A settable monotonic clock (the store's version recheck window)."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def _commands(before: dict[str, Any], after: dict[str, Any]) -> dict[str, int]:
    """Redis commands run between two ``INFO commandstats`` (``INFO`` itself left out)."""
    calls = {
        name: after[name]["calls"] - before.get(name, {"calls": 0})["calls"]
        for name in after
        if name.startswith("cmdstat_") and name != "cmdstat_info"
    }
    return {k: v for k, v in calls.items() if v}


@pytest.fixture
def clock() -> Clock:
    return Clock(T0)


@pytest.fixture
async def store(redis_url: str, clock: Clock) -> AsyncIterator[PriceStore]:
    price_store = PriceStore(RedisSnapshots.from_url(redis_url, prefix="test:feed"), clock=clock)
    yield price_store
    await price_store.aclose()


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with make_client(FAST) as client:
        yield client


def serve_all(server: FeedServer) -> list[FeedSource]:
    """One source of each format, served over HTTP."""
    native = server.serve("/feed.json", Route(fixture_bytes("feed.json"), etag='"n1"'))
    hunt = server.serve("/v3/aws.csv", Route(fixture_bytes("aws.csv"), last_modified=LAST_MODIFIED))
    hosts = server.serve("/gcp/hosts.csv", Route(fixture_bytes("skypilot_gcp_hosts.csv")))
    gpus = server.serve("/gcp/gpus.csv", Route(fixture_bytes("skypilot_gcp_accelerators.csv")))
    return [
        FeedSource.parse(f"publisher={native}"),
        FeedSource.parse(hunt),
        FeedSource.parse(f"gcp={hosts};{gpus}"),
    ]


async def refresh(
    store: PriceStore, sources: list[FeedSource], http: httpx.AsyncClient
) -> dict[str, SourceRefresh]:
    report = await store.refresh(sources, client=http, policy=RetryPolicy.no_wait(2))
    assert not report.locked_out
    return {s.name: s for s in report.sources}


class TestFeedSource:
    @pytest.mark.parametrize(
        ("spec", "name", "locations", "provider"),
        [
            ("https://x.example/feed.json", "https://x.example/feed.json",
             ("https://x.example/feed.json",), None),
            ("aws=https://x.example/vms.csv?a=1", "aws", ("https://x.example/vms.csv?a=1",), "aws"),
            ("gcp=hosts.csv;gpus.csv", "gcp", ("hosts.csv", "gpus.csv"), "gcp"),
            ("team-prices=./p.json", "team-prices", ("./p.json",), None),
            ("https://x.example/q?name=v", "https://x.example/q?name=v",
             ("https://x.example/q?name=v",), None),
        ],
    )  # fmt: skip
    def test_specs(
        self, spec: str, name: str, locations: tuple[str, ...], provider: str | None
    ) -> None:
        """``[name=]location[;location]``: a provider-id name also tells the CSV adapters."""
        assert FeedSource.parse(spec) == FeedSource(name, locations, provider)

    def test_a_setting_lists_several_sources(self) -> None:
        """GPUFIT_FEEDS separates sources with spaces or commas."""
        sources = parse_sources(" aws=a.csv, gcp=h.csv;g.csv  feed.json ")
        assert [s.name for s in sources] == ["aws", "gcp", "feed.json"]

    def test_an_empty_spec_is_explained(self) -> None:
        """A name without a location is a clear error."""
        with pytest.raises(CatalogError, match="names no file"):
            FeedSource.parse("aws=")


class TestLoading:
    async def test_an_empty_redis_is_seeded_from_the_bundled_snapshot(
        self, store: PriceStore
    ) -> None:
        """A fresh install answers from the bundled snapshot, and says so."""
        catalog = await store.load_catalog()
        assert len(catalog) > 10
        [info] = catalog.sources
        assert (info.name, info.bundled, info.fetched_at) == (BUNDLED_SOURCE, True, None)
        assert await store.snapshots.source_names() == [BUNDLED_SOURCE]

    async def test_a_request_costs_one_redis_read_once_loaded(
        self, store: PriceStore, redis_url: str
    ) -> None:
        """With the version unchanged, loading is one MGET (epoch and counter) and no decode."""
        first = await store.load()
        client = aioredis.Redis.from_url(redis_url, decode_responses=True)
        try:
            before = await client.info("commandstats")
            again = await store.load()
            after = await client.info("commandstats")
        finally:
            await client.aclose()
        calls = {
            name: after[name]["calls"] - before.get(name, {"calls": 0})["calls"]
            for name in after
            if name.startswith("cmdstat_") and name != "cmdstat_info"
        }
        assert {k: v for k, v in calls.items() if v} == {"cmdstat_mget": 1}
        assert again.catalog is first.catalog

    async def test_another_replicas_refresh_is_seen_on_the_next_request(
        self, store: PriceStore, redis_url: str, feed_server: FeedServer, http: httpx.AsyncClient
    ) -> None:
        """The version moves when any replica stores a snapshot; readers reload then."""
        await store.load()
        other = PriceStore(RedisSnapshots.from_url(redis_url, prefix="test:feed"))
        try:
            await refresh(other, serve_all(feed_server)[:1], http)
        finally:
            await other.aclose()
        catalog = await store.load_catalog()
        assert [s.name for s in catalog.sources] == ["publisher"]

    async def test_a_store_that_lost_its_data_is_reloaded(
        self, store: PriceStore, redis_url: str, feed_server: FeedServer, http: httpx.AsyncClient
    ) -> None:
        """After Redis loses its data, its counter restarts and can reach the very value this
        store holds; the new epoch tells them apart, so the new catalog is served."""
        sources = serve_all(feed_server)
        other = PriceStore(
            RedisSnapshots.from_url(redis_url, prefix="test:feed"), seed_bundled=False
        )
        client = aioredis.Redis.from_url(redis_url, decode_responses=True)
        try:
            await store.load()  # seeds the bundled snapshot: counter 1
            await refresh(other, sources[:1], http)  # counter 2
            held = await store.load_catalog()
            assert [s.name for s in held.sources] == ["publisher"]
            await client.flushall()
            # A different source written after the loss, then one more change: counter 2 again.
            await refresh(other, sources[1:2], http)
            await other.snapshots.record_error(sources[1].name, "HTTP 500", at=T0)
            assert (await other.snapshots.version()).counter == 2
            catalog = await store.load_catalog()
        finally:
            await other.aclose()
            await client.aclose()
        assert [s.name for s in catalog.sources] == [sources[1].name]

    async def test_within_the_recheck_window_a_request_reads_nothing(
        self, redis_url: str, feed_server: FeedServer, http: httpx.AsyncClient
    ) -> None:
        """With ``recheck_s``, a load within the window of the last version read costs no
        Redis command; another replica's refresh is seen once the window has passed, and
        this store's own refresh at once."""
        ticks = Ticks()
        store = PriceStore(
            RedisSnapshots.from_url(redis_url, prefix="test:feed"), recheck_s=1.0, monotonic=ticks
        )
        other = PriceStore(RedisSnapshots.from_url(redis_url, prefix="test:feed"))
        client = aioredis.Redis.from_url(redis_url, decode_responses=True)
        sources = serve_all(feed_server)
        try:
            assert store.catalog_now() is None  # nothing read yet
            first = await store.load()
            assert store.catalog_now() is first.catalog
            ticks.now += 0.9
            before = await client.info("commandstats")
            again = await store.load()
            after = await client.info("commandstats")
            assert _commands(before, after) == {}
            assert again.catalog is first.catalog

            await refresh(other, sources[:1], http)
            assert (await store.load()).catalog is first.catalog  # 0.9 s since the read
            ticks.now += 0.2
            assert store.catalog_now() is None  # the window has passed: a read is due
            seen = await store.load_catalog()
            assert [s.name for s in seen.sources] == ["publisher"]

            await refresh(store, sources[1:2], http)  # no time passes
            assert store.catalog_now() is None  # its own refresh: read again at once
            mine = await store.load_catalog()
            assert sorted(s.name for s in mine.sources) == sorted(s.name for s in sources[:2])
        finally:
            await client.aclose()
            await other.aclose()
            await store.aclose()

    async def test_questions_arriving_together_after_a_refresh_decode_it_once(
        self, store: PriceStore, redis_url: str, feed_server: FeedServer, http: httpx.AsyncClient
    ) -> None:
        """32 loads at once after the version moved: one snapshot read, one catalog for all."""
        # As many connections as loads, open already (a busy bot's pool): the 32 version
        # reads then return together, and each load finds the version moved.
        await asyncio.gather(*(store.load() for _ in range(32)))
        other = PriceStore(RedisSnapshots.from_url(redis_url, prefix="test:feed"))
        try:
            await refresh(other, serve_all(feed_server), http)
        finally:
            await other.aclose()
        client = aioredis.Redis.from_url(redis_url, decode_responses=True)
        try:
            before = await client.info("commandstats")
            results = await asyncio.gather(*(store.load() for _ in range(32)))
            after = await client.info("commandstats")
        finally:
            await client.aclose()

        def calls(name: str) -> int:
            key = f"cmdstat_{name}"
            return int(
                after.get(key, {"calls": 0})["calls"] - before.get(key, {"calls": 0})["calls"]
            )

        assert calls("smembers") == 1  # one load_all (it lists the sources once)
        assert calls("hgetall") == len(await store.snapshots.source_names())  # one meta each
        assert len({id(r.catalog) for r in results}) == 1
        assert {s.name for s in results[0].catalog.sources} >= {"publisher"}

    async def test_a_reload_that_fails_degrades_every_waiting_question_at_once(
        self, store: PriceStore, redis_url: str
    ) -> None:
        """When the reload fails, the questions that waited for it degrade with it: one
        attempt, not one after another (each could wait out a timeout on a hung Redis)."""
        await asyncio.gather(*(store.load() for _ in range(32)))  # a warm pool, a catalog
        client = aioredis.Redis.from_url(redis_url, decode_responses=True)
        try:
            # Another writer moves the version and leaves the source set unreadable.
            await client.delete("test:feed:sources")
            await client.set("test:feed:sources", "not a set")
            await client.incr("test:feed:version")
            before = await client.info("commandstats")
            results = await asyncio.gather(*(store.load() for _ in range(32)))
            after = await client.info("commandstats")
        finally:
            await client.aclose()
        attempts = after["cmdstat_smembers"]["calls"] - before["cmdstat_smembers"]["calls"]
        assert attempts == 1
        assert all(r.degraded and "unreachable" in r.reason for r in results)
        assert len({id(r.catalog) for r in results}) == 1  # the copy read before


class TestRefresh:
    async def test_every_format_loads_with_its_provenance(
        self, store: PriceStore, feed_server: FeedServer, http: httpx.AsyncClient
    ) -> None:
        """Native, gpuhunt and a two-file SkyPilot GCP source all load; the bundled copy retires."""
        results = await refresh(store, serve_all(feed_server), http)
        assert {n: r.outcome for n, r in results.items()} == {
            "publisher": RefreshOutcome.UPDATED,
            feed_server.url("/v3/aws.csv"): RefreshOutcome.UPDATED,
            "gcp": RefreshOutcome.UPDATED,
        }
        catalog = await store.load_catalog()
        infos = {s.name: s for s in catalog.sources}
        assert BUNDLED_SOURCE not in infos
        hunt = infos[feed_server.url("/v3/aws.csv")]
        assert (hunt.rows, hunt.rejected, hunt.fetched_at) == (5, 1, T0)
        assert hunt.as_of == datetime(2026, 11, 30, 6, 0, tzinfo=UTC)  # from Last-Modified
        assert infos["publisher"].as_of == datetime(2026, 11, 30, 6, 0, tzinfo=UTC)
        assert infos["gcp"].as_of == T0  # no Last-Modified: the fetch time bounds it
        assert {o.source for o in catalog.offers} == set(infos)
        assert {o.provider for o in catalog.offers} == {"coreweave", "aws", "gcp"}
        publisher = [o for o in catalog.offers if o.source == "publisher"]
        assert {o.citation for o in publisher} == {"example publisher"}

    async def test_progress_is_reported_per_source(
        self, store: PriceStore, feed_server: FeedServer, http: httpx.AsyncClient
    ) -> None:
        """The callback sees each source once, with a running count of the total."""
        seen: list[tuple[str, int, int]] = []
        await store.refresh(
            serve_all(feed_server),
            client=http,
            policy=RetryPolicy.no_wait(1),
            progress=lambda result, done, total: seen.append((result.name, done, total)),
        )
        assert sorted(done for _, done, _ in seen) == [1, 2, 3]
        assert {total for _, _, total in seen} == {3}

    @pytest.mark.parametrize(
        ("fault", "message"),
        [
            (Route(fail_times=99), "HTTP 500"),
            (Route(b"<html>oops</html>"), "not a price feed"),
            (Route(b""), "empty"),
            (Route(b'{"format": "gpufit-feed", "version": 1, "as_of": "2026-'), "invalid JSON"),
            (Route(hang=True), "timed out"),
            (Route(fixture_bytes("feed.json"), truncate_to=100), "network error"),
        ],
        ids=["500", "garbage", "empty", "truncated-json", "hang", "cut-connection"],
    )
    async def test_a_failed_refresh_keeps_the_last_good_snapshot(
        self,
        store: PriceStore,
        feed_server: FeedServer,
        http: httpx.AsyncClient,
        clock: Clock,
        fault: Route,
        message: str,
    ) -> None:
        """A bad refresh never replaces good prices: the old offers stay, the error is shown."""
        [source] = serve_all(feed_server)[:1]
        await refresh(store, [source], http)
        good = await store.load_catalog()
        feed_server.routes["/feed.json"] = fault
        clock.now = T0 + timedelta(hours=6)
        result = (await refresh(store, [source], http))["publisher"]
        assert result.outcome is RefreshOutcome.FAILED
        assert result.kept_previous
        assert result.error is not None
        assert message in result.error
        after = await store.load_catalog()
        assert after.offers == good.offers
        [info] = after.sources
        assert info.error == result.error
        assert info.fetched_at == T0  # the last good fetch, so its age shows
        [status] = await store.status()
        assert status.error == result.error
        assert status.error_at == T0 + timedelta(hours=6)

    async def test_one_failing_source_does_not_fail_the_others(
        self, store: PriceStore, feed_server: FeedServer, http: httpx.AsyncClient
    ) -> None:
        """A dead feed is reported; the rest of the refresh stores its snapshots."""
        sources = serve_all(feed_server)
        feed_server.routes["/v3/aws.csv"] = Route(fail_times=99, fail_status=503)
        results = await refresh(store, sources, http)
        assert results[feed_server.url("/v3/aws.csv")].outcome is RefreshOutcome.FAILED
        assert not results[feed_server.url("/v3/aws.csv")].kept_previous
        assert results["publisher"].outcome is RefreshOutcome.UPDATED
        catalog = await store.load_catalog()
        assert {s.name for s in catalog.sources} == {"publisher", "gcp"}

    async def test_only_failing_feeds_still_answer_from_the_bundled_snapshot(
        self, store: PriceStore, feed_server: FeedServer, http: httpx.AsyncClient
    ) -> None:
        """With no live snapshot at all, answers keep coming from the bundled prices."""
        url = feed_server.serve("/dead", Route(fail_times=99))
        await refresh(store, [FeedSource.parse(url)], http)
        catalog = await store.load_catalog()
        assert [s.name for s in catalog.sources] == [BUNDLED_SOURCE]
        assert {s.name for s in await store.status()} == {BUNDLED_SOURCE, url}

    async def test_304_and_identical_content_are_unchanged(
        self, store: PriceStore, feed_server: FeedServer, http: httpx.AsyncClient, clock: Clock
    ) -> None:
        """An ETag match (304) or the same bytes again leave the snapshot, updating fetch time."""
        sources = serve_all(feed_server)
        await refresh(store, sources, http)
        clock.now = T0 + timedelta(hours=1)
        results = await refresh(store, sources, http)
        assert all(r.outcome is RefreshOutcome.UNCHANGED for r in results.values())
        native = [r for r in feed_server.requests if r.path == "/feed.json"]
        assert native[-1].headers.get("If-None-Match") == '"n1"'
        catalog = await store.load_catalog()
        assert {s.fetched_at for s in catalog.sources} == {T0 + timedelta(hours=1)}

    async def test_a_second_replica_does_not_refresh_concurrently(
        self, store: PriceStore, feed_server: FeedServer, http: httpx.AsyncClient
    ) -> None:
        """While another holder has the lock, refresh does nothing and says so."""
        token = await store.snapshots.acquire_lock()
        assert token is not None
        report = await store.refresh(serve_all(feed_server), client=http)
        assert report.locked_out
        assert feed_server.requests == []
        await store.snapshots.release_lock(token)
        assert not (await store.refresh(serve_all(feed_server), client=http)).locked_out

    async def test_price_change_since_yesterday(
        self, store: PriceStore, feed_server: FeedServer, http: httpx.AsyncClient, clock: Clock
    ) -> None:
        """History recorded at each refresh answers "down 18 % since yesterday"."""
        [source] = serve_all(feed_server)[:1]
        await refresh(store, [source], http)
        body = fixture_bytes("feed.json").replace(b"49.24", b"40.3768")
        feed_server.routes["/feed.json"] = Route(body)
        clock.now = T0 + timedelta(hours=25)
        await refresh(store, [source], http)
        catalog = await store.load_catalog()
        h100 = next(o for o in catalog.offers if o.gpu_count == 8)
        change = await store.price_change(h100, now=clock.now)
        assert change is not None
        assert change.then_usd_per_hour == 49.24
        assert change.change_fraction == pytest.approx(-0.18)
        assert await store.price_change(h100, now=T0 - timedelta(days=1)) is None


class TestDegraded:
    async def test_redis_going_away_degrades_to_the_in_process_copy(
        self, tmp_path: Path, feed_server: FeedServer, http: httpx.AsyncClient
    ) -> None:
        """When Redis stops answering, the last catalog read is served with a caveat."""
        server = start_redis_server(tmp_path / "redis")
        store = PriceStore(RedisSnapshots.from_url(server.url))
        try:
            await refresh(store, serve_all(feed_server)[:1], http)
            good = await store.load_catalog()
            server.stop()
            loaded = await store.load()
            assert loaded.degraded
            assert loaded.catalog is not None
            assert loaded.catalog.offers == good.offers
            catalog = await store.load_catalog()
            assert all("price store unreachable" in (s.error or "") for s in catalog.sources)
            # The same outage serves the same catalog object: what is built from it (the
            # ranking index, cached answers) is not rebuilt on every question.
            assert await store.load_catalog() is catalog
            with pytest.raises(StoreError, match="Cannot read the price store"):
                await store.status()
            with pytest.raises(StoreError, match="refresh"):
                await store.refresh(serve_all(feed_server), client=http)
        finally:
            server.stop()
            await store.aclose()

    async def test_no_redis_from_the_start_serves_the_bundled_snapshot(self) -> None:
        """A store pointed at nothing still answers, from the bundled snapshot, degraded."""
        store = PriceStore.from_url("redis://127.0.0.1:1/0")
        try:
            loaded = await store.load()
            again = await store.load()
        finally:
            await store.aclose()
        assert loaded.degraded
        assert [s.name for s in loaded.catalog.sources] == [BUNDLED_SOURCE]
        assert again.catalog is loaded.catalog  # the bundled snapshot is read once


class TestProviderHints:
    async def test_a_renamed_gpuhunt_source_takes_its_provider_from_the_file_name(
        self, store: PriceStore, feed_server: FeedServer, http: httpx.AsyncClient
    ) -> None:
        """``hunt=https://…/aws.csv``: the name is free text, the file name still says aws."""
        url = feed_server.serve("/v3/aws.csv", Route(fixture_bytes("aws.csv")))
        results = await refresh(store, [FeedSource.parse(f"hunt={url}")], http)
        assert results["hunt"].outcome is RefreshOutcome.UPDATED
        catalog = await store.load_catalog()
        assert {(o.provider, o.source) for o in catalog.offers} == {("aws", "hunt")}
