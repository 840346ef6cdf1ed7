"""The catalog: every offer gpufit knows of, with its provenance and its sanity screen.

The price sanity checks (:mod:`recommender.pricing.sanity`) depend on the whole catalog (a price is
an outlier against its instance's median across regions), so they run once, when a catalog
is made (:meth:`Catalog.of`), and every question reads the offers they keep and the caveats
they attach. ``offers`` stays the catalog as listed, for the faces that list prices.

The offers kept are also grouped once, by what a question computes per group rather than
per offer (:class:`OfferGroup`): offers of one instance shape from one provider, on-demand
or spot, share one layout and one set of economics, so within a group a lower price is a
lower expected cost whatever the workload. Hence, without reading any workload, each region
is represented by its cheapest zone (on a tie, the first zone by name; a zone whose price
the sanity checks doubt only when the region has no other), and the regions that list an
instance at the same price are gathered (:class:`PricePoint`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from recommender.gpus import IntraNode
from recommender.pricing.offers import Fabric, Offer, SourceInfo
from recommender.pricing.sanity import Screened, screen

__all__ = ["Catalog", "OfferGroup", "PricePoint"]


@dataclass(frozen=True, slots=True)
class PricePoint:
    """One instance type at one price, on-demand or spot: for each region that lists it at
    that price, its cheapest zone; by region name."""

    offers: tuple[Offer, ...]
    #: The sanity checks doubt this price (:func:`recommender.pricing.sanity.doubtful`).
    doubtful: bool = False


@dataclass(frozen=True, slots=True)
class OfferGroup:
    """Offers that share one plan and one set of economics: the same instance shape (GPU,
    GPUs per instance, link, fabric, host RAM) from one provider, on-demand or spot."""

    #: Every offer of the group, in catalog order.
    offers: tuple[Offer, ...]
    #: Its instance types' prices in the order they rank: sound prices before doubted ones,
    #: then by price, then by instance type.
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


def _group(offers: Sequence[Offer], doubtful: frozenset[str]) -> OfferGroup:
    """The group of ``offers`` (one group key, catalog order); ``doubtful`` holds the keys
    of offers whose price the sanity checks doubt. A region is represented by its cheapest
    zone with a sound price, else by its cheapest zone."""

    def order(o: Offer) -> tuple[bool, float, str]:
        return (o.key in doubtful, o.price_usd_per_hour, o.zone)

    cheapest: dict[tuple[str, str], Offer] = {}  # (instance type, region) → its zone shown
    for o in offers:
        current = cheapest.get((o.instance_type, o.region))
        if current is None or order(o) < order(current):
            cheapest[(o.instance_type, o.region)] = o
    # Offers of one group share a plan and economics, so they rank among themselves as
    # recommender.ranking.recommend.rank_key does: sound prices first, then by price, then by name.
    points: dict[tuple[bool, float, str], list[Offer]] = {}
    for o in cheapest.values():
        flagged, price, _ = order(o)
        points.setdefault((flagged, price, o.instance_type), []).append(o)
    return OfferGroup(
        offers=tuple(offers),
        prices=tuple(
            PricePoint(tuple(sorted(places, key=lambda o: (o.region, o.zone))), flagged)
            for (flagged, _, _), places in sorted(points.items())
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
        groups = tuple(_group(members, screened.doubtful) for members in by_key.values())
        return cls(listed, tuple(sources), screened, groups)

    def __len__(self) -> int:
        return len(self.offers)
