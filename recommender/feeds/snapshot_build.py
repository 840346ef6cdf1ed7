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
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Any

from recommender.feeds.detect import parse_any
from recommender.pricing.offers import Fabric, Offer
from recommender.pricing.sanity import screen

__all__ = ["REGIONS_KEPT", "build_snapshot", "cheapest_regions", "snapshot_document"]

#: Regions kept per (cloud, GPU, GPU count, market), the cheapest first; why: issue #39 asks
#: for "each type's cheapest few regions" and a snapshot of a few thousand offers at most.
REGIONS_KEPT = 3  # ours

#: The snapshot's ``source``, naming the pipeline (the per-offer ``source`` names the file).
SOURCE = "gpufit bundled snapshot (scripts/build_snapshot.py)"


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
    root: Path, *, as_of: datetime, clouds: Iterable[str] = (), built_by: str | None = None
) -> str:
    """The snapshot of every ``<root>/<cloud>/vms.csv`` (or only ``clouds``).

    Raises:
        ValueError: a named cloud has no ``vms.csv`` under ``root``, or none is there at all.
    """
    paths = {p.parent.name: p for p in sorted(root.glob("*/vms.csv"))}
    wanted = sorted(set(clouds)) or sorted(paths)
    missing = [c for c in wanted if c not in paths]
    if missing or not wanted:
        raise ValueError(f"no <cloud>/vms.csv under {root} for: {', '.join(missing) or 'any'}")
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
