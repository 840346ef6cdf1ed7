"""The Redis side of the price feed: snapshots per source, the refresh lock, price history.

Keys (all under one prefix, ``gpufit:feed`` by default)::

    {p}:version            INCR on every change to any snapshot or its metadata
    {p}:epoch              STRING: a random token, SET NX by every write; readers compare it
                           together with the counter (see "The catalog's version" below)
    {p}:sources            SET of source names with a snapshot
    {p}:snap2:{name}       STRING: the snapshot's offers as format-2 JSON (offer_codec.py)
    {p}:snap:{name}        STRING: the offers as format-1 JSON, written by older versions only
    {p}:meta:{name}        HASH: fetched_at, as_of, rows, rejected, offers, sha256, error,
                           error_at, etag, last_modified, locations, bundled, format
    {p}:lock:refresh       STRING token (SET NX PX): one refresher across replicas
    {p}:hist:{offer key}   ZSET: the offer's price history (history.py)

Snapshot formats across versions: this version writes ``snap2`` only, with ``format`` = 2 in
the metadata, and reads the key the metadata names: ``snap2`` when ``format`` is 2, else
``snap`` (the metadata of a snapshot written by an older version, which rewrites the whole
hash), whichever exists when that one does not. So during a rolling upgrade, or after a roll
back and forward again, the snapshot written last wins, and a stale ``snap`` key never
shadows a newer ``snap2`` one, nor the reverse. A write leaves an existing ``snap`` key in
place: older replicas still running read only it, and keep answering from their last
snapshot (slightly stale prices) until they are replaced; see docs/operations.md, Upgrade.

Readers check the catalog's version (one ``MGET``, below) at most once per ``recheck_s``: the
decoded catalog is reused in-process until the version moves (see
:meth:`recommender.feeds.store.PriceStore.load`). A failed or empty refresh never replaces a
good snapshot; it only records the error in the metadata.

The catalog's version is the pair (epoch, counter), read with one ``MGET``. The counter alone
is not enough: when Redis loses its data (a restart without persistence, a failover to an
empty replica, ``FLUSHALL``) the counter restarts at 0 and, after as many writes as before,
equals the version a reader already holds, which would keep serving its old catalog for good.
The epoch is set once (``SET NX``) by the first write after such a loss, a fresh random token,
so the pair differs from anything read before the loss. Versions before this one never set
the epoch; they only move the counter, which readers still see.
"""

from __future__ import annotations

import asyncio
import json
import secrets
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from recommender.feeds.history import HISTORY_LIMIT, HISTORY_MAX_AGE, PriceHistory, PricePoint
from recommender.feeds.offer_codec import (
    SNAPSHOT_FORMAT,
    SnapshotMeta,
    meta_fields,
    meta_from_fields,
    offer_from_dict,
    snapshot_json,
    snapshot_offers,
)
from recommender.feeds.redis_conn import redis_client
from recommender.pricing.offers import Offer

if TYPE_CHECKING:
    import redis.asyncio as aioredis

__all__ = [
    "DEFAULT_LOCK_TTL_S",
    "DEFAULT_PREFIX",
    "HISTORY_LIMIT",
    "HISTORY_MAX_AGE",
    "CatalogVersion",
    "PricePoint",
    "RedisSnapshots",
    "SnapshotMeta",
]

DEFAULT_PREFIX = "gpufit:feed"

#: How long a refresh may hold the lock before another replica may take over; why: a refresh
#: is bounded by fetch timeouts x attempts (about 2 min worst case); 5 min covers a slow parse.
DEFAULT_LOCK_TTL_S = 300.0

# Deletes the lock only if it still holds our token (a compare-and-delete, atomically).
_RELEASE = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0
"""


# Stores one snapshot, atomically (as the MULTI/EXEC pipeline it replaces): the snapshot text,
# the metadata hash rewritten whole (no field of an earlier error survives), the source's name
# in the source set, and the version bumped so that replicas reload. One command instead of
# seven: the client parses one reply, not a transaction's worth.
# The epoch is set when absent (a store that lost its data, or a new one).
# KEYS: 1 the snap2 value, 2 the metadata hash, 3 the source set, 4 the version counter,
# 5 the epoch. ARGV: 1 the snapshot text, 2 the source name, 3 a fresh epoch token, then the
# metadata's field and value pairs.
_PUT_SNAPSHOT = """
redis.call('SET', KEYS[5], ARGV[3], 'NX')
redis.call('SET', KEYS[1], ARGV[1])
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[2], unpack(ARGV, 4))
redis.call('SADD', KEYS[3], ARGV[2])
return redis.call('INCR', KEYS[4])
"""


@dataclass(frozen=True, slots=True)
class CatalogVersion:
    """What readers compare to know the catalog moved: the store's epoch and its counter."""

    #: ``None`` while the store holds no epoch (empty, or written only by older versions).
    epoch: str | None
    counter: int


def _version(epoch: Any, counter: Any) -> CatalogVersion:
    return CatalogVersion(str(epoch) if epoch else None, int(counter) if counter else 0)


class RedisSnapshots:
    """Snapshots, lock and history in one Redis database. Redis errors propagate."""

    def __init__(self, client: aioredis.Redis, *, prefix: str = DEFAULT_PREFIX) -> None:
        self.client = client
        self.prefix = prefix
        self.prices = PriceHistory(client, prefix=prefix)
        # EVALSHA with a fallback to loading the script when the server answers NOSCRIPT.
        self._put_snapshot = client.register_script(_PUT_SNAPSHOT)

    @classmethod
    def from_url(cls, url: str, *, prefix: str = DEFAULT_PREFIX) -> RedisSnapshots:
        """A store on the Redis at ``url`` (``redis://``, ``rediss://`` or ``unix://``)."""
        # Short timeouts: when Redis is down, answers degrade to the in-process copy quickly.
        client = redis_client(
            url, decode_responses=True, socket_connect_timeout=2.0, socket_timeout=5.0
        )
        return cls(client, prefix=prefix)

    async def aclose(self) -> None:
        await self.client.aclose()

    def _key(self, *parts: str) -> str:
        return ":".join((self.prefix, *parts))

    # ------------------------------------------------------------- snapshots

    async def version(self) -> CatalogVersion:
        """The catalog's version: one ``MGET`` of the epoch and the counter."""
        epoch, counter = await self.client.mget(self._key("epoch"), self._key("version"))
        return _version(epoch, counter)

    async def put_snapshot(
        self, meta: SnapshotMeta, offers: Sequence[Offer], *, history_at: datetime | None = None
    ) -> None:
        """Store a good snapshot (it must have offers), clear the error, bump the version."""
        if not offers:
            raise ValueError("refusing to store an empty snapshot")
        body = snapshot_json(offers)
        fields = {**meta_fields(meta), _FORMAT_FIELD: str(SNAPSHOT_FORMAT)}
        # The format-1 key of an older version is left alone, not deleted: older replicas
        # still running during a rolling upgrade read only that key, and would otherwise find
        # no offers and answer from the bundled snapshot (or seed it). The format field in the
        # metadata tells readers of this version to read snap2 instead.
        await self._put_snapshot(
            keys=[
                self._key("snap2", meta.name),
                self._key("meta", meta.name),
                self._key("sources"),
                self._key("version"),
                self._key("epoch"),
            ],
            args=[
                body,
                meta.name,
                _new_epoch(),
                *(item for pair in fields.items() for item in pair),
            ],
        )
        if history_at is not None:
            await self.record_history(offers, at=history_at)

    async def touch(self, name: str, *, fetched_at: datetime) -> None:
        """Mark a source as checked and unchanged (HTTP 304): new fetch time, error cleared."""
        async with self.client.pipeline(transaction=True) as pipe:
            pipe.hset(self._key("meta", name), mapping={"fetched_at": fetched_at.isoformat()})
            pipe.hdel(self._key("meta", name), "error", "error_at")
            pipe.set(self._key("epoch"), _new_epoch(), nx=True)
            pipe.incr(self._key("version"))
            await pipe.execute()

    async def record_error(
        self, name: str, error: str, *, at: datetime, locations: Sequence[str] = ()
    ) -> None:
        """Record a failed refresh; the last good snapshot (if any) stays."""
        fields: dict[Any, Any] = {"name": name, "error": error, "error_at": at.isoformat()}
        if locations:
            fields["locations"] = json.dumps(list(locations))
        async with self.client.pipeline(transaction=True) as pipe:
            pipe.hset(self._key("meta", name), mapping=fields)
            pipe.sadd(self._key("sources"), name)
            pipe.set(self._key("epoch"), _new_epoch(), nx=True)
            pipe.incr(self._key("version"))
            await pipe.execute()

    async def source_names(self) -> list[str]:
        return sorted(str(n) for n in await self.client.smembers(self._key("sources")))

    async def meta(self, name: str) -> SnapshotMeta | None:
        fields = await self.client.hgetall(self._key("meta", name))
        return meta_from_fields(name, fields) if fields else None

    async def load_all(
        self,
    ) -> tuple[CatalogVersion, list[tuple[SnapshotMeta, tuple[Offer, ...]]]]:
        """The version and every source's metadata and offers (sources without one: no offers)."""
        async with self.client.pipeline(transaction=True) as pipe:
            pipe.mget(self._key("epoch"), self._key("version"))
            pipe.smembers(self._key("sources"))
            (epoch_raw, version_raw), names = await pipe.execute()
        ordered = sorted(names)
        async with self.client.pipeline(transaction=False) as pipe:
            for name in ordered:
                pipe.hgetall(self._key("meta", name))
                pipe.get(self._key("snap2", name))
            replies = await pipe.execute()
        metas: list[tuple[str, Mapping[Any, Any], str | None]] = [
            (name, replies[2 * i], replies[2 * i + 1])
            for i, name in enumerate(ordered)
            if replies[2 * i]
        ]
        # A snapshot last written by an older version (or with no format-2 value) is read
        # from its format-1 key: a second round trip, only while a store holds such snapshots.
        older = [
            name
            for name, fields, body in metas
            if fields.get(_FORMAT_FIELD) != str(SNAPSHOT_FORMAT) or body is None
        ]
        format1: dict[str, str | None] = {}
        if older:
            async with self.client.pipeline(transaction=False) as pipe:
                for name in older:
                    pipe.get(self._key("snap", name))
                format1 = dict(zip(older, await pipe.execute(), strict=True))
        # Decoding is pure CPU (every offer through Offer's checks, ~0.25 s for 29k offers): a
        # worker thread, off the event loop.
        loaded = await asyncio.to_thread(_decode_snapshots, metas, format1)
        return _version(epoch_raw, version_raw), loaded

    # ------------------------------------------------------------- refresh lock

    async def acquire_lock(self, *, ttl_s: float = DEFAULT_LOCK_TTL_S) -> str | None:
        """A token when this caller now holds the refresh lock, ``None`` when another does."""
        token = secrets.token_hex(16)
        acquired = await self.client.set(
            self._key("lock", "refresh"), token, nx=True, px=int(ttl_s * 1000)
        )
        return token if acquired else None

    async def release_lock(self, token: str) -> bool:
        """Release the lock if ``token`` still owns it (an expired lock may be someone else's)."""
        released = await self.client.eval(_RELEASE, 1, self._key("lock", "refresh"), token)
        return bool(released)

    # ------------------------------------------------------------- price history

    async def record_history(self, offers: Iterable[Offer], *, at: datetime) -> None:
        """Append each offer's price at ``at`` (:meth:`PriceHistory.record`)."""
        await self.prices.record(offers, at=at)

    async def history(self, offer_key: str) -> list[PricePoint]:
        """Every recorded price of one offer (``Offer.key``), oldest first."""
        return await self.prices.points(offer_key)

    async def price_at(self, offer_key: str, at: datetime) -> PricePoint | None:
        """The price recorded last at or before ``at``."""
        return await self.prices.price_at(offer_key, at)


def _new_epoch() -> str:
    return secrets.token_hex(8)


#: The metadata field naming the format of the snapshot written with it; why: an older
#: version's write rewrites the whole metadata hash without it, so its absence tells readers
#: that the format-1 key holds the snapshot written last.
_FORMAT_FIELD = "format"


def _decode_snapshots(
    metas: Sequence[tuple[str, Mapping[Any, Any], str | None]], format1: Mapping[str, str | None]
) -> list[tuple[SnapshotMeta, tuple[Offer, ...]]]:
    """Each source's metadata and offers, from its format-1 value when it has one."""
    loaded: list[tuple[SnapshotMeta, tuple[Offer, ...]]] = []
    for name, fields, body in metas:
        body1 = format1.get(name)
        if body1:
            offers = tuple(offer_from_dict(d) for d in json.loads(body1))
        else:
            offers = snapshot_offers(body) if body else ()
        loaded.append((meta_from_fields(name, fields), offers))
    return loaded
