"""From a workload and a catalog to ranked, priced, caveated options.

For every instance shape in the catalog the estimator finds the smallest number of whole
nodes the job fits on; billing turns hours into money under the provider's rules (both in
:mod:`recommender.selection`); options are ranked by expected total cost (or by time to
finish when a deadline binds), filtered by budget, diversified across GPU types and
providers, and carry their caveats as data.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum
from functools import partial
from operator import itemgetter

from recommender.billing import RULES, BillingRule
from recommender.caveats import Caveat
from recommender.costing import Option, caveats_of_source, price_option
from recommender.deferred import Deferred
from recommender.gpus import GpuSpec, all_gpus
from recommender.offers import Catalog, SourceInfo
from recommender.selection import (
    MAX_NODES,
    Priced,
    SortKey,
    demoted,
    priced_offers,
    select,
)
from recommender.topology import LayoutSearch, Plan, layout_search
from recommender.workload import Method, Precision, Workload

__all__ = [
    "MAX_NODES",
    "Alternative",
    "BudgetGap",
    "HoursBasis",
    "Option",
    "Recommendation",
    "recommend",
]


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
    #: Per GPU type, the smallest layout the job fits on (no prices); found when first read
    #: (:attr:`layouts`): a Slack answer shows them only when nothing fits.
    smallest: Deferred[tuple[Plan, ...]]
    sources: tuple[SourceInfo, ...]
    generated_at: datetime
    over_budget: BudgetGap | None = None
    alternative: Alternative | None = None
    notes: tuple[str, ...] = ()

    @property
    def best(self) -> Option | None:
        return self.options[0] if self.options else None

    @property
    def layouts(self) -> tuple[Plan, ...]:
        """Per GPU type the catalog sells, the smallest layout the job fits on."""
        return self.smallest.get()


class _Builder:
    """Full :class:`Option` objects (caveat texts and all) for the priced offers shown."""

    def __init__(
        self, catalog: Catalog, *, now: datetime, rules: Mapping[str, BillingRule]
    ) -> None:
        self.sources = {s.name: s for s in catalog.sources}
        self.now = now
        self.rules = rules
        #: Each source's caveats, by source name: the same for every offer of the source.
        self._of_source: dict[str, tuple[Caveat, ...]] = {}

    def option(self, workload: Workload, priced: Priced, rank: int = 0) -> Option:
        _, offer, group = priced
        extra = self._of_source.get(offer.source)
        if extra is None:
            info = self.sources.get(offer.source)
            extra = () if info is None else caveats_of_source(info, self.now)
            self._of_source[offer.source] = extra
        return price_option(
            workload,
            offer,
            group.plan,
            rules=self.rules,
            econ=group.econ,
            extra_caveats=extra,
            rank=rank,
        )


def price_options(
    workload: Workload,
    catalog: Catalog,
    *,
    now: datetime,
    rules: Mapping[str, BillingRule] = RULES,
) -> list[Option]:
    """Every feasible, priced option for the workload, unranked and unfiltered by budget."""
    build = _Builder(catalog, now=now, rules=rules)
    priced = priced_offers(workload, catalog, layout_search(workload), rules)
    return [build.option(workload, p) for p in priced]


# ----------------------------------------------------------------- ranking


def _offload_demoted(workload: Workload, option: Option) -> bool:
    """Whether an option ranks after every option without CPU offload.

    With a fixed duration (or none), cost alone would favour offload on a smaller instance,
    which trains 2-5× fewer tokens in the same hours; gpufit treats offload as a last resort
    unless the user asked for it. With a token budget the time model already charges for it.
    """
    return demoted(workload, option.plan)


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


def _diversify(keyed: list[tuple[SortKey, Priced]], top: int) -> list[Priced]:
    """Pick ``top`` options, preferring a new (GPU type, provider) pair over a better price.

    In rank order, the best option of each (gpu, provider) pair comes first; what is left is
    filled in rank order. Five regions of one instance never crowd out a different GPU or a
    different cloud. Only the pairs' best and the overall top are ever sorted.
    """
    first = itemgetter(0)
    best: dict[tuple[str, str], tuple[SortKey, Priced]] = {}
    for item in keyed:
        pair = item[1][2].pair
        current = best.get(pair)
        if current is None or item[0] < current[0]:
            best[pair] = item
    chosen = sorted(best.values(), key=first)[:top]
    if len(chosen) < top:
        picked = {id(item[1]) for item in chosen}
        for item in heapq.nsmallest(top, keyed, key=first):
            if id(item[1]) not in picked:
                chosen.append(item)
                if len(chosen) == top:
                    break
        chosen.sort(key=first)
    return [item[1] for item in chosen]


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
    build: _Builder,
    *,
    rules: Mapping[str, BillingRule],
) -> Alternative | None:
    method = _CHEAPER_METHOD.get(workload.method)
    while method is not None:
        precision = Precision.BF16_TRUE
        variant = replace(workload, method=method, precision=precision)
        selection = select(variant, catalog, layout_search(variant), rules, 1)
        if selection.feasible:
            best = min(selection.candidates, key=itemgetter(0))[1]
            return Alternative(
                method=method,
                option=build.option(variant, best),
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
    search = layout_search(workload)
    build = _Builder(catalog, now=now, rules=rules)
    selection = select(workload, catalog, search, rules, top)
    over_budget: BudgetGap | None = None
    alternative: Alternative | None = None
    if workload.budget_usd is not None and selection.cheapest is not None:
        over_budget = BudgetGap(workload.budget_usd, build.option(workload, selection.cheapest))
    if not selection.feasible:
        alternative = _alternative(workload, catalog, build, rules=rules)
    chosen = [
        build.option(workload, p, rank=i + 1)
        for i, p in enumerate(_diversify(selection.candidates, top))
    ]
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
        feasible=selection.feasible,
        hours_basis=basis,
        smallest=Deferred(partial(_layouts, search, _catalog_gpus(catalog))),
        sources=catalog.sources,
        generated_at=now,
        over_budget=over_budget,
        alternative=alternative,
        notes=tuple(notes),
    )


def layouts(workload: Workload, gpus: Iterable[GpuSpec] | None = None) -> tuple[Plan, ...]:
    """Smallest layout per GPU type: ``gpus``, or every GPU in the spec table."""
    return _layouts(layout_search(workload), gpus)


def _catalog_gpus(catalog: Catalog) -> tuple[GpuSpec, ...]:
    """The GPU types the catalog sells, in spec-table order: a recommendation's layouts are
    for what can be rented (``gpufit estimate`` still lists every known GPU)."""
    return catalog.index.gpus


def _layouts(search: LayoutSearch, gpus: Iterable[GpuSpec] | None) -> tuple[Plan, ...]:
    if isinstance(gpus, tuple):  # a catalog's GPU types: kept by the (shared) search
        kept = search.layouts.get(gpus)
        if kept is None:
            kept = search.layouts[gpus] = _smallest_layouts(search, gpus)
        return kept
    return _smallest_layouts(search, gpus)


def _smallest_layouts(search: LayoutSearch, gpus: Iterable[GpuSpec] | None) -> tuple[Plan, ...]:
    out: list[Plan] = []
    hw = search.workload.hardware
    for gpu in gpus if gpus is not None else all_gpus():
        if hw is not None and hw.gpu_id is not None and gpu.id != hw.gpu_id:
            continue
        if hw is not None and hw.count is not None:
            out.append(search.evaluate(gpu, gpus=hw.count))
            continue
        plan = search.smallest_layout(gpu)
        if plan is not None:
            out.append(plan)
    return tuple(out)


def _fmt_tokens(tokens: float) -> str:
    for unit, scale in (("T", 1e12), ("B", 1e9), ("M", 1e6)):
        if tokens >= scale:
            return f"{tokens / scale:.1f}{unit}"
    return f"{tokens:.0f}"
