"""From a workload and a catalog to the priced offers a question can show.

For every instance shape in the catalog the estimator finds the smallest number of whole
nodes the job fits on (:mod:`recommender.topology`); billing turns hours into money under the
provider's rules (:mod:`recommender.costing`). Offers of one shape from one provider,
on-demand or spot, share one plan and one set of economics, so a question prices the
catalog's groups (:mod:`recommender.catalog_index`), not its offers: the within-budget count
is a bisection per group and only each group's first ``top`` offers are ranked. When the
groups could not reproduce a linear scan of the offers exactly, the scan runs instead.
"""

from __future__ import annotations

import heapq
from bisect import bisect_right
from collections.abc import Mapping
from dataclasses import dataclass
from operator import itemgetter

from recommender.billing import BillingRule, rule_for
from recommender.catalog_index import GroupKey, OfferGroup, ShapeKey
from recommender.costing import Economics, checkpoint_gib, economics, economics_of_hours
from recommender.gpus import GpuSpec, get_gpu
from recommender.offers import Catalog, Offer
from recommender.throughput import train_hours
from recommender.topology import LayoutSearch, Plan
from recommender.workload import Offload, SpotPolicy, Workload

__all__ = [
    "MAX_NODES",
    "Priced",
    "PricedGroup",
    "Selection",
    "SortKey",
    "demoted",
    "priced_key",
    "priced_offers",
    "select",
]

# Largest cluster gpufit will propose for a single job.
MAX_NODES = 64  # ours: beyond 512 GPUs the answer is a sales conversation, not a rental


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


def _shape_plan(
    search: LayoutSearch, workload: Workload, offer: Offer, gpu: GpuSpec, shape: ShapeKey
) -> Plan | None:
    """The plan of ``offer``'s instance shape (``shape``: its GPU, count, link, fast fabric,
    RAM), kept by the search: it depends on nothing else (the search's workload fields and
    the shape), so later questions sharing the search reuse it."""
    plans = search.shapes
    if shape in plans:
        return plans[shape]
    fast = shape[3]
    hw = workload.hardware
    plan: Plan | None
    if hw is not None and hw.count is not None:
        nodes = hw.count // offer.gpu_count
        plan = search.evaluate(
            gpu, gpus=hw.count, gpus_per_node=offer.gpu_count, host_ram_gib=offer.ram_gib
        )
        if (nodes > 1 and not fast) or not plan.fits:
            plan = None
    else:
        plan = search.shape_plan(gpu, offer.gpu_count, MAX_NODES, fast, offer.ram_gib)
    plans[shape] = plan
    return plan


# ----------------------------------------------------------------- pricing


class PricedGroup:
    """Offers of one instance shape from one provider, on-demand or spot: one plan, one set of
    economics, so an offer's expected cost is two multiplications and an addition."""

    __slots__ = ("demoted", "econ", "late", "pair", "plan")

    def __init__(self, plan: Plan, econ: Economics, offer: Offer, demoted: int) -> None:
        """``demoted``: :func:`demoted` of the workload and ``plan``, as an int."""
        self.plan = plan
        self.econ = econ
        self.late = 0 if econ.meets_deadline else 1
        self.demoted = demoted
        self.pair = (offer.gpu_id, offer.provider)


#: One priced offer: expected cost, the offer, its group.
Priced = tuple[float, Offer, PricedGroup]
#: Sort key of a priced offer (see :func:`priced_key`).
SortKey = tuple[float | str | int, ...]
_UNSEEN = object()


def priced_offers(
    workload: Workload,
    catalog: Catalog,
    search: LayoutSearch,
    rules: Mapping[str, BillingRule],
) -> list[Priced]:
    """Every allowed offer the job fits on, priced, one per (provider, instance, region,
    spot): its cheapest zone. In catalog order of first appearance, as the options were."""
    plans: dict[ShapeKey, Plan | None] = {}
    groups: dict[GroupKey, object] = {}
    ckpt = checkpoint_gib(workload)
    prefixes = workload.regions

    def group_of(offer: Offer) -> PricedGroup | None:
        if not _shape_allowed(workload, offer):
            return None
        link, fast = offer.link, offer.fabric.fast
        shape: ShapeKey = (offer.gpu_id, offer.gpu_count, link, fast, offer.ram_gib)
        if shape not in plans:
            plans[shape] = _shape_plan(search, workload, offer, get_gpu(offer.gpu_id), shape)
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
            gpu_id=offer.gpu_id,
        )
        return PricedGroup(plan, econ, offer, int(demoted(workload, plan)))

    best: dict[tuple[str, str, str, bool], Priced] = {}
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
        group: PricedGroup = found  # type: ignore[assignment]
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


# ----------------------------------------------------------------- by the catalog's groups

#: The storage term may be at most this many times the cheapest offer's compute cost for the
#: same argument (adding it must not absorb a 1e-9 relative price gap between a group's
#: prices, ``catalog_index.MIN_PRICE_GAP``; margin 4×).
_MAX_STORAGE_RATIO = 1e6


@dataclass(frozen=True, slots=True)
class Selection:
    """What a question needs from the priced offers, without pricing every one."""

    #: Priced offers within budget, each with its :func:`priced_key`, that can appear in a
    #: diversified top ``k``: every group's best (so every (GPU, provider) pair's best) and
    #: the overall best ``k`` (a superset of both). Each offer appears once.
    candidates: list[tuple[SortKey, Priced]]
    #: How many priced offers are within budget in all.
    feasible: int
    #: The best priced offer regardless of budget, when none is within it.
    cheapest: Priced | None


def select(
    workload: Workload,
    catalog: Catalog,
    search: LayoutSearch,
    rules: Mapping[str, BillingRule],
    k: int,
) -> Selection:
    """The priced offers a diversified top ``k`` can draw from, by the catalog's groups when
    they reproduce the scan, else by the scan."""
    budget = workload.budget_usd
    index = catalog.index.groups
    view = None if index is None else _indexed(workload, index, search, rules)
    if view is None:
        priced = priced_offers(workload, catalog, search, rules)
        within = priced if budget is None else [p for p in priced if p[0] <= budget]
        cheapest = min(priced, key=priced_key) if priced and not within else None
        return Selection([(priced_key(p), p) for p in within], len(within), cheapest)
    # A group's offers are in rank order (its plan, economics and deadline flag are shared;
    # the index sorts by price, then the key's own tie-breakers), so its first offer is its
    # best, and the overall best k are a k-way merge of the groups' lists.
    candidates: list[tuple[SortKey, Priced]] = []
    heap: list[tuple[SortKey, int, int]] = []
    counts: list[int] = []
    heads: list[tuple[SortKey, Priced]] = []
    feasible = 0
    for number, (group, offers, prices) in enumerate(view):
        econ = group.econ
        n = len(offers) if budget is None else _count_within(prices, budget, econ)
        feasible += n
        counts.append(n if n < k else k)
        head: Priced = (econ.expected_cost_usd(prices[0]), offers[0], group)
        item = (priced_key(head), head)
        heads.append(item)
        if n:
            candidates.append(item)
            heap.append((item[0], number, 0))
    heapq.heapify(heap)
    # Keys are unique (they end with the offer's provider, instance, region, zone and spot
    # flag, one offer per such zone), so the merge's order is the sort order.
    for _ in range(k):
        if not heap:
            break
        _, number, position = heapq.heappop(heap)
        if position + 1 < counts[number]:
            group, offers, prices = view[number]
            following: Priced = (
                group.econ.expected_cost_usd(prices[position + 1]),
                offers[position + 1],
                group,
            )
            item = (priced_key(following), following)
            candidates.append(item)
            heapq.heappush(heap, (item[0], number, position + 1))
    cheapest = None
    if not feasible and heads:
        cheapest = min(heads, key=itemgetter(0))[1]
    return Selection(candidates, feasible, cheapest)


def _count_within(prices: tuple[float, ...], budget: float, econ: Economics) -> int:
    """How many of the ascending ``prices`` cost at most ``budget`` under ``econ``.

    The expected cost never decreases with the price (a product and a sum of non-negative
    terms, and rounding is monotone), so the count is where the price that spends exactly
    the budget falls among the prices, checked and corrected at that boundary with the cost
    itself: the answer of bisecting by cost, with a cost or two computed instead of ~log n.
    """
    cost = econ.expected_cost_usd
    # billed hours × nodes > 0: groups without it are priced by the scan (see _indexed).
    n = bisect_right(prices, (budget - econ.storage_usd) / (econ.billed_hours * econ.nodes))
    while n < len(prices) and cost(prices[n]) <= budget:
        n += 1
    while n > 0 and cost(prices[n - 1]) > budget:
        n -= 1
    return n


def _indexed(
    workload: Workload,
    index: tuple[OfferGroup, ...],
    search: LayoutSearch,
    rules: Mapping[str, BillingRule],
) -> list[tuple[PricedGroup, tuple[Offer, ...], tuple[float, ...]]] | None:
    """Per allowed group the job fits on: its economics and its zone winners in rank order.
    ``None`` when a group's storage term could blur the price order (then scan instead)."""
    #: Per shape: its plan, the training hours on it (the same for every provider), and
    #: whether it ranks after the plans without offload.
    plans: dict[ShapeKey, tuple[Plan | None, float | None, int]] = {}
    econs: dict[tuple[str, bool, int, float | None, str], Economics] = {}
    ckpt = checkpoint_gib(workload)
    prefixes = workload.regions
    allowed_region: dict[str, bool] = {}
    out: list[tuple[PricedGroup, tuple[Offer, ...], tuple[float, ...]]] = []
    # Most questions name no provider, spot policy or hardware: then every shape is allowed.
    filtered = bool(workload.providers) or workload.spot is not SpotPolicy.ALLOW
    filtered = filtered or workload.hardware is not None
    for entry in index:
        offer = entry.representative
        if filtered and not _shape_allowed(workload, offer):
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
            plan, computed, last = plans[shape]
        else:
            plan = _shape_plan(search, workload, offer, entry.gpu, shape)
            computed, last = None, 0
            if plan is not None:
                computed = train_hours(workload, plan, link=entry.link, fast_fabric=entry.fast)
                last = int(demoted(workload, plan))
            plans[shape] = plan, computed, last
        if plan is None:
            continue
        # Economics read of the plan only its node count: groups of one provider, spot flag
        # and GPU (spot rates and capacity waits are per GPU class) share them when their
        # runs take as long on as many nodes (with a stated duration, every shape's run does).
        econ_key = (entry.provider, offer.spot, plan.nodes, computed, offer.gpu_id)
        econ = econs.get(econ_key)
        if econ is None:
            rule = rules.get(entry.provider)
            if rule is None:
                rule = rule_for(entry.provider)
            econ = econs[econ_key] = economics_of_hours(
                workload,
                plan,
                computed,
                rule=rule,
                spot=offer.spot,
                checkpoint_size_gib=ckpt,
                gpu_id=offer.gpu_id,
            )
        scale = econ.billed_hours * econ.nodes
        if not scale > 0 or econ.storage_usd > _MAX_STORAGE_RATIO * scale * prices[0]:
            return None
        out.append((PricedGroup(plan, econ, offer, last), offers, prices))
    return out


def priced_key(priced: Priced) -> SortKey:
    """The rank order of :func:`recommender.ranking.rank`, on a priced offer.

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


#: Read once (see :func:`demoted`, asked once per instance shape): on Python 3.11 each read of
#: an Enum class attribute goes through EnumType.__getattr__'s hook (~0.1 µs).
_NO_OFFLOAD = Offload.NONE


def demoted(workload: Workload, plan: Plan) -> bool:
    """Whether a plan ranks after every plan without CPU offload (see
    :func:`recommender.ranking.rank`)."""
    return (
        workload.tokens is None
        and workload.offload is None
        and plan.strategy.offload is not _NO_OFFLOAD
    )
