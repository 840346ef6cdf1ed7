"""Loading the catalog for a face: the bundled snapshot plus any explicit sources."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from recommender import Catalog, CatalogError, SourceInfo
from recommender.feeds import BUNDLED_SOURCE, ParsedFeed, bundled_catalog, owned_by

__all__ = ["BUNDLED_SOURCE", "bundled_catalog", "catalog_from_parsed", "load_sources", "merge"]


def catalog_from_parsed(
    name: str,
    feed: ParsedFeed,
    *,
    fetched_at: datetime | None = None,
    bundled: bool = False,
    fallback_as_of: datetime | None = None,
) -> Catalog:
    """A one-source Catalog whose offers all name ``name`` as their source."""
    as_of = feed.as_of or fetched_at or fallback_as_of
    if as_of is None:
        raise ValueError("a source needs an as-of time")
    offers = tuple(owned_by(o, name) for o in feed.offers)
    info = SourceInfo(
        name=name,
        as_of=as_of,
        fetched_at=fetched_at,
        rows=feed.rows,
        rejected=feed.rejected,
        bundled=bundled,
    )
    return Catalog.of(offers, (info,))


def merge(catalogs: Sequence[Catalog]) -> Catalog:
    """The catalogs as one, screened together."""
    return Catalog.of(
        [o for c in catalogs for o in c.offers], [s for c in catalogs for s in c.sources]
    )


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
    catalogs: list[Catalog] = []
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
        catalogs.append(
            catalog_from_parsed(
                src.name, feed, fetched_at=first.fetched_at, fallback_as_of=first.fetched_at
            )
        )
    if not catalogs:
        raise CatalogError(
            "No price source could be read: " + "; ".join(errors),
            hint="Check the path or URL, or drop --catalog to use the configured prices.",
        )
    return merge(catalogs)
