"""A catalog's offers grouped for pricing: what every question about the catalog shares.

Offers of one instance shape from one provider, on-demand or spot, share one plan and one
set of economics for any workload, so a question prices groups, not offers. Each group keeps
its zone winners (the cheapest zone per provider, instance, region and spot flag, as the
options list them) sorted by (price, instance type, region, zone), which within a group is
rank order. Nothing here depends on a workload: a :class:`~recommender.offers.Catalog`
builds its index once, on first use, and keeps it for its lifetime (``Catalog.index``).
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from typing import TYPE_CHECKING

from recommender.errors import UnknownGpuError
from recommender.gpus import GpuSpec, IntraNode, all_gpus, get_gpu

if TYPE_CHECKING:
    from recommender.offers import Fabric, Offer

__all__ = ["CatalogIndex", "GroupKey", "OfferGroup", "ShapeKey", "build_index"]

#: Consecutive distinct prices inside one group must differ by at least this fraction for the
#: index's order to be the cost order exactly; why: ``billed × price × nodes + storage`` then
#: cannot round two prices to one cost (float64 rounds at ~1e-16; real prices have ≤ 6
#: decimals, gaps ≥ 1e-7 relative).
MIN_PRICE_GAP = 1e-9

#: What an offer's plan depends on: GPU, GPUs per instance, link, fast fabric, host RAM.
ShapeKey = tuple[str, int, IntraNode, bool, float | None]
#: What a group shares: the shape as listed (intra-node link and fabric), provider and spot.
GroupKey = tuple[str, int, "IntraNode | None", "Fabric", float | None, str, bool]
#: A zone: one option per (provider, instance type, region, spot flag).
_ZoneKey = tuple[str, str, str, bool]


class OfferGroup:
    """One group's zone winners in rank order, and what a question reads of its shape."""

    __slots__ = (
        "fast",
        "gpu",
        "link",
        "offers",
        "prices",
        "provider",
        "regions",
        "representative",
        "shape",
    )

    def __init__(self, representative: Offer, winners: list[Offer]) -> None:
        #: The group's first offer in catalog order: its shape, provider and spot flag.
        self.representative = representative
        winners.sort(key=lambda o: (o.price_usd_per_hour, o.instance_type, o.region, o.zone))
        self.offers = tuple(winners)
        self.prices = tuple(o.price_usd_per_hour for o in winners)
        self.regions = tuple(o.region for o in winners)
        self.gpu: GpuSpec = get_gpu(representative.gpu_id)
        self.link = representative.link
        self.fast = representative.fabric.fast
        #: The provider id as billing rules are keyed (lower case).
        self.provider = representative.provider.lower()
        self.shape: ShapeKey = (
            representative.gpu_id,
            representative.gpu_count,
            self.link,
            self.fast,
            representative.ram_gib,
        )


class CatalogIndex:
    """A catalog's groups, and the GPU types it sells."""

    __slots__ = ("gpus", "groups")

    def __init__(self, groups: tuple[OfferGroup, ...] | None, gpus: tuple[GpuSpec, ...]) -> None:
        #: ``None`` when grouping would not reproduce a linear scan of the offers exactly
        #: (one instance type in two shapes, prices too close to order by cost, or a GPU id
        #: the spec table does not know, which the scan reports only if a question reaches it).
        self.groups = groups
        #: The GPU types the catalog sells, in spec-table order.
        self.gpus = gpus


def build_index(offers: Sequence[Offer]) -> CatalogIndex:
    """Group ``offers`` (see the module docstring)."""
    sold = {o.gpu_id for o in offers}
    gpus = tuple(gpu for gpu in all_gpus() if gpu.id in sold)
    return CatalogIndex(_groups(offers), gpus)


def _groups(offers: Sequence[Offer]) -> tuple[OfferGroup, ...] | None:
    members: dict[GroupKey, list[tuple[float, str, int, Offer]]] = {}
    owner: dict[_ZoneKey, GroupKey] = {}
    zoned: dict[_ZoneKey, list[tuple[float, str, int, Offer]]] = {}
    for position, o in enumerate(offers):
        key = (o.gpu_id, o.gpu_count, o.intra_node, o.fabric, o.ram_gib, o.provider, o.spot)
        zone_key = (o.provider, o.instance_type, o.region, o.spot)
        entry = (o.price_usd_per_hour, o.zone, position, o)
        members.setdefault(key, []).append(entry)
        if owner.setdefault(zone_key, key) != key:
            return None  # the same instance in two shapes: dedupe crosses groups
        zoned.setdefault(zone_key, []).append(entry)
    for entries in members.values():
        prices = sorted({e[0] for e in entries})
        if any(b - a < a * MIN_PRICE_GAP for a, b in pairwise(prices)):
            return None
    winners: dict[GroupKey, list[Offer]] = {key: [] for key in members}
    for zone_key, entries in zoned.items():
        # Cheapest zone; equal price and zone: the first in catalog order (as the scan keeps).
        winners[owner[zone_key]].append(min(entries, key=lambda e: (e[0], e[1], e[2]))[3])
    try:
        return tuple(OfferGroup(members[key][0][3], winners[key]) for key in members)
    except UnknownGpuError:
        return None
