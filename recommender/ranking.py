"""From a workload and a catalog to ranked, priced, caveated options.

For every instance shape in the catalog the estimator finds the smallest number of whole
nodes the job fits on; billing turns hours into money under the provider's rules; options
are ranked by expected total cost (or by time to finish when a deadline binds), filtered by
budget, diversified across GPU types and providers, and carry their caveats as data.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum

from recommender.billing import RULES, BillingRule
from recommender.costing import Option, price_option, source_caveats
from recommender.gpus import GpuSpec, IntraNode, all_gpus, get_gpu
from recommender.offers import Catalog, Offer, SourceInfo
from recommender.topology import Plan, evaluate, fit_on_nodes, smallest_layout
from recommender.workload import Method, Offload, Precision, SpotPolicy, Workload

__all__ = [
    "Alternative",
    "BudgetGap",
    "HoursBasis",
    "Option",
    "Recommendation",
    "recommend",
]

# Largest cluster gpufit will propose for a single job.
MAX_NODES = 64  # ours: beyond 512 GPUs the answer is a sales conversation, not a rental


class HoursBasis(StrEnum):
    TOKENS = "tokens"  # hours computed from a token budget
    DURATION = "duration"  # the user's stated duration
    DEFAULT = "default"  # nothing stated: one day, for comparison


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
    #: Per GPU type, the smallest layout the job fits on (no prices).
    layouts: tuple[Plan, ...]
    sources: tuple[SourceInfo, ...]
    generated_at: datetime
    over_budget: BudgetGap | None = None
    alternative: Alternative | None = None
    notes: tuple[str, ...] = ()

    @property
    def best(self) -> Option | None:
        return self.options[0] if self.options else None


# ----------------------------------------------------------------- filtering


def _offer_allowed(workload: Workload, offer: Offer) -> bool:
    if workload.providers and offer.provider.lower() not in workload.providers:
        return False
    if workload.regions:
        region = offer.region.lower()
        if not any(region.startswith(prefix) for prefix in workload.regions):
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


# ----------------------------------------------------------------- planning


_ShapeKey = tuple[str, int, IntraNode, bool, float | None]


def _plan_for_shape(workload: Workload, offer: Offer, gpu: GpuSpec) -> Plan | None:
    hw = workload.hardware
    fast = offer.fabric.fast
    if hw is not None and hw.count is not None:
        nodes = hw.count // offer.gpu_count
        plan = evaluate(
            workload,
            gpu,
            gpus=hw.count,
            gpus_per_node=offer.gpu_count,
            host_ram_gib=offer.ram_gib,
        )
        if nodes > 1 and not fast:
            return None
        return plan if plan.fits else None
    return fit_on_nodes(
        workload,
        gpu,
        gpus_per_node=offer.gpu_count,
        max_nodes=MAX_NODES,
        multi_node=fast,
        host_ram_gib=offer.ram_gib,
    )


# ----------------------------------------------------------------- ranking


def _offload_demoted(workload: Workload, option: Option) -> bool:
    """Whether an option ranks after every option without CPU offload.

    With a fixed duration (or none), cost alone would favour offload on a smaller instance,
    which trains 2-5× fewer tokens in the same hours; gpufit treats offload as a last resort
    unless the user asked for it. With a token budget the time model already charges for it.
    """
    return (
        workload.tokens is None
        and workload.offload is None
        and option.plan.strategy.offload is not Offload.NONE
    )


def _sort_key(workload: Workload, option: Option, by_time: bool) -> tuple[float | str | int, ...]:
    o = option.offer
    primary = option.expected_hours if by_time else option.expected_cost_usd
    return (
        0 if option.meets_deadline else 1,
        int(_offload_demoted(workload, option)),
        primary,
        option.expected_cost_usd,
        option.price_usd_per_hour,
        o.provider,
        o.instance_type,
        o.region,
        o.zone,
        int(o.spot),
    )


def _diversify(ranked: Sequence[Option], top: int) -> list[Option]:
    """Pick ``top`` options, preferring a new (GPU type, provider) pair over a better price.

    The first pass takes the best option of each (gpu, provider) pair in rank order; the
    second pass fills what is left in rank order. Five regions of one instance never crowd
    out a different GPU or a different cloud.
    """
    chosen: list[Option] = []
    seen: set[tuple[str, str]] = set()
    for option in ranked:
        pair = (option.offer.gpu_id, option.offer.provider)
        if pair not in seen:
            seen.add(pair)
            chosen.append(option)
        if len(chosen) == top:
            break
    if len(chosen) < top:
        picked = {id(o) for o in chosen}
        for option in ranked:
            if id(option) not in picked:
                chosen.append(option)
                if len(chosen) == top:
                    break
    order = {id(o): i for i, o in enumerate(ranked)}
    chosen.sort(key=lambda o: order[id(o)])
    return chosen


def _dedupe_zones(options: Iterable[Option]) -> list[Option]:
    """Keep one option per (provider, instance, region, spot): the cheapest zone."""
    best: dict[tuple[str, str, str, bool], Option] = {}
    for option in options:
        o = option.offer
        key = (o.provider, o.instance_type, o.region, o.spot)
        current = best.get(key)
        if current is None or (option.expected_cost_usd, o.zone) < (
            current.expected_cost_usd,
            current.offer.zone,
        ):
            best[key] = option
    return list(best.values())


def price_options(
    workload: Workload,
    catalog: Catalog,
    *,
    now: datetime,
    rules: Mapping[str, BillingRule] = RULES,
) -> list[Option]:
    """Every feasible, priced option for the workload, unranked and unfiltered by budget."""
    plans: dict[_ShapeKey, Plan | None] = {}
    sources = {s.name: s for s in catalog.sources}
    options: list[Option] = []
    for offer in catalog.offers:
        if not _offer_allowed(workload, offer):
            continue
        key: _ShapeKey = (
            offer.gpu_id,
            offer.gpu_count,
            offer.link,
            offer.fabric.fast,
            offer.ram_gib,
        )
        if key not in plans:
            plans[key] = _plan_for_shape(workload, offer, get_gpu(offer.gpu_id))
        plan = plans[key]
        if plan is None:
            continue
        option = price_option(workload, offer, plan, rules=rules)
        extra = source_caveats(option, sources, now)
        if extra:
            option = replace(option, caveats=option.caveats + extra)
        options.append(option)
    return _dedupe_zones(options)


def rank(workload: Workload, options: Iterable[Option]) -> list[Option]:
    """Options in rank order: deadline-meeting first, then cost (or time, when it binds)."""
    by_time = workload.deadline_hours is not None
    ranked = sorted(options, key=lambda o: _sort_key(workload, o, by_time))
    if by_time and any(o.meets_deadline for o in ranked):
        # When a deadline binds, the cheapest option that meets it leads; the rest follow.
        meeting = sorted(
            (o for o in ranked if o.meets_deadline), key=lambda o: _sort_key(workload, o, False)
        )
        missing = [o for o in ranked if not o.meets_deadline]
        ranked = meeting + missing
    return ranked


_CHEAPER_METHOD = {Method.PRETRAIN: None, Method.FULL: Method.LORA, Method.LORA: Method.QLORA}


def _alternative(
    workload: Workload,
    catalog: Catalog,
    *,
    now: datetime,
    rules: Mapping[str, BillingRule],
) -> Alternative | None:
    method = _CHEAPER_METHOD.get(workload.method)
    while method is not None:
        precision = Precision.BF16_TRUE
        variant = replace(workload, method=method, precision=precision)
        options = [
            o
            for o in price_options(variant, catalog, now=now, rules=rules)
            if workload.budget_usd is None or o.expected_cost_usd <= workload.budget_usd
        ]
        if options:
            best = rank(variant, options)[0]
            return Alternative(
                method=method,
                option=best,
                reason=f"{method.label} trains adapters on a frozen base and fits the budget",
            )
        method = _CHEAPER_METHOD.get(method)
    return None


def recommend(
    workload: Workload,
    catalog: Catalog,
    *,
    now: datetime,
    top: int = 5,
    rules: Mapping[str, BillingRule] = RULES,
) -> Recommendation:
    """The ranked, diversified, budget-checked answer for a workload.

    Args:
        workload: the parsed job.
        catalog: offers with their sources.
        now: the current time (for price ages); the domain never reads the clock.
        top: how many options to return.
        rules: billing rules by provider id.
    """
    if top < 1:
        raise ValueError("top must be at least 1")
    options = price_options(workload, catalog, now=now, rules=rules)
    ranked = rank(workload, options)
    over_budget: BudgetGap | None = None
    alternative: Alternative | None = None
    if workload.budget_usd is not None:
        within = [o for o in ranked if o.expected_cost_usd <= workload.budget_usd]
        if not within and ranked:
            over_budget = BudgetGap(workload.budget_usd, ranked[0])
        ranked = within
    if not ranked:
        alternative = _alternative(workload, catalog, now=now, rules=rules)
    chosen = _diversify(ranked, top)
    chosen = [replace(o, rank=i + 1) for i, o in enumerate(chosen)]
    if workload.tokens is not None:
        basis = HoursBasis.TOKENS
    elif workload.duration_hours is not None:
        basis = HoursBasis.DURATION
    else:
        basis = HoursBasis.DEFAULT
    notes: list[str] = []
    if basis is HoursBasis.DEFAULT:
        notes.append(
            "no duration or token budget given: costs are for one day of running "
            "(say `2 days` or `on 2B tokens`)"
        )
    elif basis is HoursBasis.DURATION and chosen:
        fastest = max(chosen, key=lambda o: o.tokens)
        notes.append(
            "priced for the stated duration; options differ in how much they train in it "
            f"(most: #{fastest.rank}, ~{_fmt_tokens(fastest.tokens)} tokens). "
            "Say `on 2B tokens` to price a token budget instead"
        )
    return Recommendation(
        workload=workload,
        options=tuple(chosen),
        feasible=len(ranked),
        hours_basis=basis,
        layouts=layouts(workload),
        sources=catalog.sources,
        generated_at=now,
        over_budget=over_budget,
        alternative=alternative,
        notes=tuple(notes),
    )


def layouts(workload: Workload, gpus: Iterable[GpuSpec] | None = None) -> tuple[Plan, ...]:
    """Smallest layout per GPU type (data-centre NVIDIA parts and the workload's own GPU)."""
    out: list[Plan] = []
    hw = workload.hardware
    for gpu in gpus if gpus is not None else all_gpus():
        if hw is not None and hw.gpu_id is not None and gpu.id != hw.gpu_id:
            continue
        if hw is not None and hw.count is not None:
            out.append(evaluate(workload, gpu, gpus=hw.count))
            continue
        plan = smallest_layout(workload, gpu)
        if plan is not None:
            out.append(plan)
    return tuple(out)


def _fmt_tokens(tokens: float) -> str:
    for unit, scale in (("T", 1e12), ("B", 1e9), ("M", 1e6)):
        if tokens >= scale:
            return f"{tokens / scale:.1f}{unit}"
    return f"{tokens:.0f}"
