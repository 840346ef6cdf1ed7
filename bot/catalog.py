"""Loading the catalog for a face: the bundled snapshot plus any explicit sources."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from recommender import Catalog, CatalogError, Offer, SourceInfo
from recommender.feeds import BUNDLED_SOURCE, ParsedFeed, bundled_catalog, owned_by

__all__ = ["BUNDLED_SOURCE", "bundled_catalog", "load_sources"]


def _owned(
    name: str, feed: ParsedFeed, *, fetched_at: datetime
) -> tuple[tuple[Offer, ...], SourceInfo]:
    """A source's offers, each naming ``name`` as its source, and the source's description
    (dated by the feed, else by when it was fetched)."""
    as_of = feed.as_of or fetched_at
    offers = tuple(owned_by(o, name) for o in feed.offers)
    info = SourceInfo(
        name=name,
        as_of=as_of,
        fetched_at=fetched_at,
        rows=feed.rows,
        rejected=feed.rejected,
        rejections=feed.errors,
    )
    return offers, info


async def load_sources(specs: Sequence[str]) -> Catalog:
    """Fetch and parse explicit sources (``--catalog``), concurrently, without the cache.

    Each spec is ``[name=]location[;location…]`` (several files read as one catalog, e.g. a
    GCP host file and its accelerator file). A source that fails is left out; only when every
    source fails is it an error.

    Raises:
        CatalogError: no source could be read, or a spec names no location.
    """
    # Fetching (httpx, tenacity) and the store's source specs are imported here, not at the
    # top: answering from the bundled snapshot needs neither (CLI start-up time).
    from recommender.feeds import FeedSource, fetch_all, parse_any

    sources = [FeedSource.parse(spec) for spec in specs]
    locations = [loc for src in sources for loc in src.locations]
    fetched = {r.location: r for r in await fetch_all(locations)}
    offers: list[Offer] = []
    infos: list[SourceInfo] = []
    errors: list[str] = []
    for src in sources:
        results = [fetched[loc] for loc in src.locations]
        failed = [r for r in results if r.fetched is None or r.fetched.body is None]
        if failed:
            errors.extend(r.error.message if r.error else f"{r.location}: empty" for r in failed)
            continue
        bodies = [r.fetched.body for r in results if r.fetched is not None and r.fetched.body]
        first = results[0].fetched
        assert first is not None  # every result fetched (checked above)
        try:
            feed = parse_any(
                bodies, source=src.name, as_of=first.modified_at, provider=src.provider
            )
        except CatalogError as exc:
            errors.append(exc.message)
            continue
        owned, info = _owned(src.name, feed, fetched_at=first.fetched_at)
        offers.extend(owned)
        infos.append(info)
    if not infos:
        raise CatalogError(
            "No price source could be read: " + "; ".join(errors),
            hint="Check the path or URL, or drop --catalog to use the configured prices.",
        )
    return Catalog.of(offers, infos)  # screened once, together: a median spans every source
