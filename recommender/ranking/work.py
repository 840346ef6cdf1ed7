"""The work every option of a recommendation is priced for, so options compare like for like.

* A token budget is the work: each option's cost is what finishing it costs.
* A duration alone is turned into work on a reference layout: what the duration buys on the
  fastest single node the workload may use, an 8× H100 SXM node whenever one is allowed (the
  most widely listed training node, so the figure is simple to explain and stays put as
  catalogs change). Every option is then priced for that many tokens, and one that takes
  longer than the duration is marked, not hidden. With a money budget too, the work is at
  most what the budget buys on that reference layout at the lowest price it is listed for
  (a week on an 8× H100 node costs far more than "a week, $500" means to spend), and the
  answer says it was capped.
* A money budget alone buys work: each option is priced for the most work the budget buys
  on it (:func:`bought_by`).
* With none of these, options are compared per billion tokens trained (totals stay one day
  of running, :data:`recommender.pricing.economics.DEFAULT_HOURS`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from enum import StrEnum

from recommender.estimation.throughput import Network, tokens_per_hour
from recommender.estimation.topology import Plan
from recommender.pricing.billing import BillingRule, rule_for
from recommender.pricing.catalog import Catalog
from recommender.pricing.costing import Option
from recommender.pricing.economics import economics
from recommender.pricing.offers import Offer
from recommender.ranking.selection import Fitted, allowed, in_regions, shape_of
from recommender.workload import MAX_TOKENS, Workload

__all__ = [
    "REFERENCE_GPU",
    "REFERENCE_GPUS",
    "HoursBasis",
    "Reference",
    "Work",
    "bought_by",
    "reference",
    "work_for",
]

#: The preferred reference node: 8× H100 SXM, listed by nearly every GPU cloud (ours).
REFERENCE_GPU = "H100-SXM-80GB"
REFERENCE_GPUS = 8


class HoursBasis(StrEnum):
    TOKENS = "tokens"  # hours computed from a token budget
    DURATION = "duration"  # the user's stated duration, as work on the reference layout
    DEFAULT = "default"  # nothing stated: compared per billion tokens, one day of running
    BUDGET = "budget"  # a budget alone: each option trains what the budget buys on it


@dataclass(frozen=True, slots=True)
class Reference:
    """The layout a stated duration is turned into tokens on."""

    offer: Offer
    plan: Plan
    tokens_per_hour: float


@dataclass(frozen=True, slots=True)
class Work:
    """What the options are priced for."""

    basis: HoursBasis
    #: Tokens every option trains; ``None`` on the default basis (each trains what one day
    #: buys, and they are compared per billion tokens).
    tokens: float | None = None
    #: The duration the user stated (duration basis).
    duration_hours: float | None = None
    reference: Reference | None = None
    #: The duration bought more than the budget: the work is what the budget buys on the
    #: reference layout instead.
    budget_capped: bool = False


def reference(workload: Workload, fitted: list[Fitted]) -> Reference | None:
    """The reference layout among the offer groups the job fits on
    (:func:`~recommender.ranking.selection.fitted_groups`, of the offers the catalog's sanity checks
    keep): 8× H100 SXM on one node when the job fits there (inside the memory safety margin
    or not), else the single node that trains the most tokens per hour, else (nothing fits
    on one node) the fewest 8× H100 SXM nodes it fits on, else the fastest layout of all;
    among the single nodes, and then among the larger layouts, one that keeps the safety
    margin goes before one that does not.
    Ties go to the offer group listed first (:attr:`Catalog.groups`), represented by its first
    offer in the workload's regions; ``None`` when the job fits nowhere."""
    seen: set[tuple[object, ...]] = set()
    best: tuple[tuple[int, int, int, int, float], Reference] | None = None
    for fit in fitted:
        group, plan, tph = fit.group, fit.plan, fit.tokens_per_hour
        offer = next(o for o in group.offers if in_regions(workload, o))
        if shape_of(offer) in seen:
            continue
        seen.add(shape_of(offer))
        single = plan.nodes == 1
        h100_nodes = plan.gpu_id == REFERENCE_GPU and plan.gpus_per_node == REFERENCE_GPUS
        preferred = single and h100_nodes and plan.gpus == REFERENCE_GPUS
        key = (int(preferred), int(single), int(h100_nodes), int(plan.safe), tph)
        if best is None or key > best[0]:
            best = (key, Reference(offer, plan, tph))
    return None if best is None else best[1]


def work_for(workload: Workload, catalog: Catalog, fitted: list[Fitted]) -> Work:
    """What the options are priced for (see the module docstring)."""
    if workload.tokens is not None:
        return Work(HoursBasis.TOKENS, tokens=workload.tokens)
    duration = workload.duration_hours
    if duration is None:
        return Work(HoursBasis.DEFAULT if workload.budget_usd is None else HoursBasis.BUDGET)
    ref = reference(workload, fitted)
    if ref is None:  # the job fits nowhere: nothing to price either
        return Work(HoursBasis.DURATION, duration_hours=duration)
    tokens = ref.tokens_per_hour * duration
    capped = False
    if workload.budget_usd is not None:
        # At the lowest price the reference shape is listed for among the allowed offers.
        price = min(
            o.price_usd_per_hour
            for group in catalog.groups
            if group.offers[0].gpu_id == ref.offer.gpu_id
            and group.offers[0].gpu_count == ref.offer.gpu_count
            for o in group.offers
            if allowed(workload, o)
        )
        cluster_per_hour = price * ref.plan.nodes
        affordable = workload.budget_usd / cluster_per_hour * ref.tokens_per_hour
        capped = affordable < tokens
        tokens = min(tokens, affordable)
    return Work(
        HoursBasis.DURATION,
        tokens=tokens,
        duration_hours=duration,
        reference=ref,
        budget_capped=capped,
    )


#: Rescalings of the work by budget ÷ cost (cost is nearly linear in tokens), then halvings
#: of the range between the most work found within the budget and the least found over it.
_BUDGET_RESCALES = 6  # ours: within 0.1 % of the budget in 2-3 on the bundled catalog
_BUDGET_HALVINGS = 20  # ours: 2^-20 of the range, far below a billing step


def bought_by(
    budget: float, workload: Workload, priced: Option, rules: Mapping[str, BillingRule]
) -> tuple[Workload, Option]:
    """The most work ``budget`` buys on ``priced``'s plan, and the plan priced for it.

    The budget caps the plan's worst case: a spot plan's pessimistic cost (more preemptions,
    longer waits) stays within it, and so does a fine-tune's at its time range's top (the
    plan's pessimistic hours, :class:`~recommender.pricing.economics.Economics`), so the work
    it buys is what the team can pay for even in a bad week; a pretraining plan on demand has
    its expected cost as its worst case.

    Cost is nearly linear in tokens, so the work is rescaled by budget ÷ cost a few times;
    billing steps (whole hours), minimum charges and the fixed cost of a run keep that from
    landing exactly, so the range between the most work within the budget and the least
    over it is then halved. The work never exceeds the largest a workload may carry (a $1M
    budget on a 1M-parameter model buys more tokens than any run has trained).
    """
    rule = rules.get(priced.offer.provider.lower(), rule_for(priced.offer.provider))
    network = Network.of(priced.offer)

    def priced_for(tokens: float) -> tuple[Workload, Option]:
        bought = replace(workload, tokens=tokens, budget_usd=None)
        econ = economics(
            bought,
            priced.plan,
            rule=rule,
            spot=priced.offer.spot,
            tokens_per_hour=tokens_per_hour(bought, priced.plan, network),
            gpu_id=priced.offer.gpu_id,
        )
        return bought, replace(priced, econ=econ)

    def worst(candidate: tuple[Workload, Option]) -> float:
        return max(candidate[1].expected_cost_usd, candidate[1].spot_worst_cost_usd)

    best: tuple[Workload, Option] | None = None
    low, high = 0.0, MAX_TOKENS  # most tokens within the budget, least over it
    tokens, cost = priced.tokens, max(priced.expected_cost_usd, priced.spot_worst_cost_usd)
    for _ in range(_BUDGET_RESCALES):
        tokens = min(tokens * budget / cost, MAX_TOKENS)
        candidate = priced_for(tokens)
        cost = worst(candidate)
        if cost <= budget and tokens > low:
            low, best = tokens, candidate
        elif cost > budget:
            high = min(high, tokens)
        if cost <= 0 or tokens >= MAX_TOKENS or budget * 0.999 <= cost <= budget:
            break
    for _ in range(_BUDGET_HALVINGS if high < MAX_TOKENS else 0):
        mid = (low + high) / 2
        candidate = priced_for(mid)
        if worst(candidate) <= budget:
            low, best = mid, candidate
        else:
            high = mid
    return best if best is not None else priced_for(low or tokens)
