"""From a workload and a catalog to ranked, priced, caveated options, in one pass.

Define the work every option is priced for (:mod:`recommender.work`); keep the offers the
workload allows; find the smallest layout per instance shape that keeps the memory safety
margin; price each offer under its provider's billing rule (all three in
:mod:`recommender.selection`); rank by expected cost per billion tokens, which for the same
work is the expected total cost (or by time to finish when a deadline binds,
:func:`rank_key`); keep what fits the budget and diversify across GPU types and providers.
Only the options shown are built in full, with their caveats as data.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Protocol, TypeVar

from recommender.availability import availability_caveat
from recommender.billing import RULES, BillingRule
from recommender.catalog import Catalog
from recommender.caveats import Caveat
from recommender.costing import Option, caveats_of_source, per_btok, price_option
from recommender.gpus import all_gpus, get_gpu
from recommender.memory import HEADROOM_FRAC, HEADROOM_MIN_GIB
from recommender.offers import Offer, SourceInfo
from recommender.selection import MAX_NODES, Fitted, Priced, allowed, fitted_groups, priced_offers
from recommender.topology import LayoutSearch, Plan
from recommender.units import hours_text
from recommender.work import HoursBasis, Reference, Work, reference
from recommender.workload import Method, Precision, Workload

__all__ = [
    "MAX_NODES",
    "Alternative",
    "BudgetGap",
    "HoursBasis",
    "Option",
    "Ranked",
    "Recommendation",
    "Reference",
    "Work",
    "rank",
    "rank_key",
    "recommend",
]


_R = TypeVar("_R", bound="Ranked")


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

    @property
    def best(self) -> Option | None:
        return self.options[0] if self.options else None


class Ranked(Protocol):
    """What ranking reads of a priced offer or an option."""

    @property
    def offer(self) -> Offer: ...
    @property
    def plan(self) -> Plan: ...
    @property
    def meets_deadline(self) -> bool: ...
    @property
    def wall_hours(self) -> float: ...
    @property
    def expected_cost_usd(self) -> float: ...
    @property
    def price_usd_per_hour(self) -> float: ...
    @property
    def tokens(self) -> float: ...
    @property
    def doubtful(self) -> bool: ...


def rank_key(item: Ranked) -> tuple[float | str | int, ...]:
    """The rank order: plans that keep the memory safety margin before those that do not;
    then offers whose price the catalog's sanity checks do not doubt (an outlier or an
    opt-in zone is shown, after every sound price); then options that meet the deadline, by
    expected cost per billion tokens; the rest by time to finish. Without a deadline every
    option meets it.

    Every option is priced for the same work when the user gave tokens or a duration
    (:mod:`recommender.work`), so cost per token orders them as their total cost does; with
    neither, it compares them on what they train. Either way an option never ranks above
    one that does more work for less money, and slow layouts (CPU offload, PCIe) pay for
    their hours. Ties go to the lower total, the lower cluster price, the faster run, more
    memory headroom, then the offer's provider, instance type, region, zone and spot flag.
    """
    late = not item.meets_deadline
    o = item.offer
    return (
        int(not item.plan.safe),
        int(item.doubtful),
        int(late),
        item.wall_hours if late else per_btok(item.expected_cost_usd, item.tokens),
        item.expected_cost_usd,
        item.price_usd_per_hour,
        item.wall_hours,
        -item.plan.headroom_frac,
        o.provider,
        o.instance_type,
        o.region,
        o.zone,
        int(o.spot),
    )


def rank(options: Iterable[_R]) -> list[_R]:
    """Options (or priced offers) in rank order (see :func:`rank_key`)."""
    return sorted(options, key=rank_key)


def _diversify(ranked: list[_R], top: int) -> list[_R]:
    """Pick ``top`` of the ``ranked``, preferring a new (GPU type, provider) pair over a
    better price: the best of each pair first, in rank order; what is left is filled in rank
    order. Five regions of one instance never crowd out a different GPU or a different cloud.
    """
    pairs: set[tuple[str, str]] = set()
    chosen: list[int] = []
    for i, item in enumerate(ranked):
        pair = (item.offer.gpu_id, item.offer.provider)
        if pair not in pairs:
            pairs.add(pair)
            chosen.append(i)
    chosen = chosen[:top]
    picked = set(chosen)
    for i in range(len(ranked)):
        if len(chosen) >= top:
            break
        if i not in picked:
            chosen.append(i)
    return [ranked[i] for i in sorted(chosen)]


_CHEAPER_METHOD = {Method.PRETRAIN: None, Method.FULL: Method.LORA, Method.LORA: Method.QLORA}


def _alternative(
    workload: Workload, catalog: Catalog, rules: Mapping[str, BillingRule], now: datetime
) -> Alternative | None:
    """The nearest cheaper method (LoRA for a full fine-tune, then QLoRA) whose cheapest
    option fits the budget."""
    method = _CHEAPER_METHOD.get(workload.method)
    while method is not None:
        variant = replace(workload, method=method, precision=Precision.BF16_TRUE)
        fitted = fitted_groups(variant, catalog, LayoutSearch(variant))
        groups = priced_offers(variant, fitted, rules, keep=1)
        within = [p for group in groups for p in group.within]
        if within:
            best = min(within, key=rank_key)
            return Alternative(
                method=method,
                option=_option(variant, best, catalog, rules, now),
                reason=f"{method.label} trains adapters on a frozen base and fits the budget",
            )
        method = _CHEAPER_METHOD.get(method)
    return None


def _option(
    workload: Workload,
    priced: Priced,
    catalog: Catalog,
    rules: Mapping[str, BillingRule],
    now: datetime,
    rank: int = 0,
    target_hours: float | None = None,
) -> Option:
    """The full option (caveats and all) of a priced offer: its own, then the sanity checks'
    (:mod:`recommender.sanity`), the region choice's, and its source's last."""
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
        + of_source
        + _availability(priced.offer, source, now),
        rank=rank,
        target_hours=target_hours,
        doubtful=priced.doubtful,
    )


def _availability(offer: Offer, source: SourceInfo | None, now: datetime) -> tuple[Caveat, ...]:
    """How reliably the offer's shape was listed this week, from its source's listings."""
    if source is None or not source.listings:
        return ()
    caveat = availability_caveat(offer, source.listings, now)
    return () if caveat is None else (caveat,)


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
    # One search per question: its memos (memory figures, layouts, plans) live as long as
    # this call, as do the plan of each instance shape and its rate on each network.
    search = LayoutSearch(workload)
    fitted = fitted_groups(workload, catalog, search)
    work = _work(workload, catalog, fitted)
    # The workload every option is priced on: a duration becomes the tokens it buys on the
    # reference layout (the duration itself is kept to mark the options that take longer).
    priced_w = workload
    target: float | None = None
    if work.tokens is not None and workload.tokens is None:
        priced_w = replace(workload, tokens=work.tokens, duration_hours=None)
        target = work.duration_hours
    # Of each offer group, only the first ``top`` within the budget can be shown (the best
    # of each GPU type and provider, then the best of all): one sort of those.
    groups = priced_offers(priced_w, fitted, rules, keep=top)
    # A plan under the memory safety margin is shown only when nothing safer exists, or
    # when the user fixed the hardware (it then ranks after every safe plan: rank_key).
    # Every offer of a group shares its plan.
    any_safe = any(group.best.plan.safe for group in groups)
    if any_safe and workload.hardware is None:
        groups = [group for group in groups if group.best.plan.safe]
    ranked = rank(p for group in groups for p in group.within)
    feasible = sum(group.feasible for group in groups)
    over_budget: BudgetGap | None = None
    alternative: Alternative | None = None
    if workload.budget_usd is not None and groups and not ranked:
        best = min((group.best for group in groups), key=rank_key)
        cheapest = _option(priced_w, best, catalog, rules, now, target_hours=target)
        over_budget = BudgetGap(workload.budget_usd, cheapest)
    if not ranked:
        alternative = _alternative(priced_w, catalog, rules, now)
    chosen = [
        _option(priced_w, p, catalog, rules, now, rank=i + 1, target_hours=target)
        for i, p in enumerate(_diversify(ranked, top))
    ]
    notes = _notes(work, chosen, any_safe=any_safe)
    # The GPU types the catalog sells, in spec-table order: a recommendation's layouts are
    # for what can be rented (``gpufit estimate`` lists every known GPU).
    per_gpu: tuple[Plan, ...] = ()
    if layouts or not chosen:
        sold = {group.offers[0].gpu_id for group in catalog.groups}
        per_gpu = search.smallest_layouts(g for g in all_gpus() if g.id in sold)
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
    )


def _work(workload: Workload, catalog: Catalog, fitted: list[Fitted]) -> Work:
    """What the options are priced for (see :mod:`recommender.work`)."""
    if workload.tokens is not None:
        return Work(HoursBasis.TOKENS, tokens=workload.tokens)
    duration = workload.duration_hours
    if duration is None:
        return Work(HoursBasis.DEFAULT)
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


def _notes(work: Work, chosen: list[Option], *, any_safe: bool) -> list[str]:
    """What the answer is priced for, and a word when no plan keeps the memory margin."""
    notes: list[str] = []
    if work.basis is HoursBasis.DEFAULT:
        notes.append(
            "no duration or token budget given: options are ranked by cost per billion "
            "tokens trained; totals are for one day of running (say `2 days` or `on 2B tokens`)"
        )
    elif work.basis is HoursBasis.DURATION and work.reference is not None:
        ref, tokens = work.reference, work.tokens or 0.0
        late = sum(o.over_duration for o in chosen)
        marked = f"; {late} shown take longer and are marked" if late else ""
        if work.budget_capped:
            bought = (
                f"what the budget buys within {hours_text(work.duration_hours or 0.0)} on "
                f"{_nodes_text(ref.plan)} (reference): {_fmt_tokens(tokens)} tokens"
            )
        else:
            bought = (
                f"{hours_text(work.duration_hours or 0.0)} ≈ {_fmt_tokens(tokens)} tokens on "
                f"{_nodes_text(ref.plan)} (reference)"
            )
        notes.append(
            f"{bought}; every option is priced for that work{marked}. "
            "Say `on 2B tokens` to set the work yourself"
        )
    if chosen and not any_safe:
        notes.append(
            f"no layout keeps the memory safety margin ({HEADROOM_FRAC * 100:.0f} % of GPU "
            f"memory, at least {HEADROOM_MIN_GIB:.0f} GiB) for this job: the options shown "
            "are tight"
        )
    return notes


def _nodes_text(plan: Plan) -> str:
    """``8× H100 SXM 80GB`` or ``3 nodes × 8 H100 SXM 80GB``."""
    name = get_gpu(plan.gpu_id).name
    if plan.nodes > 1:
        return f"{plan.nodes} nodes × {plan.gpus_per_node} {name}"
    return f"{plan.gpus}× {name}"


def _fmt_tokens(tokens: float) -> str:
    for unit, scale in (("T", 1e12), ("B", 1e9), ("M", 1e6)):
        if tokens >= scale:
            return f"{tokens / scale:.1f}{unit}"
    return f"{tokens:.0f}"
