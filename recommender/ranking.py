"""From a workload and a catalog to ranked, priced, caveated options.

For every instance shape in the catalog the estimator finds the smallest number of whole
nodes the job fits on; billing turns hours into money under the provider's rules; options
are ranked by expected total cost (or by time to finish when a deadline binds), filtered by
budget, diversified across GPU types and providers, and carry their caveats as data.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum

from recommender.billing import (
    RULES,
    BillingRule,
    SpotEconomics,
    billed_hours,
    rule_for,
    spot_economics,
)
from recommender.caveats import Caveat, CaveatKind, Severity
from recommender.gpus import GpuSpec, IntraNode, all_gpus, get_gpu
from recommender.offers import Catalog, Offer, SourceInfo
from recommender.throughput import tokens_per_hour, train_hours
from recommender.topology import Plan, evaluate, fit_on_nodes, smallest_layout
from recommender.workload import Method, Precision, SpotPolicy, Workload

__all__ = [
    "Alternative",
    "BudgetGap",
    "HoursBasis",
    "Option",
    "Recommendation",
    "recommend",
]

# Prices older than this get a caveat: cloud GPU list prices move weekly, spot prices hourly.
STALE_AFTER_HOURS = 48.0  # ours: two days, so a daily refresh that failed once is still fresh
# Headroom below this is "tight": allocator fragmentation and spikes eat ~5-10 % in practice.
TIGHT_HEADROOM_FRAC = 0.10  # ours, from PyTorch caching-allocator reserved/allocated gaps
# A billing round-up above this share of the run is worth telling the user about.
BILLING_ROUNDUP_FRAC = 0.05  # ours: 5 % of the run cost
# Largest cluster gpufit will propose for a single job.
MAX_NODES = 64  # ours: beyond 512 GPUs the answer is a sales conversation, not a rental
# With no duration and no token budget, options are compared on one day of running.
DEFAULT_HOURS = 24.0  # ours: a day is the natural unit a team budgets a trial run in


class HoursBasis(StrEnum):
    TOKENS = "tokens"  # hours computed from a token budget
    DURATION = "duration"  # the user's stated duration
    DEFAULT = "default"  # nothing stated: one day, for comparison


@dataclass(frozen=True, slots=True)
class Option:
    """One way to run the job: an offer, how many of it, and what it costs."""

    offer: Offer
    plan: Plan
    nodes: int
    #: Hours of training compute (before preemption overhead).
    hours: float
    #: Hours the provider bills (granularity, minimum, and spot overhead included).
    billed_hours: float
    cost_usd: float
    expected_cost_usd: float
    storage_usd: float
    spot: SpotEconomics | None
    caveats: tuple[Caveat, ...]
    meets_deadline: bool = True
    rank: int = 0

    @property
    def total_gpus(self) -> int:
        return self.offer.gpu_count * self.nodes

    @property
    def price_usd_per_hour(self) -> float:
        """Cluster price per hour (all nodes)."""
        return self.offer.price_usd_per_hour * self.nodes

    @property
    def expected_hours(self) -> float:
        overhead = self.spot.overhead_frac if self.spot else 0.0
        return self.hours * (1 + overhead)


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


_ShapeKey = tuple[str, int, IntraNode, bool]


def _plan_for_shape(workload: Workload, offer: Offer, gpu: GpuSpec) -> Plan | None:
    hw = workload.hardware
    fast = offer.fabric.fast
    if hw is not None and hw.count is not None:
        nodes = hw.count // offer.gpu_count
        plan = evaluate(workload, gpu, gpus=hw.count, gpus_per_node=offer.gpu_count)
        if nodes > 1 and not fast:
            return None
        return plan if plan.fits else None
    return fit_on_nodes(
        workload,
        gpu,
        gpus_per_node=offer.gpu_count,
        max_nodes=MAX_NODES,
        multi_node=fast,
    )


# ----------------------------------------------------------------- pricing


# Bytes per parameter a checkpoint holds (weights as trained + optimizer states; gradients are
# never saved). Mixed precision keeps an fp32 master copy, so its checkpoint is the fp32 master
# plus states (bf16 weights are re-derived); ZeRO paper §3.1 counts K = 12 for mixed Adam.
_CKPT_OPTIMIZER_BYTES = {
    "adamw": 8.0,  # m and v, fp32 (Adam paper; ZeRO §3.1)
    "adamw-8bit": 2.0,  # bitsandbytes 8-bit m and v (Dettmers et al. 2021)
    "sgd": 0.0,  # plain SGD keeps no state
    "sgd-momentum": 4.0,  # one fp32 momentum buffer
    "adafactor": 4.0,  # factored second moment + fp32 first moment (conservative, memory.md §1.2)
    "lion": 4.0,  # one fp32 momentum buffer (Chen et al. 2023)
}


def checkpoint_gib(workload: Workload, plan: Plan) -> float:
    """Size of one training checkpoint for the whole job, GiB.

    Full training saves fp32 weights (or bf16 in pure bf16) and optimizer states; LoRA and
    QLoRA save only the adapters (fp32) and their optimizer states. ``plan`` is unused today
    but keeps the door open for sharded-checkpoint formats.
    """
    del plan
    opt = _CKPT_OPTIMIZER_BYTES.get(workload.optimizer.value, 8.0)
    if workload.method.trains_all_weights:
        weight = 2.0 if workload.precision is Precision.BF16_TRUE else 4.0
        if workload.precision is Precision.BF16_TRUE:
            opt = opt / 2  # states kept in bf16 too
        return workload.model.params * (weight + opt) / 2**30
    return adapter_params(workload) * (4.0 + opt) / 2**30


def adapter_params(workload: Workload) -> float:
    """LoRA parameter count: r·(d_in + d_out) per adapted matrix (Hu et al. 2021, §4)."""
    m = workload.model
    r = workload.lora_rank
    kv = m.head_dim * m.kv_heads
    attn = r * ((m.hidden + m.hidden) * 2 + (m.hidden + kv) * 2)  # q, o and k, v
    mlp = r * (m.hidden + m.ffn) * (3 if m.block.value == "llama" else 2) * m.experts
    per_layer = attn + (mlp if workload.lora_targets == "all" else 0)
    return float(per_layer * m.layers)


def _price_option(
    workload: Workload,
    offer: Offer,
    plan: Plan,
    *,
    rules: Mapping[str, BillingRule],
) -> Option:
    gpu = get_gpu(offer.gpu_id)
    rule = rules.get(offer.provider.lower(), rule_for(offer.provider))
    nodes = plan.nodes
    computed = train_hours(workload, plan, link=offer.link, fast_fabric=offer.fabric.fast)
    hours = computed if computed is not None else (workload.duration_hours or DEFAULT_HOURS)
    ckpt = checkpoint_gib(workload, plan)
    spot = spot_economics(rule, nodes=nodes, checkpoint_gib=ckpt, hours=hours) if offer.spot else None
    overhead = spot.overhead_frac if spot else 0.0
    if computed is not None:
        wall = hours * (1 + overhead)  # a token budget takes longer when preempted
    else:
        wall = hours  # a duration is a duration; preemptions cost progress, not money
    billed = billed_hours(rule, wall)
    cost = billed * offer.price_usd_per_hour * nodes
    storage = ckpt * 2**30 / 1e9 * rule.storage_usd_per_gb_month * max(wall, 1.0) / 730
    deadline = workload.deadline_hours
    meets = deadline is None or wall <= deadline
    option = Option(
        offer=offer,
        plan=plan,
        nodes=nodes,
        hours=hours,
        billed_hours=billed,
        cost_usd=cost,
        expected_cost_usd=cost + storage,
        storage_usd=storage,
        spot=spot,
        caveats=(),
        meets_deadline=meets,
    )
    return replace(option, caveats=_caveats(workload, option, gpu, rule, wall))


# ----------------------------------------------------------------- caveats


def _fmt_hours(hours: float) -> str:
    if hours < 1:
        return f"{hours * 60:.0f} min"
    if hours < 48:
        return f"{hours:.1f} h"
    return f"{hours / 24:.1f} days"


def _caveats(
    workload: Workload, option: Option, gpu: GpuSpec, rule: BillingRule, wall: float
) -> tuple[Caveat, ...]:
    out: list[Caveat] = []
    plan, offer = option.plan, option.offer
    if option.spot is not None:
        s = option.spot
        every = _fmt_hours(s.checkpoint_interval_hours)
        out.append(
            Caveat(
                CaveatKind.PREEMPTION,
                Severity.WARN,
                f"spot: ~{s.expected_interruptions:.1f} preemptions expected "
                f"(MTBF {_fmt_hours(s.mtbf_hours)}); checkpoint every {every} "
                f"({s.checkpoint_gib:.0f} GiB, ~{s.checkpoint_write_s:.0f} s to write); "
                f"+{s.overhead_frac * 100:.1f} % expected overhead",
            )
        )
    if plan.gpus > 1 and offer.link is not IntraNode.NVLINK:
        out.append(
            Caveat(
                CaveatKind.PCIE_SHARDING,
                Severity.WARN,
                f"{plan.gpus}× {gpu.name} without NVLink: gradients and shards cross PCIe, "
                "expect markedly lower throughput than NVLink parts",
            )
        )
    if option.nodes > 1:
        fabric = offer.fabric.value
        gbps = f" {offer.fabric_gbps:.0f} Gb/s" if offer.fabric_gbps else ""
        out.append(
            Caveat(
                CaveatKind.MULTI_NODE,
                Severity.INFO,
                f"{option.nodes} nodes over {fabric}{gbps}: needs a cluster launcher "
                "(torchrun/SLURM) and capacity for all nodes at once",
            )
        )
    if plan.headroom_frac < TIGHT_HEADROOM_FRAC:
        out.append(
            Caveat(
                CaveatKind.TIGHT_HEADROOM,
                Severity.WARN,
                f"tight memory: {plan.memory.total_gib:.1f} of {plan.usable_gib:.1f} GiB "
                f"usable per GPU ({plan.headroom_frac * 100:.0f} % headroom)",
            )
        )
    if workload.precision in (Precision.BF16_MIXED, Precision.BF16_TRUE) and not gpu.supports_bf16:
        out.append(
            Caveat(
                CaveatKind.NO_BF16,
                Severity.WARN,
                f"{gpu.name} has no bf16: train in fp16 with loss scaling",
            )
        )
    if workload.precision is Precision.FP8_MIXED and not gpu.supports_fp8:
        out.append(
            Caveat(
                CaveatKind.NO_FP8,
                Severity.WARN,
                f"{gpu.name} has no FP8 tensor cores: runs at bf16/fp16 speed",
            )
        )
    if plan.strategy.checkpointing and workload.checkpointing is None:
        out.append(
            Caveat(
                CaveatKind.CHECKPOINTING,
                Severity.INFO,
                "activation checkpointing on to fit (≈ one extra forward pass, ~33 % more compute)",
            )
        )
    if plan.strategy.offload.value != "none" and workload.offload is None:
        out.append(
            Caveat(
                CaveatKind.OFFLOAD,
                Severity.WARN,
                f"CPU offload of {plan.strategy.offload.value} on to fit: optimizer steps run on "
                "the host, often 2-5× slower",
            )
        )
    if not option.meets_deadline and workload.deadline_hours is not None:
        out.append(
            Caveat(
                CaveatKind.DEADLINE,
                Severity.WARN,
                f"finishes in ~{_fmt_hours(wall)}, past the {_fmt_hours(workload.deadline_hours)} "
                "deadline",
            )
        )
    if option.billed_hours > 0 and (option.billed_hours - wall) / option.billed_hours > (
        BILLING_ROUNDUP_FRAC
    ):
        out.append(
            Caveat(
                CaveatKind.BILLING,
                Severity.INFO,
                f"{offer.provider} bills in {rule.granularity_s // 60 or 1}-"
                f"{'minute' if rule.granularity_s >= 60 else 'second'} units: "
                f"{_fmt_hours(wall)} is billed as {_fmt_hours(option.billed_hours)}",
            )
        )
    return tuple(out)


def _source_caveats(
    option: Option, sources: Mapping[str, SourceInfo], now: datetime
) -> tuple[Caveat, ...]:
    info = sources.get(option.offer.source)
    if info is None:
        return ()
    out: list[Caveat] = []
    age = info.age_hours(now)
    if age > STALE_AFTER_HOURS:
        out.append(
            Caveat(
                CaveatKind.STALE_PRICES,
                Severity.WARN,
                f"price from {info.name}, {_fmt_hours(age)} old (as of {info.as_of:%Y-%m-%d})",
            )
        )
    if info.error:
        out.append(
            Caveat(
                CaveatKind.SOURCE_ERROR,
                Severity.WARN,
                f"{info.name} failed to refresh ({info.error}); using its last good copy",
            )
        )
    return tuple(out)


# ----------------------------------------------------------------- ranking


def _sort_key(option: Option, by_time: bool) -> tuple[float | str | int, ...]:
    o = option.offer
    primary = option.expected_hours if by_time else option.expected_cost_usd
    return (
        0 if option.meets_deadline else 1,
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
        key: _ShapeKey = (offer.gpu_id, offer.gpu_count, offer.link, offer.fabric.fast)
        if key not in plans:
            plans[key] = _plan_for_shape(workload, offer, get_gpu(offer.gpu_id))
        plan = plans[key]
        if plan is None:
            continue
        option = _price_option(workload, offer, plan, rules=rules)
        extra = _source_caveats(option, sources, now)
        if extra:
            option = replace(option, caveats=option.caveats + extra)
        options.append(option)
    return _dedupe_zones(options)


def rank(workload: Workload, options: Iterable[Option]) -> list[Option]:
    """Options in rank order: deadline-meeting first, then cost (or time, when it binds)."""
    by_time = workload.deadline_hours is not None
    ranked = sorted(options, key=lambda o: _sort_key(o, by_time))
    if by_time and any(o.meets_deadline for o in ranked):
        # When a deadline binds, the cheapest option that meets it leads; the rest follow.
        meeting = sorted((o for o in ranked if o.meets_deadline), key=lambda o: _sort_key(o, False))
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
        tph = tokens_per_hour(
            workload,
            chosen[0].plan,
            link=chosen[0].offer.link,
            fast_fabric=chosen[0].offer.fabric.fast,
        )
        if tph > 0 and workload.duration_hours is not None and math.isfinite(tph):
            tokens = tph * workload.duration_hours
            notes.append(f"the top option trains ~{_fmt_tokens(tokens)} tokens in that time")
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
