"""From a workload and a catalog to its priced offers: the first half of a recommendation.

Offers the workload rules out (provider, spot policy, named hardware, region) are dropped;
every instance shape left gets the smallest layout the job fits on, and that layout its
training rate on the offer's network (one plan per shape and one rate per network, for this
question only: :func:`fitted_groups`); each offer is then priced under its provider's billing
rule (:mod:`recommender.pricing.costing`): offers of one shape from one provider, on-demand or spot,
share one plan and one set of economics, so an offer's expected cost is two multiplications
and an addition. :mod:`recommender.ranking.recommend` ranks what comes out.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import NamedTuple

from recommender.estimation.scaling import MAX_NODES, MIN_HOURS_TO_SCALE, Scaled, ShapeScaling
from recommender.estimation.throughput import Network
from recommender.estimation.topology import LayoutSearch, Plan
from recommender.gpus import IntraNode
from recommender.pricing.billing import BillingRule, rule_for
from recommender.pricing.catalog import Catalog, OfferGroup
from recommender.pricing.costing import Option
from recommender.pricing.economics import RESERVE_FROM_NODES, Economics, checkpoint_gib, economics
from recommender.pricing.offers import Offer
from recommender.ranking.caveats import Caveat, CaveatKind, Severity
from recommender.ranking.objective import ObjectiveKind, PlanObjective, objective_of
from recommender.workload import SpotPolicy, Workload

__all__ = [
    "FASTEST_COST_FACTOR",
    "MAX_NODES",
    "Fitted",
    "PricedGroup",
    "Runs",
    "allowed",
    "allows_shape",
    "choose_nodes",
    "fitted_groups",
    "in_regions",
    "priced_offers",
    "shape_plan",
]

#: A faster node count is listed beside the chosen one while it costs at most this multiple
#: of it: the answer's "fastest sensible" plan (ours: half as much again).
FASTEST_COST_FACTOR = 1.5

#: What an offer's plan depends on: GPU, GPUs per instance, link, fast fabric, host RAM.
_Shape = tuple[str, int, IntraNode, bool, float | None]


def allowed(workload: Workload, offer: Offer) -> bool:
    """Whether the workload allows the offer: its provider, spot policy, named hardware and
    regions (prefixes such as ``us-east`` or ``eu``)."""
    return allows_shape(workload, offer) and in_regions(workload, offer)


def allows_shape(workload: Workload, offer: Offer) -> bool:
    """:func:`allowed` but for the region: what every offer of an
    :class:`~recommender.pricing.catalog.OfferGroup` shares (provider, kind, GPU and GPU count)."""
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
    """An offer group the workload allows and the job fits on, with the node counts its
    shape can run it on (:class:`~recommender.estimation.scaling.ShapeScaling`): the fewest
    first."""

    group: OfferGroup
    scaling: ShapeScaling

    @property
    def base(self) -> Scaled:
        """The fewest nodes the job fits on, with its rate."""
        assert self.scaling.base is not None  # fitted_groups keeps only groups that fit
        return self.scaling.base

    @property
    def plan(self) -> Plan:
        return self.base.plan

    @property
    def tokens_per_hour(self) -> float:
        return self.base.tokens_per_hour


def fitted_groups(workload: Workload, catalog: Catalog, search: LayoutSearch) -> list[Fitted]:
    """The offer groups (:class:`~recommender.pricing.catalog.OfferGroup`) the workload allows, with
    an offer in its regions, that the job fits on, in catalog order.

    A plan depends only on the instance shape (GPU, GPUs per instance, link, fast fabric,
    host RAM) and a rate only on the plan and the network, not on the work asked (tokens,
    duration, budget), so groups of one shape and network share one
    :class:`~recommender.estimation.scaling.ShapeScaling` for this question.
    """
    scalings: dict[tuple[_Shape, Network], ShapeScaling] = {}
    out: list[Fitted] = []
    for group in catalog.groups:
        offer = group.offers[0]
        if not allows_shape(workload, offer):
            continue
        if workload.regions and not any(in_regions(workload, o) for o in group.offers):
            continue
        key = (shape_of(offer), Network.of(offer))
        if key not in scalings:
            scalings[key] = ShapeScaling(workload, search, offer)
        if scalings[key].base is not None:
            out.append(Fitted(group, scalings[key]))
    return out


def shape_of(offer: Offer) -> _Shape:
    """What an offer's plan depends on: GPU, GPUs per instance, link, fast fabric, host RAM."""
    return (offer.gpu_id, offer.gpu_count, offer.link, offer.fabric.fast, offer.ram_gib)


class PricedGroup(NamedTuple):
    """One offer group's priced offers (:func:`priced_offers`)."""

    #: Its best offer, within the budget or not.
    best: Option
    #: Its first offers within the budget (all of them without one), in rank order, as
    #: many as were asked for.
    within: list[Option]
    #: How many of its offers are within the budget.
    feasible: int
    #: Its best offer on every node count priced, fewest nodes first (the chosen one
    #: among them): what the answer's fastest sensible plan is picked from.
    scaled: list[Option]


def priced_offers(
    workload: Workload,
    fitted: list[Fitted],
    rules: Mapping[str, BillingRule],
    *,
    keep: int,
    objective: PlanObjective | None = None,
    ranged: bool = True,
) -> list[PricedGroup]:
    """Per offer group the job fits on (:func:`fitted_groups`), its allowed offers, priced,
    one per (instance, spot, price): of the allowed regions that list it
    at that price, the first by name, at its cheapest zone
    (:class:`~recommender.pricing.catalog.PricePoint`); with a caveat naming the others when there
    are some (Lambda lists one price everywhere). The workload's regions, when it names
    some, have already narrowed the choice to the user's geography.

    Each group runs on the node count :func:`choose_nodes` picks for the ``objective``
    (the workload's own by default) at the group's best price; every offer of the group
    shares that plan and its economics, so an offer's expected cost is two multiplications
    and an addition. Only the offers the catalog's sanity checks keep are priced
    (:func:`recommender.pricing.sanity.screen`). A group's offers come in rank order (its price
    points' order), so only its best and its first ``keep`` within the workload's budget
    can be shown; the rest are counted. ``ranged`` as for
    :func:`~recommender.pricing.economics.economics`.
    """
    goal = objective or objective_of(workload)
    ckpt = checkpoint_gib(workload)
    # A budget alone buys work: every offer is priced for what it buys (work.bought_work), so
    # none is over it; with set work, offers over the budget are counted out.
    budget = None if goal.kind is ObjectiveKind.MOST_WORK_FOR_BUDGET else workload.budget_usd
    out: list[PricedGroup] = []
    for group, scaling in fitted:
        shape = group.offers[0]
        rule = rules.get(shape.provider.lower(), rule_for(shape.provider))

        def econ_of(scaled: Scaled, shape: Offer = shape, rule: BillingRule = rule) -> Economics:
            return economics(
                workload,
                scaled.plan,
                rule=rule,
                spot=shape.spot,
                tokens_per_hour=scaled.tokens_per_hour,
                checkpoint_size_gib=ckpt,
                gpu_id=shape.gpu_id,
                ranged=ranged,
            )

        points = [
            (point, places)
            for point in group.prices
            if (places := _in_regions(workload, point.offers))
        ]
        if not points:
            continue
        first = points[0][1][0]
        runs = choose_nodes(scaling, econ_of, goal, first.price_usd_per_hour, budget)
        plan, econ = runs.chosen
        best: Option | None = None
        within: list[Option] = []
        feasible = 0
        for point, places in points:
            expected = econ.expected_cost_usd(places[0].price_usd_per_hour)
            fits_budget = budget is None or expected <= budget
            feasible += fits_budget
            if best is None or (fits_budget and len(within) < keep):
                priced = Option(places[0], plan, econ, _regions_note(places), point.doubtful)
                best = best or priced
                if fits_budget and len(within) < keep:
                    within.append(priced)
        assert best is not None  # points is not empty
        scaled = [Option(first, p, e, doubtful=best.doubtful) for p, e in runs.priced]
        out.append(PricedGroup(best, within, feasible, scaled))
    return out


def _in_regions(workload: Workload, places: tuple[Offer, ...]) -> tuple[Offer, ...]:
    if not workload.regions:
        return places
    return tuple(o for o in places if in_regions(workload, o))


class Runs(NamedTuple):
    """The node counts priced for one offer group, and the one chosen."""

    chosen: tuple[Plan, Economics]
    #: Every count priced, fewest nodes first.
    priced: list[tuple[Plan, Economics]]


def choose_nodes(
    scaling: ShapeScaling,
    econ_of: Callable[[Scaled], Economics],
    objective: PlanObjective,
    price_usd_per_hour: float,
    budget_usd: float | None,
) -> Runs:
    """The node count an offer group runs on, at its best price:

    * with a deadline, the fewest nodes whose pessimistic hours meet it (powers of two,
      then bisection between the last that missed and the first that met); when none
      meets it, the count whose cost plus its pessimistic hours at the value of time is least;
    * otherwise the count with the best :meth:`PlanObjective.score` within the budget
      (the cheapest count when none is within it), stopping once two counts in a row
      score worse than the best.

    Counts beyond the chosen one are priced while they cost at most
    :data:`FASTEST_COST_FACTOR` × the chosen one and the count before took longer than
    :data:`~recommender.estimation.scaling.MIN_HOURS_TO_SCALE`, for the answer's fastest sensible
    plan.
    """
    priced: list[tuple[Plan, Economics]] = []

    def cost(econ: Economics) -> float:
        return econ.expected_cost_usd(price_usd_per_hour)

    def score(econ: Economics) -> float:
        return objective.score(
            expected_cost_usd=cost(econ),
            worst_cost_usd=econ.spot_worst_cost_usd(price_usd_per_hour),
            wall_hours=econ.finish_hours,
            worst_wall_hours=econ.spot_worst_finish_hours,
            tokens=econ.tokens,
        )

    def rank(econ: Economics) -> tuple[int, float]:
        over = budget_usd is not None and cost(econ) > budget_usd
        return (int(over), cost(econ) if over else score(econ))

    deadline = objective.kind is ObjectiveKind.CHEAPEST_MEETING_DEADLINE
    chosen: tuple[Plan, Economics] | None = None
    worse = 0
    previous: Scaled | None = None
    for scaled in scaling.counts():
        econ = econ_of(scaled)
        if chosen is not None:
            # Past the chosen count: faster only while it costs little more, and never to
            # save time on a run that already takes under MIN_HOURS_TO_SCALE.
            if cost(econ) > FASTEST_COST_FACTOR * cost(chosen[1]):
                break
            if priced[-1][1].wall_hours <= MIN_HOURS_TO_SCALE:
                break
            priced.append((scaled.plan, econ))
            if not deadline:
                if rank(econ) < rank(chosen[1]):
                    chosen, worse = (scaled.plan, econ), 0
                else:
                    worse += 1
                    if worse >= 2:
                        break
            continue
        if deadline and not econ.meets_deadline and previous is not None and econ.lead_hours:
            # This count needs a reservation, whose lead may be what makes it late: the most
            # nodes below it that need none may still meet the deadline.
            unreserved = scaling.at(min(scaled.nodes, RESERVE_FROM_NODES) - 1)
            if unreserved is not None and unreserved.nodes > previous.nodes:
                unreserved_econ = econ_of(unreserved)
                if unreserved_econ.meets_deadline:
                    scaled, econ = unreserved, unreserved_econ
        if deadline and econ.meets_deadline and previous is not None:
            # Fewer nodes between the last count that missed and this one may meet it too.
            low, high = previous.nodes, scaled.nodes
            while high - low > 1:
                mid = (low + high) // 2
                between = scaling.at(mid)
                mid_econ = econ_of(between) if between is not None else None
                if between is not None and mid_econ is not None and mid_econ.meets_deadline:
                    high, scaled, econ = mid, between, mid_econ
                else:
                    low = mid
        priced.append((scaled.plan, econ))
        if not deadline or econ.meets_deadline:
            chosen = (scaled.plan, econ)
        previous = scaled
    if chosen is None:
        # A deadline no count meets: the count that trades cost against lateness best at
        # the stated value of time. A reserved cluster's day of lead makes 4 and 1,024 nodes
        # finish nearly together; an hour sooner is not worth thousands of dollars more.
        per_hour = objective.time_value_usd_per_day / 24
        chosen = min(
            priced,
            key=lambda run: (
                cost(run[1]) + per_hour * run[1].pessimistic_finish_hours,
                run[0].nodes,
            ),
        )
    priced.sort(key=lambda run: run[0].nodes)
    return Runs(chosen, priced)


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
    base = ShapeScaling(search.workload, search, offer).base
    return None if base is None else base.plan
