"""The price service the faces use: load the catalog, refresh sources, report their status.

``PriceStore`` sits on :class:`~recommender.feeds.cache.RedisSnapshots`:

* :meth:`PriceStore.load` costs one ``MGET`` of the version (epoch and counter) per call;
  the decoded catalog is reused until the version moves. When Redis has no snapshot at all,
  the bundled snapshot is seeded into it. When Redis is unreachable, the last in-process
  catalog (or the bundled snapshot) is returned and marked degraded.
* :meth:`PriceStore.refresh` takes the refresh lock (one refresher across replicas), fetches
  every source concurrently, parses in a worker thread, and stores each good snapshot. A
  failed, empty or unparseable source keeps its last good snapshot and records the error.
* The bundled snapshot is answered from only while no live source has a snapshot.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from typing import NamedTuple

import httpx
from redis.exceptions import RedisError

from recommender.errors import StoreError
from recommender.feeds.bundled import BUNDLED_SOURCE, bundled_catalog, load_bundled
from recommender.feeds.cache import (
    DEFAULT_LOCK_TTL_S,
    DEFAULT_PREFIX,
    CatalogVersion,
    RedisSnapshots,
    SnapshotMeta,
)
from recommender.feeds.clock import utc_now
from recommender.feeds.fetch import (
    DEFAULT_MAX_BYTES,
    FetchTimeouts,
    RetryPolicy,
    make_client,
)
from recommender.feeds.listings import ListingLog
from recommender.feeds.refresh import refresh_source
from recommender.feeds.sources import (
    FeedSource,
    RefreshOutcome,
    RefreshReport,
    SourceRefresh,
    SourceStatus,
    parse_sources,
)
from recommender.pricing.availability import Listing
from recommender.pricing.catalog import Catalog
from recommender.pricing.offers import Offer, SourceInfo

__all__ = [
    "FeedSource",
    "LoadedCatalog",
    "PriceChange",
    "PriceStore",
    "RefreshOutcome",
    "RefreshReport",
    "SourceRefresh",
    "SourceStatus",
    "parse_sources",
]

Clock = Callable[[], datetime]
Progress = Callable[["SourceRefresh", int, int], None]

#: Errors that mean "Redis is not there right now" (as opposed to a bug).
_UNREACHABLE = (RedisError, OSError)


@dataclass(frozen=True, slots=True)
class LoadedCatalog:
    catalog: Catalog
    #: True when Redis could not be read and this is the in-process (or bundled) copy.
    degraded: bool = False
    reason: str | None = None


@dataclass(frozen=True, slots=True)
class PriceChange:
    """How an offer's price moved over a window ("down 18 % since yesterday")."""

    offer_key: str
    then_usd_per_hour: float
    now_usd_per_hour: float
    since: datetime

    @property
    def change_fraction(self) -> float:
        """Relative change: -0.18 is 18 % cheaper than then."""
        return self.now_usd_per_hour / self.then_usd_per_hour - 1


#: How long a failed reload answers the callers that read the same version after it failed:
#: questions arriving together degrade together instead of each retrying a failing Redis in
#: turn (ours: one second, the scale of a burst; the next question after it tries again).
FAILED_RELOAD_REUSE_S = 1.0


class _Reload(NamedTuple):
    loop: asyncio.AbstractEventLoop
    version: CatalogVersion | None
    started: float
    future: asyncio.Future[Catalog]


class PriceStore:
    """Catalog loading, refreshing and status on one Redis."""

    def __init__(
        self,
        snapshots: RedisSnapshots,
        *,
        clock: Clock = utc_now,
        seed_bundled: bool = True,
        recheck_s: float = 0.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        """``recheck_s``: how long :meth:`load` answers from the catalog it has without
        asking Redis whether the prices moved (0: ask on every call). ``monotonic`` is its
        clock."""
        self.snapshots = snapshots
        self._clock = clock
        self._seed_bundled = seed_bundled
        self._recheck_s = recheck_s
        self._monotonic = monotonic
        #: Until when (``monotonic``) the version read last may be trusted without a read.
        self._trusted_until = -math.inf
        self._version: CatalogVersion | None = None
        self._catalog: Catalog | None = None
        #: While Redis is down: the last degraded catalog with the note it was made for, so an
        #: outage does not rebuild the catalog (and, downstream, its cached answers) on every
        #: question.
        self._degraded_last: tuple[Catalog, str, Catalog] | None = None
        #: The reload in flight (or just finished): its loop, the version its caller read,
        #: when it started (``monotonic``) and its future.
        self._pending: _Reload | None = None

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        prefix: str = DEFAULT_PREFIX,
        clock: Clock = utc_now,
        recheck_s: float = 0.0,
    ) -> PriceStore:
        return cls(RedisSnapshots.from_url(url, prefix=prefix), clock=clock, recheck_s=recheck_s)

    async def aclose(self) -> None:
        await self.snapshots.aclose()

    # ------------------------------------------------------------- reading

    async def load(self) -> LoadedCatalog:
        """The current catalog; never fails because Redis is down (it degrades instead).

        When the version moves, one reload runs and every caller that finds the version moved
        meanwhile awaits it: questions arriving together after a refresh decode the snapshots
        once, not once each, and when Redis fails during the reload they all degrade at once
        (none retries after another). The decode and the catalog's sanity screen are built in
        a worker thread, so the event loop keeps answering meanwhile.

        Within ``recheck_s`` of a successful read of the version, the catalog is returned
        without reading it again (a refresh by this store ends that at once; one by another
        process is seen within ``recheck_s``).
        """
        trusted = self.catalog_now()
        if trusted is not None:
            return LoadedCatalog(trusted)
        started = self._monotonic()
        try:
            version = await self.snapshots.version()
            if version == self._version and self._catalog is not None:
                self._trusted_until = started + self._recheck_s
                return LoadedCatalog(self._catalog)
            catalog = await asyncio.shield(self._reload(version))
        except _UNREACHABLE as exc:
            return self._degraded(f"price store unreachable ({type(exc).__name__}: {exc})")
        return LoadedCatalog(catalog)

    def catalog_now(self) -> Catalog | None:
        """The catalog :meth:`load_catalog` would return, when that needs no Redis read
        (within ``recheck_s`` of the last version read); else ``None``."""
        catalog = self._catalog
        if catalog is not None and self._monotonic() < self._trusted_until:
            return catalog
        return None

    def _reload(self, version: CatalogVersion | None) -> asyncio.Future[Catalog]:
        """The reload in flight on the running event loop, or a new one (a store may outlive
        a loop: the CLI runs one per command). A reload of the same ``version`` that failed
        within :data:`FAILED_RELOAD_REUSE_S` is answered with its failure: callers whose
        version read lands just after it failed degrade with it, not one after another."""
        loop = asyncio.get_running_loop()
        now = self._monotonic()
        pending = self._pending
        if pending is not None and pending.loop is loop:
            if not pending.future.done():
                return pending.future
            failed = not pending.future.cancelled() and pending.future.exception() is not None
            if (
                failed
                and pending.version == version
                and now - pending.started < (FAILED_RELOAD_REUSE_S)
            ):
                return pending.future
        task = loop.create_task(self._load_catalog_now())
        # Retrieved here too, so a failure whose callers have all gone is not logged as lost.
        task.add_done_callback(lambda t: t.cancelled() or t.exception())
        self._pending = _Reload(loop, version, now, task)
        return task

    async def _load_catalog_now(self) -> Catalog:
        started = self._monotonic()
        version, loaded = await self._load_all()
        listings = await ListingLog(self.snapshots.client, prefix=self.snapshots.prefix).load(
            [meta.name for meta, _ in loaded]
        )
        catalog = await asyncio.to_thread(_build_catalog, loaded, listings)
        self._version, self._catalog = version, catalog
        self._trusted_until = started + self._recheck_s
        return catalog

    async def load_catalog(self) -> Catalog:
        """The catalog; when degraded, each source's ``error`` says so (for the answer's footer)."""
        loaded = await self.load()
        if not loaded.degraded:
            return loaded.catalog
        note = f"{loaded.reason}; using the copy this process read last"
        last = self._degraded_last
        if last is not None and last[0] is loaded.catalog and last[1] == note:
            return last[2]
        sources = tuple(
            replace(s, error=f"{s.error}; {note}" if s.error else note)
            for s in loaded.catalog.sources
        )
        degraded = replace(loaded.catalog, sources=sources)
        self._degraded_last = (loaded.catalog, note, degraded)
        return degraded

    def _degraded(self, reason: str) -> LoadedCatalog:
        if self._catalog is not None:
            return LoadedCatalog(self._catalog, degraded=True, reason=reason)
        return LoadedCatalog(bundled_catalog(), degraded=True, reason=reason)

    async def _load_all(
        self,
    ) -> tuple[CatalogVersion, list[tuple[SnapshotMeta, tuple[Offer, ...]]]]:
        """Every snapshot; seeds the bundled one first when Redis holds no offers at all."""
        version, loaded = await self.snapshots.load_all()
        if self._seed_bundled and not any(offers for _, offers in loaded):
            await self._seed()
            version, loaded = await self.snapshots.load_all()
        return version, loaded

    async def _seed(self) -> None:
        bundled = load_bundled()
        meta = SnapshotMeta(
            name=BUNDLED_SOURCE,
            fetched_at=None,
            as_of=bundled.as_of,
            rows=bundled.rows,
            rejected=bundled.rejected,
            offers=len(bundled.offers),
            sha256="bundled",
            bundled=True,
            errors=bundled.errors,
        )
        await self.snapshots.put_snapshot(meta, bundled_catalog().offers)

    async def status(self) -> tuple[SourceStatus, ...]:
        """Every known source, for ``gpufit feed status``.

        Raises:
            StoreError: Redis cannot be read.
        """
        try:
            _, loaded = await self._load_all()
        except _UNREACHABLE as exc:
            raise StoreError(
                f"Cannot read the price store: {exc}.",
                hint="Check REDIS_URL, or unset it to use the embedded store.",
            ) from None
        now = self._clock()
        rows = []
        for meta, offers in loaded:
            as_of = meta.as_of or meta.fetched_at
            rows.append(
                SourceStatus(
                    name=meta.name,
                    locations=meta.locations,
                    as_of=as_of,
                    fetched_at=meta.fetched_at,
                    age_hours=max(0.0, (now - as_of).total_seconds() / 3600) if as_of else None,
                    rows=meta.rows,
                    rejected=meta.rejected,
                    offers=len(offers),
                    error=meta.error,
                    error_at=meta.error_at,
                    bundled=meta.bundled,
                    sha256=meta.sha256,
                    errors=meta.errors,
                )
            )
        return tuple(rows)

    async def price_change(
        self, offer: Offer, *, now: datetime, window: timedelta = timedelta(hours=24)
    ) -> PriceChange | None:
        """The move of ``offer``'s price against the last price recorded ``window`` ago.

        ``None`` when there is no history that old, or Redis cannot be read.
        """
        try:
            then = await self.snapshots.price_at(offer.key, now - window)
        except _UNREACHABLE:
            return None
        if then is None:
            return None
        return PriceChange(offer.key, then.price_usd_per_hour, offer.price_usd_per_hour, then.at)

    # ------------------------------------------------------------- refreshing

    async def refresh(
        self,
        sources: Sequence[FeedSource],
        *,
        client: httpx.AsyncClient | None = None,
        policy: RetryPolicy | None = None,
        timeouts: FetchTimeouts | None = None,
        max_bytes: int = DEFAULT_MAX_BYTES,
        max_offers: int | None = None,
        progress: Progress | None = None,
        lock_ttl_s: float = DEFAULT_LOCK_TTL_S,
    ) -> RefreshReport:
        """Fetch, parse and store every source concurrently, under the refresh lock; a source
        over ``max_bytes`` or ``max_offers`` keeps its last good snapshot.

        ``progress(result, done, total)`` is called as each source finishes. A refresher that
        dies holds the lock until ``lock_ttl_s`` passes; other replicas are locked out until
        then and keep serving the last good snapshots.

        Raises:
            StoreError: Redis cannot be reached (nothing can be stored).
        """
        try:
            token = await self.snapshots.acquire_lock(ttl_s=lock_ttl_s)
        except _UNREACHABLE as exc:
            raise StoreError(
                f"Cannot reach the price store to refresh: {exc}.",
                hint="Check REDIS_URL, or unset it to use the embedded store.",
            ) from None
        if token is None:
            return RefreshReport(sources=(), locked_out=True)
        timeouts = timeouts or FetchTimeouts()
        http = client or make_client(timeouts)
        done = 0

        async def one(source: FeedSource) -> SourceRefresh:
            nonlocal done
            result = await refresh_source(
                self.snapshots, source, http, policy, timeouts, max_bytes, self._clock, max_offers
            )
            done += 1
            if progress is not None:
                progress(result, done, len(sources))
            return result

        try:
            results = await asyncio.gather(*(one(s) for s in sources))
        except _UNREACHABLE as exc:
            raise StoreError(f"The price store failed during the refresh: {exc}.") from None
        finally:
            self._trusted_until = -math.inf  # this refresh may have moved the prices
            if client is None:
                await http.aclose()
            # If Redis is gone, the lock expires on its own (DEFAULT_LOCK_TTL_S).
            with contextlib.suppress(*_UNREACHABLE):
                await self.snapshots.release_lock(token)
        return RefreshReport(sources=tuple(results))


def _build_catalog(
    loaded: Sequence[tuple[SnapshotMeta, tuple[Offer, ...]]],
    listings: Mapping[str, tuple[Listing, ...]],
) -> Catalog:
    live = [(m, o) for m, o in loaded if o and not m.bundled]
    chosen = live or [(m, o) for m, o in loaded if o and m.bundled]
    if not chosen:
        return bundled_catalog()
    offers: list[Offer] = []
    infos: list[SourceInfo] = []
    for meta, source_offers in chosen:
        as_of = meta.as_of or meta.fetched_at
        if as_of is None:
            continue
        offers.extend(source_offers)
        infos.append(
            SourceInfo(
                name=meta.name,
                as_of=as_of,
                fetched_at=meta.fetched_at,
                rows=meta.rows,
                rejected=meta.rejected,
                rejections=meta.errors,
                error=meta.error,
                bundled=meta.bundled,
                listings=listings.get(meta.name, ()),
            )
        )
    return Catalog.of(offers, infos)
