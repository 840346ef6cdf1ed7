"""The Redis layer: snapshots, the refresh lock, price history and the embedded server."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from recommender.feeds.cache import (
    HISTORY_LIMIT,
    HISTORY_MAX_AGE,
    CatalogVersion,
    RedisSnapshots,
    SnapshotMeta,
)
from recommender.feeds.history import _HISTORY_BATCH
from recommender.feeds.offer_codec import (
    meta_fields,
    offer_from_dict,
    offer_to_dict,
    snapshot_json,
    snapshot_offers,
)
from recommender.feeds.redis_conn import EMBEDDED_DB_FILE, start_embedded_redis
from recommender.feeds.store import PriceStore
from recommender.gpus import IntraNode
from recommender.pricing.offers import Fabric, Offer
from tests.factories import offer

T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def meta(name: str = "aws", **overrides: object) -> SnapshotMeta:
    fields: dict[str, object] = {
        "name": name,
        "fetched_at": T0,
        "as_of": T0 - timedelta(hours=2),
        "rows": 3,
        "rejected": 1,
        "offers": 2,
        "sha256": "abc",
        "etag": '"v1"',
        "locations": ("https://feeds.example/aws.csv",),
        "errors": ("row 3: unknown GPU 'H900'",),
    }
    fields.update(overrides)
    return SnapshotMeta(**fields)  # type: ignore[arg-type]


def offers() -> tuple[Offer, ...]:
    return (
        offer(
            provider="aws",
            instance_type="p5.48xlarge",
            fabric=Fabric.EFA,
            fabric_gbps=3200.0,
            intra_node=IntraNode.NVLINK,
            gpu_memory_gib=80.0,
            vcpus=192.0,
        ),
        offer(provider="aws", instance_type="p5.48xlarge", spot=True, zone="use1-az2"),
    )


@pytest.fixture
async def store(redis_url: str) -> AsyncIterator[RedisSnapshots]:
    snapshots = RedisSnapshots.from_url(redis_url, prefix="test:feed")
    yield snapshots
    await snapshots.aclose()


class TestSnapshots:
    def test_offers_round_trip_through_json(self) -> None:
        """Every Offer field, enums included, survives encoding."""
        for item in offers():
            assert offer_from_dict(offer_to_dict(item)) == item

    def test_format_2_reads_back_equal_offers_of_equal_types_in_order(self) -> None:
        """Every offer reads back equal, field types included, whatever the offers share."""
        shape = offer(vcpus=192.0, ram_gib=2048.0, intra_node=IntraNode.NVLINK, zone="use1-az1")
        items = [
            shape,
            replace(shape, price_usd_per_hour=31.5, spot=True, region="us-west-2", zone="usw2-az1"),
            # Equal values of other types and non-ASCII text: each reads back as it was.
            offer(vcpus=192, ram_gib=2048, price_usd_per_hour=55),
            replace(shape, vcpus=192, zone="use1-az2"),  # equal to the shape's 192.0
            replace(shape, gpu_count=8.0),
            offer(region='sa-east-1 \u00e9"quoted"', zone="z\\", citation="«cité» 日本"),
            replace(shape, spot=1),  # a truthy non-bool, as a hand-built Offer may hold
            replace(shape, price_usd_per_hour=55.0, spot=False, region="eu-central-1", zone=""),
            *offers(),
        ]
        loaded = snapshot_offers(snapshot_json(iter(items)))
        assert loaded == tuple(items)
        for got, want in zip(loaded, items, strict=True):
            assert [type(getattr(got, f.name)) for f in dataclasses.fields(Offer)] == [
                type(getattr(want, f.name)) for f in dataclasses.fields(Offer)
            ]
        assert snapshot_offers(snapshot_json([])) == ()

    def test_format_2_stores_each_shape_once(self) -> None:
        """Offers of one shape share its twelve fields: one shape row, five columns."""
        shape = offer()
        body = json.loads(
            snapshot_json(
                [
                    shape,
                    replace(
                        shape, price_usd_per_hour=30.0, spot=True, region="eu-west-1", zone="b"
                    ),
                ]
            )
        )
        assert body["format"] == 2
        assert len(body["shapes"]) == 1
        assert body["offers"]["shape"] == [0, 0]
        assert body["offers"]["spot"] == [False, True]

    async def test_a_snapshot_round_trips_with_its_metadata(self, store: RedisSnapshots) -> None:
        """What is stored is what loads: offers, counts, times, validators, locations, reasons."""
        await store.put_snapshot(meta(), offers())
        version, loaded = await store.load_all()
        assert version.counter == 1
        assert version.epoch
        [(got_meta, got_offers)] = loaded
        assert got_offers == offers()
        assert got_meta == meta()

    async def test_every_change_moves_the_version(self, store: RedisSnapshots) -> None:
        """Writes, errors and 304 touches each bump the one version counter readers poll."""
        assert await store.version() == CatalogVersion(None, 0)
        await store.put_snapshot(meta(), offers())
        await store.record_error("aws", "HTTP 500", at=T0)
        await store.touch("aws", fetched_at=T0 + timedelta(hours=1))
        version = await store.version()
        assert version.counter == 3
        assert version.epoch

    async def test_an_error_keeps_the_last_good_snapshot(self, store: RedisSnapshots) -> None:
        """A failed refresh records its error next to the untouched offers."""
        await store.put_snapshot(meta(), offers())
        await store.record_error("aws", "HTTP 500 after 4 attempts", at=T0 + timedelta(hours=1))
        [(got_meta, got_offers)] = (await store.load_all())[1]
        assert got_offers == offers()
        assert got_meta.error == "HTTP 500 after 4 attempts"
        assert got_meta.error_at == T0 + timedelta(hours=1)
        assert got_meta.rows == 3

    async def test_a_good_snapshot_clears_the_error(self, store: RedisSnapshots) -> None:
        """After a failure, the next good refresh (or a 304) clears the error."""
        await store.record_error("aws", "boom", at=T0)
        await store.put_snapshot(meta(), offers())
        assert (await store.meta("aws")) == meta()
        await store.record_error("aws", "boom", at=T0)
        await store.touch("aws", fetched_at=T0 + timedelta(hours=3))
        touched = await store.meta("aws")
        assert touched is not None
        assert touched.error is None
        assert touched.fetched_at == T0 + timedelta(hours=3)

    async def test_an_empty_snapshot_is_refused(self, store: RedisSnapshots) -> None:
        """Storing zero offers would erase a good copy; it is a programming error."""
        with pytest.raises(ValueError, match="empty"):
            await store.put_snapshot(meta(offers=0), ())


async def put_format_1(store: RedisSnapshots, meta: SnapshotMeta, items: tuple[Offer, ...]) -> None:
    """Store a snapshot as versions before format 2 did (their put_snapshot, verbatim)."""
    body = json.dumps([offer_to_dict(o) for o in items], separators=(",", ":"))
    async with store.client.pipeline(transaction=True) as pipe:
        pipe.set(f"test:feed:snap:{meta.name}", body)
        pipe.delete(f"test:feed:meta:{meta.name}")
        pipe.hset(f"test:feed:meta:{meta.name}", mapping=meta_fields(meta))
        pipe.sadd("test:feed:sources", meta.name)
        pipe.incr("test:feed:version")
        await pipe.execute()


def corrupted(body: str, change: str) -> str:
    """A format-2 value with one kind of damage."""
    if change == "cut":
        return body[: len(body) // 2]
    data = json.loads(body)
    columns, shape = data["offers"], data["shapes"][0]
    match change:
        case "format 1 array":
            return "[]"
        case "no shapes":
            del data["shapes"]
        case "no shape column":
            del columns["shape"]
        case "unknown shape":
            columns["shape"][1] = 7
        case "negative shape":
            columns["shape"][1] = -1
        case "short column":
            columns["zone"].pop()
        case "zero price":
            columns["price_usd_per_hour"][0] = 0
        case "huge later price":
            columns["price_usd_per_hour"][2] = 1e9
        case "no GPUs":
            shape[3] = 0
        case "no provider":
            shape[0] = ""
        case "unknown fabric":
            shape[8] = "warp"
        case "short shape":
            shape.pop()
    return json.dumps(data)


class TestSnapshotFormats:
    """Format 2 next to format-1 snapshots of older versions, as in a rolling upgrade."""

    async def test_format_2_is_written_under_its_own_key_only(self, store: RedisSnapshots) -> None:
        """The format-1 key is no longer written; the metadata names the format."""
        await store.put_snapshot(meta(), offers())
        assert await store.client.exists("test:feed:snap:aws") == 0
        assert snapshot_offers(await store.client.get("test:feed:snap2:aws")) == offers()
        assert await store.client.hget("test:feed:meta:aws", "format") == "2"

    async def test_a_store_written_by_an_older_version_is_read(self, store: RedisSnapshots) -> None:
        """A new replica on a store holding only format-1 snapshots answers from them."""
        await put_format_1(store, meta(), offers())
        version, [(got_meta, got_offers)] = await store.load_all()
        assert (version, got_meta, got_offers) == (CatalogVersion(None, 1), meta(), offers())

    async def test_format_2_wins_over_a_stale_format_1_value(self, store: RedisSnapshots) -> None:
        """After an upgrade's first refresh the old key stays, for older replicas, unread."""
        stale = tuple(replace(o, price_usd_per_hour=99.0) for o in offers())
        await put_format_1(store, meta(), stale)
        await store.put_snapshot(meta(rows=5), offers())
        [(got_meta, got_offers)] = (await store.load_all())[1]
        assert (got_meta.rows, got_offers) == (5, offers())
        # Left in place: a replica of the older version still reads it.
        assert [
            offer_from_dict(d) for d in json.loads(await store.client.get("test:feed:snap:aws"))
        ] == list(stale)

    async def test_an_older_version_writing_last_wins(self, store: RedisSnapshots) -> None:
        """An older replica refreshing mid-rollout (or after a rollback) is read, not the
        format-2 value it left behind, which its metadata no longer describes."""
        await store.put_snapshot(meta(), offers())
        newer = tuple(replace(o, price_usd_per_hour=42.0) for o in offers())
        await put_format_1(store, meta(sha256="newer"), newer)
        [(got_meta, got_offers)] = (await store.load_all())[1]
        assert (got_meta.sha256, got_offers) == ("newer", newer)
        await store.put_snapshot(meta(), offers())  # upgraded again
        assert (await store.load_all())[1][0][1] == offers()

    async def test_a_missing_format_2_value_falls_back_to_format_1(
        self, store: RedisSnapshots
    ) -> None:
        """Whichever key exists is read when the one the metadata names does not."""
        await put_format_1(store, meta(), offers())
        await store.put_snapshot(meta(), offers()[:1])
        await store.client.delete("test:feed:snap2:aws")
        assert (await store.load_all())[1][0][1] == offers()

    @pytest.mark.parametrize(
        ("change", "error"),
        [
            ("cut", "Expecting|Unterminated"),
            ("format 1 array", "not a format-2 price snapshot"),
            ("no shapes", "corrupted price snapshot"),
            ("no shape column", "corrupted price snapshot"),
            ("unknown shape", "corrupted price snapshot"),
            ("negative shape", "corrupted price snapshot"),
            ("short column", r"zip\(\) argument 5 is shorter"),
            ("zero price", "implausible price 0 "),
            ("huge later price", "implausible price 1000000000.0 "),
            ("no GPUs", "at least one GPU"),
            ("no provider", "names its provider"),
            ("unknown fabric", "'warp' is not a valid Fabric"),
            ("short shape", "not enough values to unpack"),
        ],
    )
    async def test_a_corrupted_value_fails_the_load_as_format_1_does(
        self, store: RedisSnapshots, change: str, error: str
    ) -> None:
        """A damaged snapshot raises ValueError out of the load, never yields wrong offers:
        what a damaged format-1 value does (PriceStore.load does not degrade on it)."""
        prices = PriceStore(store, seed_bundled=False)
        await put_format_1(store, meta(), offers())
        await store.client.set("test:feed:snap:aws", "[{")
        with pytest.raises(ValueError, match="Expecting property name"):
            await store.load_all()
        with pytest.raises(ValueError, match="Expecting property name"):
            await prices.load()
        # The third offer is of the first's shape: decoded by Offer.priced, not the constructor.
        await store.put_snapshot(
            meta(),
            (
                *offers(),
                replace(offers()[0], price_usd_per_hour=30.0, spot=True, region="b", zone=""),
            ),
        )
        body = await store.client.get("test:feed:snap2:aws")
        await store.client.set("test:feed:snap2:aws", corrupted(body, change))
        with pytest.raises(ValueError, match=error):
            await store.load_all()
        with pytest.raises(ValueError, match=error):
            await prices.load()


class TestRefreshLock:
    async def test_only_one_holder_at_a_time(self, store: RedisSnapshots) -> None:
        """The second replica is told no while the first holds the lock."""
        token = await store.acquire_lock()
        assert token is not None
        assert await store.acquire_lock() is None
        assert await store.release_lock(token)
        assert await store.acquire_lock() is not None

    async def test_only_the_owner_releases(self, store: RedisSnapshots) -> None:
        """A stale token (e.g. after the lock expired and was re-taken) cannot release it."""
        token = await store.acquire_lock()
        assert token is not None
        assert not await store.release_lock("someone-else")
        assert await store.acquire_lock() is None
        assert await store.release_lock(token)

    async def test_the_lock_expires(self, store: RedisSnapshots) -> None:
        """A crashed refresher's lock carries a TTL, so it cannot block refreshes forever."""
        await store.acquire_lock(ttl_s=30)
        ttl_ms = await store.client.pttl("test:feed:lock:refresh")
        assert 0 < ttl_ms <= 30_000


class TestHistory:
    async def test_points_are_kept_and_unchanged_prices_deduplicated(
        self, store: RedisSnapshots
    ) -> None:
        """A price is recorded when it changes, or when the last equal point is over an hour old."""
        item = offers()[0]
        cheaper = replace(item, price_usd_per_hour=item.price_usd_per_hour * 0.82)
        await store.record_history([item], at=T0)
        await store.record_history([item], at=T0 + timedelta(minutes=30))  # skipped
        await store.record_history([item], at=T0 + timedelta(hours=2))
        await store.record_history([cheaper], at=T0 + timedelta(hours=2, minutes=10))
        points = await store.history(item.key)
        assert [p.at for p in points] == [
            T0,
            T0 + timedelta(hours=2),
            T0 + timedelta(hours=2, minutes=10),
        ]
        assert points[-1].price_usd_per_hour == round(cheaper.price_usd_per_hour, 6)

    async def test_price_at_answers_from_the_last_point_before(self, store: RedisSnapshots) -> None:
        """ "Yesterday's price" is the last point at or before now - 24 h."""
        item = offers()[0]
        await store.record_history([replace(item, price_usd_per_hour=50.0)], at=T0)
        await store.record_history(
            [replace(item, price_usd_per_hour=40.0)], at=T0 + timedelta(hours=20)
        )
        point = await store.price_at(item.key, T0 + timedelta(hours=10))
        assert point is not None
        assert (point.at, point.price_usd_per_hour) == (T0, 50.0)
        assert await store.price_at(item.key, T0 - timedelta(seconds=1)) is None

    async def test_history_is_bounded_in_length_and_age(self, store: RedisSnapshots) -> None:
        """At most HISTORY_LIMIT points per offer, none older than the retention window."""
        item = offers()[0]
        for i in range(HISTORY_LIMIT + 5):
            priced = replace(item, price_usd_per_hour=10.0 + i / 100)
            await store.record_history([priced], at=T0 + timedelta(minutes=i))
        points = await store.history(item.key)
        assert len(points) == HISTORY_LIMIT
        assert points[0].at == T0 + timedelta(minutes=5)
        await store.record_history([item], at=T0 + timedelta(days=30))
        assert [p.at for p in await store.history(item.key)] == [T0 + timedelta(days=30)]

    async def test_members_and_scores_are_the_text_python_formats(
        self, store: RedisSnapshots
    ) -> None:
        """Members read "<whole seconds>:<str(round(price, 6))>"; the score keeps microseconds."""
        at = T0 + timedelta(microseconds=123457)
        expected = {  # price -> the text after the colon
            0.1 + 0.2: "0.3",
            1e-06: "1e-06",
            4e-07: "0.0",
            9999.999999999: "10000.0",
            7.0: "7.0",
            1234.5678915: "1234.567892",
        }
        priced = [
            replace(offers()[0], zone=f"z{i}", price_usd_per_hour=p) for i, p in enumerate(expected)
        ]
        await store.record_history(priced, at=at)
        for item, text in zip(priced, expected.values(), strict=True):
            entries = await store.client.zrange(
                f"test:feed:hist:{item.key}", 0, -1, withscores=True
            )
            assert entries == [(f"{at.timestamp():.0f}:{text}", at.timestamp())]

    async def test_equal_prices_compare_as_numbers_like_python(self, store: RedisSnapshots) -> None:
        """A price equal after rounding to 6 places is deduplicated, whatever its text."""
        cases = {
            "a": (0.3, 0.1 + 0.2),  # "0.3" stored, 0.30000000000000004 rounds to 0.3
            "b": (1e-06, 1.0000004e-06),  # exponent notation in the member
            "c": (12.5, 12.5000001),  # differs only past the sixth decimal
            "d": (9999.999999, 9999.9999994),
        }
        first = [replace(offers()[0], zone=z, price_usd_per_hour=p) for z, (p, _) in cases.items()]
        again = [replace(offers()[0], zone=z, price_usd_per_hour=p) for z, (_, p) in cases.items()]
        changed = replace(offers()[0], zone="a", price_usd_per_hour=0.300001)
        await store.record_history(first, at=T0)
        await store.record_history(
            [*again, replace(changed, zone="e")], at=T0 + timedelta(minutes=5)
        )
        await store.record_history([changed], at=T0 + timedelta(minutes=10))
        for zone in cases:
            points = await store.history(replace(offers()[0], zone=zone).key)
            expected = [T0] if zone != "a" else [T0, T0 + timedelta(minutes=10)]
            assert [p.at for p in points] == expected, zone

    async def test_the_dedupe_window_is_exclusive_at_its_end(self, store: RedisSnapshots) -> None:
        """An equal price is skipped up to a microsecond before the hour, recorded at it."""
        item = offers()[0]
        start = T0 + timedelta(microseconds=250)
        await store.record_history([item], at=start)
        await store.record_history(
            [item], at=start + timedelta(minutes=59, seconds=59, microseconds=999_999)
        )
        await store.record_history([item], at=start + timedelta(hours=1))
        assert [p.at for p in await store.history(item.key)] == [start, start + timedelta(hours=1)]

    async def test_many_offers_span_several_script_calls(self, store: RedisSnapshots) -> None:
        """More offers than one script call takes: each recorded, deduplicated, then updated."""
        count = 2 * _HISTORY_BATCH + 17
        many = [
            replace(offers()[0], zone=f"z{i}", price_usd_per_hour=1 + i / 1000)
            for i in range(count)
        ]
        await store.record_history(many, at=T0)
        await store.record_history(many, at=T0 + timedelta(minutes=1))
        dearer = [replace(o, price_usd_per_hour=o.price_usd_per_hour + 1) for o in many]
        await store.record_history(dearer, at=T0 + timedelta(minutes=2))
        for index in (0, _HISTORY_BATCH - 1, _HISTORY_BATCH, count - 1):
            points = await store.history(many[index].key)
            assert [(p.at, p.price_usd_per_hour) for p in points] == [
                (T0, round(many[index].price_usd_per_hour, 6)),
                (T0 + timedelta(minutes=2), round(dearer[index].price_usd_per_hour, 6)),
            ]
        assert (
            len([k async for k in store.client.scan_iter("test:feed:hist:*", count=1000)]) == count
        )

    async def test_an_offer_listed_twice_compares_both_with_the_earlier_point(
        self, store: RedisSnapshots
    ) -> None:
        """Both entries of a repeated offer are checked against the history before the call,
        also when they are further apart than one script call's batch."""
        item = offers()[0]
        others = [replace(item, zone=f"z{i}") for i in range(_HISTORY_BATCH + 5)]
        dearer = replace(item, price_usd_per_hour=60.0)
        await store.record_history([item], at=T0)
        # dearer differs from the stored 55 (recorded); the repeat of 55 is within the hour.
        await store.record_history([dearer, *others, item], at=T0 + timedelta(minutes=10))
        points = await store.history(item.key)
        assert [(p.at, p.price_usd_per_hour) for p in points] == [
            (T0, 55.0),
            (T0 + timedelta(minutes=10), 60.0),
        ]

    async def test_a_flushed_script_cache_is_reloaded(self, store: RedisSnapshots) -> None:
        """After SCRIPT FLUSH (a restarted or failed-over Redis) the script is loaded again."""
        item = offers()[0]
        await store.record_history([item], at=T0)
        await store.client.script_flush()
        await store.record_history(
            [replace(item, price_usd_per_hour=50.0)], at=T0 + timedelta(minutes=1)
        )
        assert [p.price_usd_per_hour for p in await store.history(item.key)] == [55.0, 50.0]

    async def test_a_member_without_a_readable_price_counts_as_changed(
        self, store: RedisSnapshots
    ) -> None:
        """A point gpufit did not write (no price after the colon) never blocks a new one."""
        item = offers()[0]
        key = f"test:feed:hist:{item.key}"
        await store.client.zadd(
            key, {"garbled": T0.timestamp(), "x:not-a-price": T0.timestamp() + 1}
        )
        await store.record_history([item], at=T0 + timedelta(minutes=1))
        assert await store.client.zrange(key, -1, -1) == [
            f"{(T0 + timedelta(minutes=1)).timestamp():.0f}:55.0"
        ]


class TestHistoryOfEarlierVersions:
    """History an earlier version recorded under an offer key without the GPUs."""

    @staticmethod
    async def _write_as_before(
        store: RedisSnapshots, legacy_key: str, points: dict[datetime, float]
    ) -> None:
        # What the earlier client wrote: "<whole seconds>:<price>" scored by the time.
        await store.client.zadd(
            f"test:feed:hist:{legacy_key}",
            {f"{at.timestamp():.0f}:{price}": at.timestamp() for at, price in points.items()},
        )

    async def test_an_old_key_that_named_one_offer_is_carried_over(
        self, store: RedisSnapshots
    ) -> None:
        """Its points move to the offer's key before the first point is recorded there, so
        the dedupe compares with them (an equal price within the hour adds nothing) and
        "since yesterday" reads across the upgrade."""
        item = offers()[0]
        before = {T0 - timedelta(days=2): 60.0, T0 - timedelta(minutes=30): 55.0}
        await self._write_as_before(store, item.legacy_key, before)
        await store.record_history([item], at=T0)
        points = await store.history(item.key)
        assert [(p.at, p.price_usd_per_hour) for p in points] == list(before.items())
        assert not await store.client.exists(f"test:feed:hist:{item.legacy_key}")
        yesterday = await store.price_at(item.key, T0 - timedelta(days=1))
        assert yesterday is not None
        assert yesterday.price_usd_per_hour == 60.0
        await store.record_history([replace(item, price_usd_per_hour=50.0)], at=T0)
        assert len(await store.history(item.key)) == 3

    async def test_an_old_key_that_named_several_offers_is_left_to_expire(
        self, store: RedisSnapshots
    ) -> None:
        """GCP's n1-highmem-8 with a T4 and with a P4 shared one old key, both prices at each
        time: nothing is carried over, and the old key lives out the history's age limit."""
        t4 = offer(provider="gcp", instance_type="n1-highmem-8", gpu_id="T4", gpu_count=1)
        t4 = replace(t4, region="us-central1", zone="us-central1-a", price_usd_per_hour=0.82)
        p4 = replace(t4, gpu_id="P4", price_usd_per_hour=1.07)
        assert t4.legacy_key == p4.legacy_key
        at = T0 - timedelta(hours=5)
        mixed = f"test:feed:hist:{t4.legacy_key}"
        await store.client.zadd(mixed, {f"{at.timestamp():.0f}:0.82": at.timestamp()})
        await store.client.zadd(mixed, {f"{at.timestamp():.0f}:1.07": at.timestamp()})
        await store.record_history([t4, p4], at=T0)
        assert [p.price_usd_per_hour for p in await store.history(t4.key)] == [0.82]
        assert [p.price_usd_per_hour for p in await store.history(p4.key)] == [1.07]
        assert await store.client.zcard(mixed) == 2
        ttl = await store.client.ttl(mixed)
        assert HISTORY_MAX_AGE.total_seconds() - 60 < ttl <= HISTORY_MAX_AGE.total_seconds()
        # A GPU new on that host later finds the old key shared too, and leaves its countdown.
        await store.client.expire(mixed, 100)
        v100 = replace(t4, gpu_id="V100-SXM-16GB", price_usd_per_hour=2.95)
        await store.record_history([t4, p4, v100], at=T0 + timedelta(hours=2))
        assert 0 < await store.client.ttl(mixed) <= 100


class TestEmbedded:
    async def test_embedded_redis_keeps_its_data_in_the_state_dir(self, tmp_path: Path) -> None:
        """A fresh install gets a working Redis whose data file is in the given directory."""
        url = start_embedded_redis(tmp_path / "state")
        assert url.startswith("unix://")
        assert start_embedded_redis(tmp_path / "state") == url  # reused, not restarted
        snapshots = RedisSnapshots.from_url(url)
        try:
            await snapshots.put_snapshot(meta(), offers())
            assert (await snapshots.load_all())[1][0][1] == offers()
            await snapshots.client.save()
        finally:
            await snapshots.aclose()
        assert (tmp_path / "state" / EMBEDDED_DB_FILE).is_file()
