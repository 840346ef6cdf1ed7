"""From a workload and a catalog to ranked, priced, caveated options, in one pass.

Read the objective the question asks for (:mod:`recommender.ranking.objective`: a deadline, a
duration, a budget, owned GPUs, or time counted at its value); define the work every option
is priced for (:mod:`recommender.ranking.work`); keep the offers the workload allows; find the
fewest nodes per instance shape that keep the memory safety margin and the node counts it
can scale out to (:mod:`recommender.estimation.scaling`); price each offer group on the node count
the objective picks under its provider's billing rule (:mod:`recommender.ranking.selection`); rank
by the objective's score (:func:`rank_key`); keep what fits the budget and diversify across GPU
types and providers. Only the options shown are built in full, with their caveats as data; the
answer also names the fastest sensible and the cheapest plans when they differ from the first, and
says why when there is no option (:mod:`recommender.ranking.explain`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import datetime

from recommender.estimation.throughput import Network, tokens_per_hour
from recommender.estimation.topology import LayoutSearch, Plan
from recommender.gpus import all_gpus, get_gpu
from recommender.pricing.availability import availability_caveat
from recommender.pricing.billing import RULES, BillingRule
from recommender.pricing.catalog import Catalog
from recommender.pricing.costing import Option, caveats_of_source, price_option
from recommender.pricing.economics import checkpoint_gib, economics
from recommender.pricing.offers import OWNED_PROVIDER, SourceInfo
from recommender.pricing.owned import OWNED_RULE, owned_offer
from recommender.ranking.caveats import Caveat, CaveatKind, Severity
from recommender.ranking.explain import answer_notes, why_empty
from recommender.ranking.objective import (
    ObjectiveKind,
    PlanObjective,
    objective_of,
)
from recommender.ranking.order import (
    diversify,
    fastest_and_cheapest,
    rank,
    rank_key,
    spot_risk,
    sure_cost,
)
from recommender.ranking.selection import (
    MAX_NODES,
    PricedGroup,
    fitted_groups,
    priced_offers,
)
from recommender.ranking.work import HoursBasis, Reference, Work, bought_by, work_for
from recommender.workload import HardwareRequest, Method, Precision, Workload

__all__ = [
    "MAX_NODES",
    "Alternative",
    "BudgetGap",
    "HoursBasis",
    "Option",
    "Recommendation",
    "Reference",
    "Work",
    "rank",
    "rank_key",
    "recommend",
]


@dataclass(frozen=True, slots=True)
class BudgetGap:
    budget_usd: float
    cheapest: Option

    @property
    def gap_usd(self) -> float:
        return self.cheapest.expected_cost_usd - self.budget_usd


@dataclass(frozen=True, slots=True)
class Alternative:
    """A cheaper way to do nearly the same thing, offered when the asked one does not fit."""

    method: Method
    option: Option
    reason: str


@dataclass(frozen=True, slots=True)
class Recommendation:
    workload: Workload
    options: tuple[Option, ...]
    #: How many feasible options exist in all (``options`` is the diversified top).
    feasible: int
    hours_basis: HoursBasis
    #: Per GPU type the catalog sells, the smallest layout the job fits on (no prices).
    #: With ``recommend(..., layouts=False)`` they are listed only when no option is.
    layouts: tuple[Plan, ...]
    sources: tuple[SourceInfo, ...]
    generated_at: datetime
    over_budget: BudgetGap | None = None
    alternative: Alternative | None = None
    notes: tuple[str, ...] = ()
    #: What every option is priced for (the same work for all, or per billion tokens).
    work: Work | None = None
    #: What the ranking optimised (:mod:`recommender.ranking.objective`).
    objective: PlanObjective | None = None
    #: The fastest plan costing at most FASTEST_COST_FACTOR × the first, when it is
    #: markedly faster than the first (often the same offer on more nodes).
    fastest: Option | None = None
    #: The cheapest plan, when the objective ranked a dearer one first (time has value).
    cheapest: Option | None = None
    #: Why there is no option, one cause a line (empty when there are options).
    empty_reasons: tuple[str, ...] = ()

    @property
    def best(self) -> Option | None:
        return self.options[0] if self.options else None

    #: When no option is shown: per GPU type sold (the one named, if any), the smallest
    #: layout that would hold the job, on as many GPUs as that takes even where the user
    #: fixed a count (``layouts`` evaluates that count as is, fitting or not).
    holding_layouts: tuple[Plan, ...] = ()


_CHEAPER_METHOD = {Method.PRETRAIN: None, Method.FULL: Method.LORA, Method.LORA: Method.QLORA}


def _alternative(
    workload: Workload, catalog: Catalog, rules: Mapping[str, BillingRule], now: datetime
) -> Alternative | None:
    """The nearest cheaper method (LoRA for a full fine-tune, then QLoRA) whose cheapest
    option fits the budget."""
    method = _CHEAPER_METHOD.get(workload.method)
    while method is not None:
        variant = replace(workload, method=method, precision=Precision.BF16_TRUE)
        objective = objective_of(variant)
        fitted = fitted_groups(variant, catalog, LayoutSearch(variant))
        groups = priced_offers(variant, fitted, rules, keep=1, objective=objective)
        within = [p for group in groups for p in group.within]
        if within:
            best = min(within, key=lambda p: rank_key(p, objective))
            return Alternative(
                method=method,
                option=_option(variant, best, catalog, rules, now),
                reason=f"{method.label} trains adapters on a frozen base and fits the budget",
            )
        method = _CHEAPER_METHOD.get(method)
    return None


def _option(
    workload: Workload,
    priced: Option,
    catalog: Catalog,
    rules: Mapping[str, BillingRule],
    now: datetime,
    rank: int = 0,
    target_hours: float | None = None,
    extra: tuple[Caveat, ...] = (),
) -> Option:
    """The full option (caveats and all) of a priced offer: its own, then the sanity checks'
    (:mod:`recommender.pricing.sanity`), the region choice's, ``extra``, and its source's last."""
    offer = priced.offer
    source = {s.name: s for s in catalog.sources}.get(offer.source)
    screened = catalog.screened.caveats.get(offer.key, ())
    of_source = () if source is None else caveats_of_source(source, now)
    return price_option(
        workload,
        offer,
        priced.plan,
        rules=rules,
        econ=priced.econ,
        extra_caveats=screened
        + priced.caveats
        + extra
        + of_source
        + _availability(priced, source, now),
        rank=rank,
        target_hours=target_hours,
        doubtful=priced.doubtful,
    )


def _availability(priced: Option, source: SourceInfo | None, now: datetime) -> tuple[Caveat, ...]:
    """How reliably the offer's shape was listed this week, from its source's listings; a
    multi-node plan without such a signal says its capacity is unknown."""
    offer, nodes = priced.offer, priced.plan.nodes
    caveat = None
    if source is not None and source.listings:
        caveat = availability_caveat(offer, source.listings, now)
    if caveat is not None:
        return (caveat,)
    if nodes > 1:
        return (
            Caveat(
                CaveatKind.AVAILABILITY,
                Severity.WARN,
                f"no listing history for {offer.instance_type} in {offer.region}: whether "
                f"{nodes} can be had at once is unknown until {offer.provider} confirms",
            ),
        )
    return ()


def _owned(
    workload: Workload, priced_w: Workload, search: LayoutSearch, *, ranged: bool
) -> Option | None:
    """The team's own GPUs priced at $0, on a plan that may not fit (``None`` unless the
    question says it has them); ``ranged`` as for :func:`economics`."""
    hw = workload.hardware
    if not workload.owned or hw is None or hw.gpu_id is None or hw.count is None:
        return None
    offer = owned_offer(hw)
    plan = search.evaluate(get_gpu(hw.gpu_id), gpus=hw.count, gpus_per_node=offer.gpu_count)
    rate = tokens_per_hour(priced_w, plan, Network.of(offer))
    econ = economics(
        priced_w,
        plan,
        rule=OWNED_RULE,
        spot=False,
        tokens_per_hour=rate,
        checkpoint_size_gib=checkpoint_gib(priced_w),
        gpu_id=offer.gpu_id,
        ranged=ranged,
    )
    return Option(offer, plan, econ)


def recommend(
    workload: Workload,
    catalog: Catalog,
    *,
    now: datetime,
    top: int = 5,
    rules: Mapping[str, BillingRule] = RULES,
    layouts: bool = True,
) -> Recommendation:
    """The ranked, diversified, budget-checked answer for a workload.

    Args:
        workload: the parsed job.
        catalog: offers with their sources.
        now: the current time (for price ages); the domain never reads the clock.
        top: how many options to return.
        rules: billing rules by provider id.
        layouts: list the smallest layout per GPU type sold even when options are shown
            (the JSON answer does); with ``False`` they are listed only when no option is,
            the one case a chat answer shows them, and their searches are skipped otherwise.
    """
    if top < 1:
        raise ValueError("top must be at least 1")
    rules = {**rules, OWNED_PROVIDER: OWNED_RULE}
    # Owned GPUs are the team's own: rented offers may be any GPU (to meet a deadline), and
    # are chosen and ranked as the question would rank them without the owned GPUs.
    rented = replace(workload, hardware=None, owned=False) if workload.owned else workload
    objective = objective_of(rented)
    # One search per question: plans and rates per instance shape live as long as it.
    search = LayoutSearch(rented)
    fitted = fitted_groups(rented, catalog, search)
    work = work_for(rented, catalog, fitted)
    # The workload every option is priced on: a duration becomes the tokens it buys on the
    # reference layout (the duration itself is kept to mark the options that take longer).
    priced_w = rented
    target: float | None = None
    if work.tokens is not None and workload.tokens is None:
        priced_w = replace(rented, tokens=work.tokens, duration_hours=None)
        target = work.duration_hours
    # Work a duration buys stops when the duration is up: no time range (economics).
    ranged = target is None
    groups = priced_offers(priced_w, fitted, rules, keep=top, objective=objective, ranged=ranged)
    # A plan under the memory safety margin is shown only when nothing safer exists, or
    # when the user fixed the hardware (it then ranks after every safe plan: rank_key).
    any_safe = any(group.best.plan.safe for group in groups)
    if any_safe and rented.hardware is None:
        groups = [group for group in groups if group.best.plan.safe]
    candidates = [p for group in groups for p in group.within]
    owned = _owned(
        workload,
        replace(priced_w, hardware=workload.hardware),
        LayoutSearch(workload),
        ranged=ranged,
    )
    owned_fits = owned is not None and owned.plan.fits
    if owned is not None and owned_fits:
        if owned.meets_deadline:
            candidates, groups = [], []  # the team's GPUs do it in time: nothing to rent
        candidates.append(owned)
    sure = sure_cost(candidates, objective)
    ranked = rank(candidates, objective, sure)
    feasible = sum(group.feasible for group in groups) + int(owned_fits)
    over_budget: BudgetGap | None = None
    alternative: Alternative | None = None
    if workload.budget_usd is not None and groups and not ranked:
        best = min((group.best for group in groups), key=lambda p: rank_key(p, objective))
        cheapest = _option(priced_w, best, catalog, rules, now, target_hours=target)
        over_budget = BudgetGap(workload.budget_usd, cheapest)
    if not ranked:
        alternative = _alternative(priced_w, catalog, rules, now)
    shown = diversify(ranked, top)
    if owned_fits and owned is not None and owned not in shown:
        shown = [*shown[: top - 1], owned]
    chosen = [
        _build(priced_w, p, objective, sure, catalog, rules, now, rank=i + 1, target=target)
        for i, p in enumerate(shown)
    ]
    quick, cheap = fastest_and_cheapest(
        chosen, [p for g in groups for p in g.scaled], ranked, objective, sure
    )
    fastest_option, cheapest_option = (
        None
        if p is None
        else _build(priced_w, p, objective, sure, catalog, rules, now, target=target)
        for p in (quick, cheap)
    )
    notes = answer_notes(
        work,
        chosen,
        any_safe=any_safe,
        objective=objective,
        owned_plan=None if owned is None else owned.plan,
        unbounded=_unbounded(priced_w, groups, chosen, objective, catalog, rules, now, target),
        dataset_tokens=workload.dataset_tokens,
    )
    # The GPU types the catalog sells, in spec-table order: a recommendation's layouts are
    # for what can be rented (``gpufit estimate`` lists every known GPU).
    per_gpu: tuple[Plan, ...] = ()
    sold = {group.offers[0].gpu_id for group in catalog.groups}
    if layouts or not chosen:
        per_gpu = search.smallest_layouts(g for g in all_gpus() if g.id in sold)
    holding: tuple[Plan, ...] = ()
    empty: tuple[str, ...] = ()
    if not chosen:
        holding = tuple(p for p in per_gpu if p.fits)
        hw = rented.hardware
        if hw is not None and hw.count is not None:  # what it would take without the count
            free = None if hw.gpu_id is None else HardwareRequest(hw.gpu_id, None)
            relaxed = LayoutSearch(replace(rented, hardware=free))
            holding = relaxed.smallest_layouts(g for g in all_gpus() if g.id in sold)
        empty = why_empty(rented, catalog, fitted, [g.best for g in groups], holding, objective)
    return Recommendation(
        workload=workload,
        options=tuple(chosen),
        feasible=feasible,
        hours_basis=work.basis,
        layouts=per_gpu,
        sources=catalog.sources,
        generated_at=now,
        over_budget=over_budget,
        alternative=alternative,
        notes=tuple(notes),
        work=work,
        objective=objective_of(workload),
        fastest=fastest_option,
        cheapest=cheapest_option,
        empty_reasons=empty,
        holding_layouts=holding,
    )


def _unbounded(
    workload: Workload,
    groups: list[PricedGroup],
    chosen: list[Option],
    objective: PlanObjective,
    catalog: Catalog,
    rules: Mapping[str, BillingRule],
    now: datetime,
    target: float | None,
) -> Option | None:
    """With a budget and set work, the plan that would come first without the budget, when
    it is not the first: what the plan within the budget gives up."""
    if objective.kind is not ObjectiveKind.CHEAPEST_WITHIN_BUDGET or not chosen or not groups:
        return None
    best = min((g.best for g in groups), key=lambda p: rank_key(p, objective))
    if best.offer == chosen[0].offer and best.plan.nodes == chosen[0].nodes:
        return None
    return _option(workload, best, catalog, rules, now, target_hours=target)


def _build(
    workload: Workload,
    priced: Option,
    objective: PlanObjective,
    sure: float | None,
    catalog: Catalog,
    rules: Mapping[str, BillingRule],
    now: datetime,
    *,
    rank: int = 0,
    target: float | None = None,
) -> Option:
    """One option as shown: with a budget alone, priced for the work the budget buys on it;
    a spot option says what its risk buys against the sure plan (for the work it is shown
    with, so a budget's run has its own worst case)."""
    if objective.kind is ObjectiveKind.MOST_WORK_FOR_BUDGET and priced.expected_cost_usd > 0:
        workload, priced = bought_by(objective.budget_usd or 0.0, workload, priced, rules)
    extra = spot_risk(priced, sure, objective)
    return _option(workload, priced, catalog, rules, now, rank, target, extra)
