"""From a workload and a catalog to ranked, priced, caveated options.

For every instance shape in the catalog the estimator finds the smallest number of whole
nodes the job fits on; billing turns hours into money under the provider's rules; options
are ranked by expected total cost (or by time to finish when a deadline binds), filtered by
budget, diversified across GPU types and providers, and carry their caveats as data.
"""

from __future__ import annotations

import heapq
from bisect import bisect_right
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum
from operator import itemgetter

from recommender.billing import RULES, BillingRule, rule_for
from recommender.catalog_index import GroupKey, OfferGroup, ShapeKey
from recommender.costing import (
    Economics,
    Option,
    checkpoint_gib,
    economics,
    price_option,
    source_caveats,
)
from recommender.gpus import GpuSpec, all_gpus, get_gpu
from recommender.offers import Catalog, Offer, SourceInfo
from recommender.topology import LayoutSearch, Plan
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


def _region_allowed(prefixes: tuple[str, ...], region: str) -> bool:
    region = region.lower()
    return any(region.startswith(prefix) for prefix in prefixes)


def _shape_allowed(workload: Workload, offer: Offer) -> bool:
    """The filters that depend only on provider, spot flag, GPU and GPU count."""
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


# ----------------------------------------------------------------- planning


def _plan_for_shape(
    search: LayoutSearch, workload: Workload, offer: Offer, gpu: GpuSpec
) -> Plan | None:
    hw = workload.hardware
    fast = offer.fabric.fast
    if hw is not None and hw.count is not None:
        nodes = hw.count // offer.gpu_count
        plan = search.evaluate(
            gpu, gpus=hw.count, gpus_per_node=offer.gpu_count, host_ram_gib=offer.ram_gib
        )
        if nodes > 1 and not fast:
            return None
        return plan if plan.fits else None
    return search.fit_on_nodes(
        gpu,
        gpus_per_node=offer.gpu_count,
        max_nodes=MAX_NODES,
        multi_node=fast,
        host_ram_gib=offer.ram_gib,
    )


# ----------------------------------------------------------------- pricing


class _Group:
    """Offers of one instance shape from one provider, on-demand or spot: one plan, one set of
    economics, so an offer's expected cost is two multiplications and an addition."""

    __slots__ = ("demoted", "econ", "late", "pair", "plan")

    def __init__(self, workload: Workload, plan: Plan, econ: Economics, offer: Offer) -> None:
        self.plan = plan
        self.econ = econ
        self.late = 0 if econ.meets_deadline else 1
        self.demoted = int(_demoted(workload, plan))
        self.pair = (offer.gpu_id, offer.provider)


#: One priced offer: expected cost, the offer, its group.
_Priced = tuple[float, Offer, _Group]
#: Sort key of a priced offer (see :func:`_sort_key`).
_Key = tuple[float | str | int, ...]
_UNSEEN = object()


def _priced(
    workload: Workload,
    catalog: Catalog,
    search: LayoutSearch,
    rules: Mapping[str, BillingRule],
) -> list[_Priced]:
    """Every allowed offer the job fits on, priced, one per (provider, instance, region,
    spot): its cheapest zone. In catalog order of first appearance, as the options were."""
    plans: dict[ShapeKey, Plan | None] = {}
    groups: dict[GroupKey, object] = {}
    ckpt = checkpoint_gib(workload)
    prefixes = workload.regions

    def group_of(offer: Offer) -> _Group | None:
        if not _shape_allowed(workload, offer):
            return None
        link, fast = offer.link, offer.fabric.fast
        shape: ShapeKey = (offer.gpu_id, offer.gpu_count, link, fast, offer.ram_gib)
        if shape not in plans:
            plans[shape] = _plan_for_shape(search, workload, offer, get_gpu(offer.gpu_id))
        plan = plans[shape]
        if plan is None:
            return None
        rule = rules.get(offer.provider.lower(), rule_for(offer.provider))
        econ = economics(
            workload,
            plan,
            rule=rule,
            spot=offer.spot,
            link=link,
            fast_fabric=fast,
            checkpoint_size_gib=ckpt,
        )
        return _Group(workload, plan, econ, offer)

    best: dict[tuple[str, str, str, bool], _Priced] = {}
    for offer in catalog.offers:
        if prefixes and not _region_allowed(prefixes, offer.region):
            continue
        key = (
            offer.gpu_id,
            offer.gpu_count,
            offer.intra_node,
            offer.fabric,
            offer.ram_gib,
            offer.provider,
            offer.spot,
        )
        found = groups.get(key, _UNSEEN)
        if found is _UNSEEN:
            found = groups[key] = group_of(offer)
        if found is None:
            continue
        group: _Group = found  # type: ignore[assignment]
        econ = group.econ
        expected = econ.billed_hours * offer.price_usd_per_hour * econ.nodes + econ.storage_usd
        zone_key = (offer.provider, offer.instance_type, offer.region, offer.spot)
        current = best.get(zone_key)
        # One option per (provider, instance, region, spot): the cheapest zone.
        if (
            current is None
            or expected < current[0]
            or (expected == current[0] and offer.zone < current[1].zone)
        ):
            best[zone_key] = (expected, offer, group)
    return list(best.values())


# ----------------------------------------------------------------- catalog index

#: The storage term may be at most this many times the cheapest offer's compute cost for the
#: same argument (adding it must not absorb a 1e-9 relative price gap between a group's
#: prices, ``catalog_index.MIN_PRICE_GAP``; margin 4×).
_MAX_STORAGE_RATIO = 1e6


@dataclass(frozen=True, slots=True)
class _Selection:
    """What a question needs from the priced offers, without pricing every one."""

    #: Priced offers within budget that can appear in a diversified top ``k``: every
    #: (GPU, provider) pair's best and the overall best ``k`` (a superset of both).
    candidates: list[_Priced]
    #: How many priced offers are within budget in all.
    feasible: int
    #: The best priced offer regardless of budget, when none is within it.
    cheapest: _Priced | None


def _select(
    workload: Workload,
    catalog: Catalog,
    search: LayoutSearch,
    rules: Mapping[str, BillingRule],
    k: int,
) -> _Selection:
    budget = workload.budget_usd
    index = catalog.index.groups
    view = None if index is None else _indexed(workload, index, search, rules)
    if view is None:
        priced = _priced(workload, catalog, search, rules)
        within = priced if budget is None else [p for p in priced if p[0] <= budget]
        cheapest = min(priced, key=_priced_key) if priced and not within else None
        return _Selection(within, len(within), cheapest)
    candidates: list[_Priced] = []
    feasible = 0
    for group, offers, prices in view:
        econ = group.econ
        if budget is None:
            n = len(offers)
        else:
            n = bisect_right(prices, budget, key=econ.expected_cost_usd)
        feasible += n
        candidates.extend(
            (econ.expected_cost_usd(o.price_usd_per_hour), o, group) for o in offers[: min(n, k)]
        )
    cheapest = None
    if not feasible and view:
        cheapest = min(
            (
                (g.econ.expected_cost_usd(offers[0].price_usd_per_hour), offers[0], g)
                for g, offers, _ in view
            ),
            key=_priced_key,
        )
    return _Selection(candidates, feasible, cheapest)


def _indexed(
    workload: Workload,
    index: tuple[OfferGroup, ...],
    search: LayoutSearch,
    rules: Mapping[str, BillingRule],
) -> list[tuple[_Group, tuple[Offer, ...], tuple[float, ...]]] | None:
    """Per allowed group the job fits on: its economics and its zone winners in rank order.
    ``None`` when a group's storage term could blur the price order (then scan instead)."""
    plans: dict[ShapeKey, Plan | None] = {}
    ckpt = checkpoint_gib(workload)
    prefixes = workload.regions
    allowed_region: dict[str, bool] = {}
    out: list[tuple[_Group, tuple[Offer, ...], tuple[float, ...]]] = []
    for entry in index:
        offer = entry.representative
        if not _shape_allowed(workload, offer):
            continue
        offers, prices = entry.offers, entry.prices
        if prefixes:
            keep = []
            for i, region in enumerate(entry.regions):
                ok = allowed_region.get(region)
                if ok is None:
                    ok = allowed_region[region] = _region_allowed(prefixes, region)
                if ok:
                    keep.append(i)
            if not keep:
                continue
            offers = tuple(offers[i] for i in keep)
            prices = tuple(prices[i] for i in keep)
        shape = entry.shape
        if shape in plans:
            plan = plans[shape]
        else:
            plan = plans[shape] = _plan_for_shape(search, workload, offer, entry.gpu)
        if plan is None:
            continue
        rule = rules.get(entry.provider)
        if rule is None:
            rule = rule_for(entry.provider)
        econ = economics(
            workload,
            plan,
            rule=rule,
            spot=offer.spot,
            link=entry.link,
            fast_fabric=entry.fast,
            checkpoint_size_gib=ckpt,
        )
        scale = econ.billed_hours * econ.nodes
        if not scale > 0 or econ.storage_usd > _MAX_STORAGE_RATIO * scale * prices[0]:
            return None
        out.append((_Group(workload, plan, econ, offer), offers, prices))
    return out


def _priced_key(priced: _Priced) -> _Key:
    """The rank order of :func:`rank`, on a priced offer (see :func:`_sort_key`).

    With a deadline, options that meet it come first by cost, the rest by time; without
    one every option meets it and all go by cost.
    """
    expected, o, g = priced
    return (
        g.late,
        g.demoted,
        g.econ.wall_hours if g.late else expected,
        expected,
        o.price_usd_per_hour * g.econ.nodes,
        o.provider,
        o.instance_type,
        o.region,
        o.zone,
        int(o.spot),
    )


class _Builder:
    """Full :class:`Option` objects (caveat texts and all) for the priced offers shown."""

    def __init__(
        self, catalog: Catalog, *, now: datetime, rules: Mapping[str, BillingRule]
    ) -> None:
        self.sources = {s.name: s for s in catalog.sources}
        self.now = now
        self.rules = rules

    def option(self, workload: Workload, priced: _Priced) -> Option:
        _, offer, group = priced
        option = price_option(workload, offer, group.plan, rules=self.rules, econ=group.econ)
        extra = source_caveats(option, self.sources, self.now)
        if extra:
            option = replace(option, caveats=option.caveats + extra)
        return option


def price_options(
    workload: Workload,
    catalog: Catalog,
    *,
    now: datetime,
    rules: Mapping[str, BillingRule] = RULES,
) -> list[Option]:
    """Every feasible, priced option for the workload, unranked and unfiltered by budget."""
    build = _Builder(catalog, now=now, rules=rules)
    priced = _priced(workload, catalog, LayoutSearch(workload), rules)
    return [build.option(workload, p) for p in priced]


# ----------------------------------------------------------------- ranking


def _demoted(workload: Workload, plan: Plan) -> bool:
    return (
        workload.tokens is None
        and workload.offload is None
        and plan.strategy.offload is not Offload.NONE
    )


def _offload_demoted(workload: Workload, option: Option) -> bool:
    """Whether an option ranks after every option without CPU offload.

    With a fixed duration (or none), cost alone would favour offload on a smaller instance,
    which trains 2-5× fewer tokens in the same hours; gpufit treats offload as a last resort
    unless the user asked for it. With a token budget the time model already charges for it.
    """
    return _demoted(workload, option.plan)


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


def _diversify(priced: list[_Priced], top: int, key: Callable[[_Priced], _Key]) -> list[_Priced]:
    """Pick ``top`` options, preferring a new (GPU type, provider) pair over a better price.

    In rank order, the best option of each (gpu, provider) pair comes first; what is left is
    filled in rank order. Five regions of one instance never crowd out a different GPU or a
    different cloud. Only the pairs' best and the overall top are ever sorted.
    """
    keyed = [(key(p), p) for p in priced]
    first = itemgetter(0)
    best: dict[tuple[str, str], tuple[_Key, _Priced]] = {}
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
        selection = _select(variant, catalog, LayoutSearch(variant), rules, 1)
        if selection.feasible:
            best = min(selection.candidates, key=_priced_key)
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
    search = LayoutSearch(workload)
    build = _Builder(catalog, now=now, rules=rules)
    selection = _select(workload, catalog, search, rules, top)
    over_budget: BudgetGap | None = None
    alternative: Alternative | None = None
    if workload.budget_usd is not None and selection.cheapest is not None:
        over_budget = BudgetGap(workload.budget_usd, build.option(workload, selection.cheapest))
    if not selection.feasible:
        alternative = _alternative(workload, catalog, build, rules=rules)
    chosen = [
        replace(build.option(workload, p), rank=i + 1)
        for i, p in enumerate(_diversify(selection.candidates, top, _priced_key))
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
        layouts=_layouts(search, _catalog_gpus(catalog)),
        sources=catalog.sources,
        generated_at=now,
        over_budget=over_budget,
        alternative=alternative,
        notes=tuple(notes),
    )


def layouts(workload: Workload, gpus: Iterable[GpuSpec] | None = None) -> tuple[Plan, ...]:
    """Smallest layout per GPU type: ``gpus``, or every GPU in the spec table."""
    return _layouts(LayoutSearch(workload), gpus)


def _catalog_gpus(catalog: Catalog) -> tuple[GpuSpec, ...]:
    """The GPU types the catalog sells, in spec-table order: a recommendation's layouts are
    for what can be rented (``gpufit estimate`` still lists every known GPU)."""
    return catalog.index.gpus


def _layouts(search: LayoutSearch, gpus: Iterable[GpuSpec] | None) -> tuple[Plan, ...]:
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
