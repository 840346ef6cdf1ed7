"""From a workload and a catalog to ranked, priced, caveated options, in one pass.

Keep the offers the workload allows; find the smallest layout per instance shape; price
each offer under its provider's billing rule (all three in :mod:`recommender.selection`);
rank by expected total cost (or by time to finish when a deadline binds,
:func:`rank_key`); keep what fits the budget and diversify across GPU types and providers.
Only the options shown are built in full, with their caveats as data.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum
from functools import partial
from typing import Protocol, TypeVar

from recommender.billing import RULES, BillingRule
from recommender.costing import Option, caveats_of_source, price_option
from recommender.gpus import all_gpus
from recommender.offers import Catalog, Offer, SourceInfo
from recommender.selection import MAX_NODES, Priced, priced_offers
from recommender.topology import LayoutSearch, Plan
from recommender.workload import Method, Offload, Precision, Workload

__all__ = [
    "MAX_NODES",
    "Alternative",
    "BudgetGap",
    "HoursBasis",
    "Option",
    "Ranked",
    "Recommendation",
    "rank",
    "rank_key",
    "recommend",
]


_R = TypeVar("_R", bound="Ranked")


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
    #: Per GPU type the catalog sells, the smallest layout the job fits on (no prices).
    layouts: tuple[Plan, ...]
    sources: tuple[SourceInfo, ...]
    generated_at: datetime
    over_budget: BudgetGap | None = None
    alternative: Alternative | None = None
    notes: tuple[str, ...] = ()

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


def rank_key(workload: Workload, item: Ranked) -> tuple[float | str | int, ...]:
    """The rank order: options that meet the deadline first, by expected cost; the rest by
    time to finish. Without a deadline every option meets it, and all go by cost.

    CPU offload ranks after every option without it, unless the user asked for offload or
    gave a token budget: with a fixed duration (or none), cost alone would favour offload on
    a smaller instance, which trains 2-5× fewer tokens in the same hours; with a token
    budget the time model already charges for it. Ties go to the lower cluster price, then
    the offer's provider, instance type, region, zone and spot flag.
    """
    late = not item.meets_deadline
    offload_last = (
        workload.tokens is None
        and workload.offload is None
        and item.plan.strategy.offload is not Offload.NONE
    )
    o = item.offer
    return (
        int(late),
        int(offload_last),
        item.wall_hours if late else item.expected_cost_usd,
        item.expected_cost_usd,
        item.price_usd_per_hour,
        o.provider,
        o.instance_type,
        o.region,
        o.zone,
        int(o.spot),
    )


def rank(workload: Workload, options: Iterable[_R]) -> list[_R]:
    """Options (or priced offers) in rank order (see :func:`rank_key`)."""
    return sorted(options, key=partial(rank_key, workload))


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
        priced = priced_offers(variant, catalog, LayoutSearch(variant), rules)
        within = _within_budget(variant, priced)
        if within:
            best = min(within, key=partial(rank_key, variant))
            return Alternative(
                method=method,
                option=_option(variant, best, catalog, rules, now),
                reason=f"{method.label} trains adapters on a frozen base and fits the budget",
            )
        method = _CHEAPER_METHOD.get(method)
    return None


def _within_budget(workload: Workload, priced: list[Priced]) -> list[Priced]:
    budget = workload.budget_usd
    if budget is None:
        return priced
    return [p for p in priced if p.expected_cost_usd <= budget]


def _option(
    workload: Workload,
    priced: Priced,
    catalog: Catalog,
    rules: Mapping[str, BillingRule],
    now: datetime,
    rank: int = 0,
) -> Option:
    """The full option (caveats and all) of a priced offer, its source's caveats last."""
    source = {s.name: s for s in catalog.sources}.get(priced.offer.source)
    return price_option(
        workload,
        priced.offer,
        priced.plan,
        rules=rules,
        econ=priced.econ,
        extra_caveats=() if source is None else caveats_of_source(source, now),
        rank=rank,
    )


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
    # One search per question: its memos (memory figures, one plan per instance shape)
    # live as long as this call.
    search = LayoutSearch(workload)
    ranked = rank(workload, priced_offers(workload, catalog, search, rules))
    within = _within_budget(workload, ranked)
    over_budget: BudgetGap | None = None
    alternative: Alternative | None = None
    if workload.budget_usd is not None and ranked and not within:
        cheapest = _option(workload, ranked[0], catalog, rules, now)
        over_budget = BudgetGap(workload.budget_usd, cheapest)
    if not within:
        alternative = _alternative(workload, catalog, rules, now)
    chosen = [
        _option(workload, p, catalog, rules, now, rank=i + 1)
        for i, p in enumerate(_diversify(within, top))
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
    # The GPU types the catalog sells, in spec-table order: a recommendation's layouts are
    # for what can be rented (``gpufit estimate`` lists every known GPU).
    sold = {o.gpu_id for o in catalog.offers}
    return Recommendation(
        workload=workload,
        options=tuple(chosen),
        feasible=len(within),
        hours_basis=basis,
        layouts=search.smallest_layouts(g for g in all_gpus() if g.id in sold),
        sources=catalog.sources,
        generated_at=now,
        over_budget=over_budget,
        alternative=alternative,
        notes=tuple(notes),
    )


def _fmt_tokens(tokens: float) -> str:
    for unit, scale in (("T", 1e12), ("B", 1e9), ("M", 1e6)):
        if tokens >= scale:
            return f"{tokens / scale:.1f}{unit}"
    return f"{tokens:.0f}"
