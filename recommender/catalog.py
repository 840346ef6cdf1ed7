"""The catalog: every offer gpufit knows of, with its provenance and its sanity screen.

The price sanity checks (:mod:`recommender.sanity`) depend on the whole catalog (a price is
an outlier against its instance's median across regions), so they run once, when a catalog
is made (:meth:`Catalog.of`), and every question reads the offers they keep and the caveats
they attach. ``offers`` stays the catalog as listed, for the faces that list prices.

The offers kept are also grouped once, by what a question computes per group rather than
per offer (:class:`OfferGroup`): offers of one instance shape from one provider, on-demand
or spot, share one layout and one set of economics, so within a group a lower price is a
lower expected cost whatever the workload. Hence, without reading any workload, each region
is represented by its cheapest zone (on a tie, the first zone by name), and the regions
that list an instance at the same price are gathered (:class:`PricePoint`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from recommender.gpus import IntraNode
from recommender.offers import Fabric, Offer, SourceInfo
from recommender.sanity import Screened, screen

__all__ = ["Catalog", "OfferGroup", "PricePoint"]


@dataclass(frozen=True, slots=True)
class PricePoint:
    """One instance type at one price, on-demand or spot: for each region that lists it at
    that price, its cheapest zone; by region name."""

    offers: tuple[Offer, ...]


@dataclass(frozen=True, slots=True)
class OfferGroup:
    """Offers that share one plan and one set of economics: the same instance shape (GPU,
    GPUs per instance, link, fabric, host RAM) from one provider, on-demand or spot."""

    #: Every offer of the group, in catalog order.
    offers: tuple[Offer, ...]
    #: Its instance types' prices, in order of first appearance.
    prices: tuple[PricePoint, ...]


#: What an offer group shares: the shape as listed (with its fabric and its rate), provider
#: and spot flag.
_GroupKey = tuple[str, int, IntraNode | None, Fabric, float | None, float | None, str, bool]


def _group_key(offer: Offer) -> _GroupKey:
    return (
        offer.gpu_id,
        offer.gpu_count,
        offer.intra_node,
        offer.fabric,
        offer.fabric_gbps,
        offer.ram_gib,
        offer.provider,
        offer.spot,
    )


def _group(offers: Sequence[Offer]) -> OfferGroup:
    """The group of ``offers`` (one group key, catalog order)."""
    cheapest: dict[tuple[str, str], Offer] = {}  # (instance type, region) → its cheapest zone
    for o in offers:
        key = (o.instance_type, o.region)
        current = cheapest.get(key)
        if current is None or (o.price_usd_per_hour, o.zone) < (
            current.price_usd_per_hour,
            current.zone,
        ):
            cheapest[key] = o
    points: dict[tuple[str, float], list[Offer]] = {}
    for o in cheapest.values():
        points.setdefault((o.instance_type, o.price_usd_per_hour), []).append(o)
    return OfferGroup(
        offers=tuple(offers),
        prices=tuple(
            PricePoint(tuple(sorted(places, key=lambda o: (o.region, o.zone))))
            for places in points.values()
        ),
    )


@dataclass(frozen=True, slots=True)
class Catalog:
    """All offers gpufit knows of, with their provenance. Make one with :meth:`of`."""

    #: Every offer as listed, in source order.
    offers: tuple[Offer, ...]
    sources: tuple[SourceInfo, ...]
    #: What the sanity checks keep (with their caveats) and drop: what recommendations read.
    screened: Screened
    #: The offers kept, grouped (see the module docstring), in order of first appearance.
    groups: tuple[OfferGroup, ...]

    @classmethod
    def of(cls, offers: Iterable[Offer], sources: Sequence[SourceInfo] = ()) -> Catalog:
        listed = tuple(offers)
        screened = screen(listed)
        by_key: dict[_GroupKey, list[Offer]] = {}
        for o in screened.offers:
            by_key.setdefault(_group_key(o), []).append(o)
        groups = tuple(_group(members) for members in by_key.values())
        return cls(listed, tuple(sources), screened, groups)

    def __len__(self) -> int:
        return len(self.offers)
