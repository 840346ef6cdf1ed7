"""Build the bundled snapshot from local copies of the catalogs, through the live adapters.

The offline fallback (``recommender/data/snapshot.json``, docs/feed-format.md "The bundled
snapshot") is meant to be what the live pipeline would have priced: each
``<root>/<cloud>/vms.csv`` (SkyPilot's ``catalogs/v8`` layout) is read by :func:`parse_any`
with the cloud from its folder, the sanity checks (:mod:`recommender.sanity`) drop what they
drop, and the offers left are written as a gpufit feed. The output depends only on the input
bytes and ``as_of``: offers are sorted, numbers are written as parsed, keys in a fixed order.
``scripts/build_snapshot.py`` is the command line.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

from recommender.feeds.detect import parse_any
from recommender.offers import Fabric, Offer
from recommender.sanity import screen

__all__ = ["build_snapshot", "snapshot_document"]

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


def snapshot_document(offers: Iterable[Offer], *, as_of: datetime) -> str:
    """A gpufit feed of ``offers``, sorted, as deterministic JSON text."""
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
    document = {
        "format": "gpufit-feed",
        "version": 1,
        "source": SOURCE,
        "as_of": stamp,
        "offers": [_row(o, stamp) for o in ordered],
    }
    return json.dumps(document, indent=1, ensure_ascii=False) + "\n"


def build_snapshot(root: Path, *, as_of: datetime, clouds: Iterable[str] = ()) -> str:
    """The snapshot of every ``<root>/<cloud>/vms.csv`` (or only ``clouds``)."""
    wanted = set(clouds)
    offers: list[Offer] = []
    for path in sorted(root.glob("*/vms.csv")):
        cloud = path.parent.name
        if wanted and cloud not in wanted:
            continue
        # The label a live feed of this file carries: catalogs/v8/<cloud>/vms.csv.
        label = f"skypilot-catalog v8 {cloud}/vms.csv"
        text = b"".join(
            line
            for line in path.read_bytes().splitlines(keepends=True)
            if not line.startswith(b"#")  # a local copy's provenance comment
        )
        feed = parse_any(text, source=label, as_of=as_of, provider=cloud)
        offers.extend(feed.offers)
    return snapshot_document(screen(offers).offers, as_of=as_of)
