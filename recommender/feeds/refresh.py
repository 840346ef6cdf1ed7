"""Refreshing one price source: fetch it, parse it in a worker thread, store its snapshot.

:meth:`recommender.feeds.store.PriceStore.refresh` runs :func:`refresh_source` for every
source concurrently, under the refresh lock. A failed, empty or unparseable source keeps its
last good snapshot and records the error; an unchanged one (HTTP 304, or the same bytes) only
has its fetch time moved.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable
from datetime import datetime

import httpx

from recommender.errors import CatalogError, FeedTooLargeError
from recommender.feeds.base import owned_by
from recommender.feeds.cache import RedisSnapshots, SnapshotMeta
from recommender.feeds.detect import parse_any
from recommender.feeds.fetch import FetchTimeouts, RetryPolicy, Validators, fetch_all
from recommender.feeds.gpuhunt import provider_from_location
from recommender.feeds.listings import ListingLog
from recommender.feeds.skypilot import cloud_from_location
from recommender.feeds.sources import FeedSource, RefreshOutcome, SourceRefresh

__all__ = ["refresh_source"]


async def refresh_source(
    snapshots: RedisSnapshots,
    source: FeedSource,
    http: httpx.AsyncClient,
    policy: RetryPolicy | None,
    timeouts: FetchTimeouts,
    max_bytes: int,
    clock: Callable[[], datetime],
    max_offers: int | None = None,
) -> SourceRefresh:
    """Fetch, parse and store one source's snapshot; a failure keeps the last good one."""
    previous = await snapshots.meta(source.name)
    has_previous = previous is not None and previous.has_snapshot
    validators: dict[str, Validators] = {}
    if previous is not None and has_previous and len(source.locations) == 1:
        # Conditional requests only for one-document sources: with several, one 304
        # would leave no body to re-parse the others with.
        validators[source.locations[0]] = Validators(previous.etag, previous.last_modified)
    results = await fetch_all(
        source.locations,
        client=http,
        policy=policy,
        validators=validators,
        max_bytes=max_bytes,
        timeouts=timeouts,
    )
    now = clock()
    failures = [r.error for r in results if r.error is not None]
    if failures:
        error = "; ".join(e.message for e in failures)
        too_large = any(isinstance(e, FeedTooLargeError) for e in failures)
        return await _failed(snapshots, source, error, has_previous, now, too_large=too_large)
    fetched = [r.fetched for r in results if r.fetched is not None]
    # The listing log is written before the snapshot or its touch moves the catalog's
    # version, so readers of the new version see this refresh in it (listings.py).
    listings = ListingLog(snapshots.client, prefix=snapshots.prefix)
    if all(f.not_modified for f in fetched) and previous is not None:
        await listings.record_unchanged(source.name, at=now)
        await snapshots.touch(source.name, fetched_at=now)
        return _unchanged(source.name, previous)
    bodies = [f.body or b"" for f in fetched]
    digest = hashlib.sha256(b"\0".join(bodies)).hexdigest()
    if previous is not None and has_previous and previous.sha256 == digest:
        await listings.record_unchanged(source.name, at=now)
        await snapshots.touch(source.name, fetched_at=now)
        return _unchanged(source.name, previous)
    stamps = [f.modified_at for f in fetched if f.modified_at is not None]
    try:
        parsed = await asyncio.to_thread(
            parse_any,
            bodies,
            source=source.name,
            as_of=min(stamps) if len(stamps) == len(fetched) else None,
            provider=source.provider
            or provider_from_location(source.locations[0])
            or cloud_from_location(source.locations[0]),
            max_offers=max_offers,
            max_bytes=max_bytes,
        )
    except CatalogError as exc:
        too_large = isinstance(exc, FeedTooLargeError)
        return await _failed(snapshots, source, exc.message, has_previous, now, too_large=too_large)
    offers = tuple(owned_by(o, source.name) for o in parsed.offers)
    single = fetched[0] if len(fetched) == 1 else None
    meta = SnapshotMeta(
        name=source.name,
        fetched_at=now,
        # CSV catalogs state no as-of; without Last-Modified, the fetch time is the bound.
        as_of=parsed.as_of or now,
        rows=parsed.rows,
        rejected=parsed.rejected,
        offers=len(offers),
        sha256=digest,
        etag=single.validators.etag if single else None,
        last_modified=single.validators.last_modified if single else None,
        locations=source.locations,
        errors=parsed.errors,
    )
    if offers:  # an empty catalog is not stored (put_snapshot refuses it), nor logged
        await listings.record_update(source.name, offers, at=now)
    await snapshots.put_snapshot(meta, offers, history_at=now)
    return SourceRefresh(
        name=source.name,
        outcome=RefreshOutcome.UPDATED,
        rows=parsed.rows,
        rejected=parsed.rejected,
        offers=len(offers),
        errors=parsed.errors,
    )


async def _failed(
    snapshots: RedisSnapshots,
    source: FeedSource,
    error: str,
    has_previous: bool,
    now: datetime,
    *,
    too_large: bool = False,
) -> SourceRefresh:
    await snapshots.record_error(source.name, error, at=now, locations=source.locations)
    return SourceRefresh(
        name=source.name,
        outcome=RefreshOutcome.FAILED,
        error=error,
        kept_previous=has_previous,
        too_large=too_large,
    )


def _unchanged(name: str, previous: SnapshotMeta) -> SourceRefresh:
    return SourceRefresh(
        name=name,
        outcome=RefreshOutcome.UNCHANGED,
        rows=previous.rows,
        rejected=previous.rejected,
        offers=previous.offers,
        errors=previous.errors,
    )
