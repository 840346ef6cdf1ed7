"""The price snapshot that ships inside the package, so a fresh install answers offline.

``recommender/data/snapshot.json`` is a gpufit feed (docs/feed-format.md, "The bundled
snapshot"): the output of ``scripts/build_snapshot.py`` over real SkyPilot catalog rows
(``data/catalogs/v8``), through the live adapters and sanity checks; each offer names its
catalog file. It is the offline fallback; live feeds are the default. Its ``as_of`` is old by
the time anyone reads it, and answers built on it must say so (``SourceInfo.bundled``).
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources

from recommender.errors import CatalogError
from recommender.feeds.base import ParsedFeed, owned_by
from recommender.feeds.native import parse_native
from recommender.pricing.catalog import Catalog
from recommender.pricing.offers import SourceInfo

__all__ = ["BUNDLED_SOURCE", "bundled_catalog", "load_bundled"]

#: The name the bundled snapshot goes by in errors, ``feed status`` and answers' footers.
BUNDLED_SOURCE = "bundled snapshot"

_RESOURCE = "data/snapshot.json"


@cache
def load_bundled() -> ParsedFeed:
    """Parse the bundled snapshot (once per process; the result is immutable).

    Raises:
        CatalogError: the packaged file is missing or broken (a packaging bug).
    """
    try:
        data = resources.files("recommender").joinpath(_RESOURCE).read_bytes()
    except OSError as exc:
        raise CatalogError(
            f"The bundled price snapshot ({_RESOURCE}) is missing from the installed package: "
            f"{exc.strerror or exc}.",
            source=BUNDLED_SOURCE,
            hint="Reinstall gpufit, or point it at a live feed with --catalog.",
        ) from None
    return parse_native(data, source=BUNDLED_SOURCE)


def _built_rejections() -> tuple[int, tuple[str, ...]]:
    """The catalog rows ``scripts/build_snapshot.py`` rejected (its ``x_rejected`` key): how
    many, and the adapters' reasons, each prefixed with its cloud."""
    data = json.loads(resources.files("recommender").joinpath(_RESOURCE).read_bytes())
    rejected = data.get("x_rejected") or {}
    rows = sum(int(entry.get("rows", 0)) for entry in rejected.values())
    reasons = tuple(
        f"{cloud} {reason}" for cloud, entry in rejected.items() for reason in entry["reasons"]
    )
    return rows, reasons


@cache
def bundled_catalog() -> Catalog:
    """The bundled snapshot as a one-source catalog, the only place it is built.

    Every offer names :data:`BUNDLED_SOURCE` as its source (the snapshot's own citation of
    where the price was read is kept in ``citation``), and the source is dated by the
    snapshot's ``as_of`` and marked ``bundled``, so answers say the prices are not live.

    Raises:
        CatalogError: the packaged file is missing or broken (a packaging bug).
    """
    parsed = load_bundled()
    assert parsed.as_of is not None  # a gpufit feed always states as_of
    rows, reasons = _built_rejections()
    info = SourceInfo(
        name=BUNDLED_SOURCE,
        as_of=parsed.as_of,
        rows=parsed.rows + rows,
        rejected=parsed.rejected + rows,
        rejections=reasons,
        bundled=True,
    )
    return Catalog.of((owned_by(o, BUNDLED_SOURCE) for o in parsed.offers), (info,))
