"""From a workload and a catalog to its priced offers: the first half of a recommendation.

Offers the workload rules out (provider, spot policy, named hardware, region) are dropped;
every instance shape left gets the smallest layout the job fits on, and that layout its
training rate on the offer's network (one plan per shape and one rate per network, for this
question only: :func:`fitted_groups`); each offer is then priced under its provider's billing
rule (:mod:`recommender.costing`): offers of one shape from one provider, on-demand or spot,
share one plan and one set of economics, so an offer's expected cost is two multiplications
and an addition. :mod:`recommender.ranking` ranks what comes out.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from recommender.billing import BillingRule, rule_for
from recommender.catalog import Catalog, OfferGroup
from recommender.caveats import Caveat, CaveatKind, Severity
from recommender.economics import Economics, checkpoint_gib, economics
from recommender.gpus import IntraNode, get_gpu
from recommender.offers import Offer
from recommender.throughput import Network, tokens_per_hour
from recommender.topology import LayoutSearch, Plan
from recommender.workload import SpotPolicy, Workload

__all__ = [
    "MAX_NODES",
    "Fitted",
    "Priced",
    "PricedGroup",
    "allowed",
    "allows_shape",
    "fitted_groups",
    "in_regions",
    "priced_offers",
    "shape_plan",
]

# Largest cluster gpufit will propose for a single job.
MAX_NODES = 64  # ours: beyond 512 GPUs the answer is a sales conversation, not a rental

#: What an offer's plan depends on: GPU, GPUs per instance, link, fast fabric, host RAM.
_Shape = tuple[str, int, IntraNode, bool, float | None]


class Priced(NamedTuple):
    """An offer the job fits on, with its plan and what the run costs on it."""

    offer: Offer
    plan: Plan
    econ: Economics
    expected_cost_usd: float
    #: What the region choice says of it (the sanity checks' caveats are the catalog's).
    caveats: tuple[Caveat, ...] = ()
    #: The sanity checks doubt its price (:func:`recommender.sanity.doubtful`).
    doubtful: bool = False

    @property
    def meets_deadline(self) -> bool:
        return self.econ.meets_deadline

    @property
    def wall_hours(self) -> float:
        return self.econ.wall_hours

    @property
    def price_usd_per_hour(self) -> float:
        """Cluster price per hour (all nodes)."""
        return self.offer.price_usd_per_hour * self.econ.nodes

    @property
    def tokens(self) -> float:
        return self.econ.tokens


def allowed(workload: Workload, offer: Offer) -> bool:
    """Whether the workload allows the offer: its provider, spot policy, named hardware and
    regions (prefixes such as ``us-east`` or ``eu``)."""
    return allows_shape(workload, offer) and in_regions(workload, offer)


def allows_shape(workload: Workload, offer: Offer) -> bool:
    """:func:`allowed` but for the region: what every offer of an
    :class:`~recommender.catalog.OfferGroup` shares (provider, kind, GPU and GPU count)."""
    if workload.providers and offer.provider.lower() not in workload.providers:
        return False
    if workload.spot is SpotPolicy.NEVER and offer.spot:
        return False
    if workload.spot is SpotPolicy.ONLY and not offer.spot:
        return False
    hw = workload.hardware
    if hw is not None:
        if hw.gpu_id is not None and offer.gpu_id != hw.gpu_id:
            return False
        if hw.count is not None and hw.count % offer.gpu_count:
            return False  # cannot rent part of an instance, nor a non-whole number of them
    return True


def in_regions(workload: Workload, offer: Offer) -> bool:
    """Whether the offer's region is one the workload names (any, when it names none)."""
    if not workload.regions:
        return True
    region = offer.region.lower()
    return any(region.startswith(prefix) for prefix in workload.regions)


class Fitted(NamedTuple):
    """An offer group the workload allows and the job fits on, with the group's plan and its
    training rate (tokens per hour) on the group's network."""

    group: OfferGroup
    plan: Plan
    tokens_per_hour: float


def fitted_groups(workload: Workload, catalog: Catalog, search: LayoutSearch) -> list[Fitted]:
    """The offer groups (:class:`~recommender.catalog.OfferGroup`) the workload allows, with
    an offer in its regions, that the job fits on, in catalog order.

    A plan depends only on the instance shape (GPU, GPUs per instance, link, fast fabric,
    host RAM) and a rate only on the plan and the network, not on the work asked (tokens,
    duration, budget), so the reference layout (:mod:`recommender.work`) and the pricing
    share them: one plan per shape and one rate per (shape, network), for this question.
    """
    plans: dict[_Shape, Plan | None] = {}
    rates: dict[tuple[_Shape, Network], float] = {}
    out: list[Fitted] = []
    for group in catalog.groups:
        offer = group.offers[0]
        if not allows_shape(workload, offer):
            continue
        if workload.regions and not any(in_regions(workload, o) for o in group.offers):
            continue
        shape = shape_of(offer)
        if shape not in plans:
            plans[shape] = shape_plan(search, offer)
        plan = plans[shape]
        if plan is None:
            continue
        network = Network.of(offer)
        if (shape, network) not in rates:
            rates[shape, network] = tokens_per_hour(workload, plan, network)
        out.append(Fitted(group, plan, rates[shape, network]))
    return out


def shape_of(offer: Offer) -> _Shape:
    """What an offer's plan depends on: GPU, GPUs per instance, link, fast fabric, host RAM."""
    return (offer.gpu_id, offer.gpu_count, offer.link, offer.fabric.fast, offer.ram_gib)


class PricedGroup(NamedTuple):
    """One offer group's priced offers (:func:`priced_offers`)."""

    #: Its best offer, within the budget or not.
    best: Priced
    #: Its first offers within the budget (all of them without one), in rank order, as
    #: many as were asked for.
    within: list[Priced]
    #: How many of its offers are within the budget.
    feasible: int


def priced_offers(
    workload: Workload,
    fitted: list[Fitted],
    rules: Mapping[str, BillingRule],
    *,
    keep: int,
) -> list[PricedGroup]:
    """Per offer group the job fits on (:func:`fitted_groups`), its allowed offers, priced,
    one per (instance, spot, price): of the allowed regions that list it
    at that price, the first by name, at its cheapest zone
    (:class:`~recommender.catalog.PricePoint`); with a caveat naming the others when there
    are some (Lambda lists one price everywhere). The workload's regions, when it names
    some, have already narrowed the choice to the user's geography.

    Only the offers the catalog's sanity checks keep are priced
    (:func:`recommender.sanity.screen`); each offer group gets one plan and one set of
    economics, so an offer's expected cost is two multiplications and an addition. A
    group's offers come in rank order (its price points' order), so only its best and its
    first ``keep`` within the workload's budget can be shown; the rest are counted.
    """
    ckpt = checkpoint_gib(workload)
    budget = workload.budget_usd
    out: list[PricedGroup] = []
    for group, plan, rate in fitted:
        shape = group.offers[0]
        econ = economics(
            workload,
            plan,
            rule=rules.get(shape.provider.lower(), rule_for(shape.provider)),
            spot=shape.spot,
            tokens_per_hour=rate,
            checkpoint_size_gib=ckpt,
            gpu_id=shape.gpu_id,
        )
        best: Priced | None = None
        within: list[Priced] = []
        feasible = 0
        for point in group.prices:
            places = point.offers
            if workload.regions:
                places = tuple(o for o in places if in_regions(workload, o))
                if not places:
                    continue
            expected = econ.expected_cost_usd(places[0].price_usd_per_hour)
            fits_budget = budget is None or expected <= budget
            feasible += fits_budget
            if best is None or (fits_budget and len(within) < keep):
                priced = Priced(
                    places[0], plan, econ, expected, _regions_note(places), point.doubtful
                )
                best = best or priced
                if fits_budget and len(within) < keep:
                    within.append(priced)
        if best is not None:
            out.append(PricedGroup(best, within, feasible))
    return out


def _regions_note(places: tuple[Offer, ...]) -> tuple[Caveat, ...]:
    """The offer shown is the first of ``places``; a caveat names the others, if any."""
    if len(places) < 2:
        return ()
    regions = [o.region for o in places]
    shown = ", ".join(regions[:4]) + (", …" if len(regions) > 4 else "")
    text = f"same price in {len(regions)} regions ({shown}); {places[0].region} shown"
    return (Caveat(CaveatKind.ZONE, Severity.INFO, text),)


def shape_plan(search: LayoutSearch, offer: Offer) -> Plan | None:
    """The fewest whole nodes of the offer's instance shape the job fits on, more than one
    only over a fast fabric; a GPU count the workload names is evaluated as is."""
    return search.fit_on_nodes(
        get_gpu(offer.gpu_id),
        gpus_per_node=offer.gpu_count,
        max_nodes=MAX_NODES,
        multi_node=offer.fabric.fast,
        host_ram_gib=offer.ram_gib,
    )
