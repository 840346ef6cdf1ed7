"""Build the bundled snapshot from local copies of the catalogs, through the live adapters.

The offline fallback (``recommender/data/snapshot.json``, docs/feed-format.md "The bundled
snapshot") is what the live pipeline prices from its inputs (``data/catalogs/v8``): each
``<root>/<cloud>/vms.csv`` (SkyPilot's ``catalogs/v8`` layout) is read by :func:`parse_any`
with the cloud from its folder, the sanity checks (:mod:`recommender.pricing.sanity`) drop what they
drop, and the offers left are written as a gpufit feed. A file's leading ``#`` lines (a local
copy's provenance) are not part of the catalog; they are carried into the feed's
``x_inputs``. Of the offers left, each (cloud, GPU, GPU count, market) keeps its
:data:`REGIONS_KEPT` cheapest regions (:func:`cheapest_regions`), every zone of them. The rows
an adapter rejected go into ``x_rejected`` with their reasons, so ``gpufit prices`` can say
why a catalog row is missing. The output depends only on the input bytes, ``as_of`` and
``built_by``: offers are sorted, numbers are written as parsed, keys in a fixed order.
``scripts/build_snapshot.py`` is the command line.

The inputs' ``manifest.csv`` (:func:`read_manifest`) names each file's upstream repository,
path and commit, and the day its rows were read. The catalogs carry no date and the commit
dates cannot be had where the rows were read, so the snapshot is dated by the earliest of those
days (:func:`snapshot_date`): the latest date its prices can have, never a later one.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from recommender.feeds.detect import parse_any
from recommender.pricing.offers import Fabric, Offer
from recommender.pricing.sanity import screen

__all__ = [
    "MANIFEST",
    "REGIONS_KEPT",
    "Input",
    "build_snapshot",
    "cheapest_regions",
    "read_manifest",
    "snapshot_date",
    "snapshot_document",
]

#: Regions kept per (cloud, GPU, GPU count, market), the cheapest first; why: issue #39 asks
#: for "each type's cheapest few regions" and a snapshot of a few thousand offers at most.
REGIONS_KEPT = 3  # ours

#: The snapshot's ``source``, naming the pipeline (the per-offer ``source`` names the file).
SOURCE = "gpufit bundled snapshot (scripts/build_snapshot.py)"

#: The inputs' manifest, beside the ``<cloud>/vms.csv`` files.
MANIFEST = "manifest.csv"

_COLUMNS = ("cloud", "repository", "path", "commit", "read_on")
_COMMIT = re.compile(r"^[0-9a-f]{40}$")


@dataclass(frozen=True)
class Input:
    """One input file's provenance: where its rows come from and the day they were read."""

    cloud: str
    repository: str
    path: str
    commit: str
    read_on: date


def read_manifest(root: Path) -> dict[str, Input]:
    """``root/manifest.csv`` by cloud (``#`` lines are comments).

    Raises:
        ValueError: the file is missing, lacks a column, or a row has a bad commit or date.
    """
    path = root / MANIFEST
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        raise ValueError(f"no {MANIFEST} under {root}: give --as-of") from None
    rows = csv.DictReader(
        io.StringIO(
            "".join(line for line in text.splitlines(keepends=True) if not line.startswith("#"))
        )
    )
    if tuple(rows.fieldnames or ()) != _COLUMNS:
        raise ValueError(f"{MANIFEST}: the header must be {','.join(_COLUMNS)}")
    inputs: dict[str, Input] = {}
    for n, row in enumerate(rows, start=2):
        if not _COMMIT.match(row["commit"]):
            raise ValueError(f"{MANIFEST} row {n}: {row['commit']!r} is not a 40-hex commit")
        try:
            read_on = date.fromisoformat(row["read_on"])
        except ValueError:
            raise ValueError(f"{MANIFEST} row {n}: {row['read_on']!r} is not a date") from None
        inputs[row["cloud"]] = Input(
            row["cloud"], row["repository"], row["path"], row["commit"], read_on
        )
    return inputs


def snapshot_date(inputs: Iterable[Input]) -> datetime:
    """The snapshot's ``as_of``: the earliest day an input's rows were read (midnight UTC).

    A row read on a day was in its catalog on that day, so no input is newer than its day; the
    earliest one is the latest date every price can have.
    """
    days = [i.read_on for i in inputs]
    if not days:
        raise ValueError(f"{MANIFEST} lists none of the inputs")
    return datetime.combine(min(days), datetime.min.time(), tzinfo=UTC)


def _row(offer: Offer, as_of: str) -> dict[str, Any]:
    row: dict[str, Any] = {
        "provider": offer.provider,
        "instance_type": offer.instance_type,
        "gpu": offer.gpu_id,
        "gpu_count": offer.gpu_count,
        "gpu_memory_gib": offer.gpu_memory_gib,
        "price_usd_per_hour": offer.price_usd_per_hour,
        "spot": offer.spot,
        "region": offer.region,
        "zone": offer.zone or None,
        "vcpus": offer.vcpus,
        "ram_gib": offer.ram_gib,
        "intra_node": offer.intra_node.value if offer.intra_node is not None else None,
        "fabric": offer.fabric.value if offer.fabric is not Fabric.NONE else None,
        "fabric_gbps": offer.fabric_gbps,
        "source": offer.source,
        "as_of": as_of,
    }
    return {k: v for k, v in row.items() if v is not None}


def cheapest_regions(offers: Iterable[Offer], keep: int = REGIONS_KEPT) -> list[Offer]:
    """``offers`` in the ``keep`` cheapest regions of each (cloud, GPU, GPU count, market),
    every zone of them, in the order given; a region ranks by its cheapest offer, ties by name.
    The on-demand offers of a region kept for spot are kept too."""
    offers = list(offers)
    best: dict[tuple[str, str, int, bool], dict[str, float]] = {}
    for o in offers:
        regions = best.setdefault((o.provider, o.gpu_id, o.gpu_count, o.spot), {})
        regions[o.region] = min(regions.get(o.region, o.price_usd_per_hour), o.price_usd_per_hour)
    kept: dict[tuple[str, str, int, bool], set[str]] = {
        group: set(sorted(prices, key=lambda r: (prices[r], r))[:keep])
        for group, prices in best.items()
    }
    # A spot offer keeps its region's on-demand offers: its discount is measured against them.
    for (provider, gpu, count, spot), chosen in list(kept.items()):
        on_demand = (provider, gpu, count, False)
        if spot and on_demand in kept:
            kept[on_demand] |= chosen & set(best[on_demand])
    return [o for o in offers if o.region in kept[(o.provider, o.gpu_id, o.gpu_count, o.spot)]]


def snapshot_document(
    offers: Iterable[Offer],
    *,
    as_of: datetime,
    built_by: str | None = None,
    inputs: Mapping[str, str] | None = None,
    rejected: Mapping[str, tuple[int, tuple[str, ...]]] | None = None,
) -> str:
    """A gpufit feed of ``offers``, sorted, as deterministic JSON text.

    ``built_by`` (the command that wrote it), ``inputs`` (each input's provenance, by cloud)
    and ``rejected`` (each cloud's rejected rows: how many, and the adapter's reasons) go into
    the extension keys ``x_built_by``, ``x_inputs`` and ``x_rejected``, which readers ignore.
    """
    stamp = as_of.strftime("%Y-%m-%dT%H:%M:%SZ")
    ordered = sorted(
        offers,
        key=lambda o: (
            o.provider,
            o.instance_type,
            o.gpu_id,
            o.gpu_count,
            o.region,
            o.zone,
            o.spot,
        ),
    )
    document: dict[str, Any] = {
        "format": "gpufit-feed",
        "version": 1,
        "source": SOURCE,
        "as_of": stamp,
    }
    if built_by:
        document["x_built_by"] = built_by
    if inputs:
        document["x_inputs"] = dict(sorted(inputs.items()))
    if rejected:
        document["x_rejected"] = {
            cloud: {"rows": rows, "reasons": list(reasons)}
            for cloud, (rows, reasons) in sorted(rejected.items())
            if rows
        }
    document["offers"] = [_row(o, stamp) for o in ordered]
    return json.dumps(document, indent=1, ensure_ascii=False) + "\n"


def build_snapshot(
    root: Path,
    *,
    as_of: datetime | None = None,
    clouds: Iterable[str] = (),
    built_by: str | None = None,
) -> str:
    """The snapshot of every ``<root>/<cloud>/vms.csv`` (or only ``clouds``), dated ``as_of``
    or, without it, by ``root/manifest.csv`` (:func:`snapshot_date`). Where the manifest is
    there, each input's first line must name the commit the manifest gives it.

    Raises:
        ValueError: a named cloud has no ``vms.csv`` under ``root``, or none is there at all;
            no ``as_of`` and no usable manifest; an input the manifest does not list, or whose
            first line names another commit.
    """
    paths = {p.parent.name: p for p in sorted(root.glob("*/vms.csv"))}
    wanted = sorted(set(clouds)) or sorted(paths)
    missing = [c for c in wanted if c not in paths]
    if missing or not wanted:
        raise ValueError(f"no <cloud>/vms.csv under {root} for: {', '.join(missing) or 'any'}")
    if as_of is None or (root / MANIFEST).exists():
        manifest = read_manifest(root)
        unlisted = [c for c in wanted if c not in manifest]
        if unlisted:
            raise ValueError(f"{MANIFEST} has no row for: {', '.join(unlisted)}")
        for cloud in wanted:
            first = paths[cloud].read_text("utf-8").partition("\n")[0]
            if f"@ {manifest[cloud].commit}" not in first:
                raise ValueError(
                    f"{cloud}/vms.csv: its first line does not name commit "
                    f"{manifest[cloud].commit} that {MANIFEST} gives it"
                )
        if as_of is None:
            as_of = snapshot_date(manifest[c] for c in wanted)
    offers: list[Offer] = []
    inputs: dict[str, str] = {}
    rejected: dict[str, tuple[int, tuple[str, ...]]] = {}
    for cloud in wanted:
        lines = paths[cloud].read_bytes().splitlines(keepends=True)
        comments = [line for line in lines if line.startswith(b"#")]
        if comments:
            inputs[cloud] = " ".join(c.decode("utf-8").lstrip("#").strip() for c in comments)
        # The label a live feed of this file carries: catalogs/v8/<cloud>/vms.csv.
        label = f"skypilot-catalog v8 {cloud}/vms.csv"
        text = b"".join(line for line in lines if not line.startswith(b"#"))
        feed = parse_any(text, source=label, as_of=as_of, provider=cloud)
        offers.extend(feed.offers)
        rejected[cloud] = (feed.rejected, feed.errors)
    return snapshot_document(
        cheapest_regions(screen(offers).offers),
        as_of=as_of,
        built_by=built_by,
        inputs=inputs,
        rejected=rejected,
    )
