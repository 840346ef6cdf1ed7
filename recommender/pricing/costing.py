"""The priced offer and its caveats.

An :class:`Option` is an offer (an instance shape at a price), the plan the job runs on with
it, and what the whole run costs under the provider's billing rules
(:mod:`recommender.pricing.economics` works out the hours and what they cost per unit of
price). Ranking sorts options and the answer shows them: one type from the catalog to the
answer.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime

from recommender.estimation.memory import HEADROOM_FRAC, HEADROOM_MIN_GIB
from recommender.estimation.throughput import Network, tokens_per_hour
from recommender.estimation.topology import Plan
from recommender.gpus import GpuSpec, IntraNode, get_gpu
from recommender.pricing.billing import BillingRule, SpotEconomics, rule_for
from recommender.pricing.economics import Economics, economics
from recommender.pricing.offers import Offer, SourceInfo
from recommender.ranking.caveats import Caveat, CaveatKind, Severity
from recommender.units import hours_text
from recommender.workload import Offload, Precision, Workload

__all__ = [
    "OVER_DURATION_TOLERANCE",
    "STALE_AFTER_HOURS",
    "Option",
    "caveats_of_source",
    "over_duration",
    "per_btok",
    "price_option",
    "tight_memory_text",
]

# Prices older than this get a caveat: cloud GPU list prices move weekly, spot prices hourly.
STALE_AFTER_HOURS = 48.0  # ours: two days, so a daily refresh that failed once is still fresh
# A billing round-up above this share of the run is worth telling the user about.
BILLING_ROUNDUP_FRAC = 0.05  # ours: 5 % of the run cost
# An option is marked as taking longer than the user's duration only beyond this share of it:
# spot preemptions add ~1-4 % (billing.py), and a duration is a size of work, not a deadline.
OVER_DURATION_TOLERANCE = 0.05  # ours: a twentieth, under the 0.1 d a duration is shown in


@dataclass(frozen=True, slots=True)
class Option:
    """A priced offer, the one type from the catalog to the answer: an offer, the plan it runs
    on (how many nodes, how laid out), and what the run costs on it under the provider's
    billing rule (:attr:`econ`). Ranking sorts these; the answer shows them with caveats."""

    offer: Offer
    plan: Plan
    #: The hours and what they cost per unit of instance price (economics.economics).
    econ: Economics
    #: What is worth knowing about it: the region choice's note while it is being ranked;
    #: everything (:func:`price_option`) once it is shown.
    caveats: tuple[Caveat, ...] = ()
    #: The catalog's sanity checks doubt its price (:func:`recommender.pricing.sanity.doubtful`):
    #: it ranks after every option with a sound price.
    doubtful: bool = False
    rank: int = 0
    #: The duration the user stated when the work was defined from it: the option is
    #: marked (:attr:`over_duration`) when it takes longer.
    target_hours: float | None = None

    @property
    def nodes(self) -> int:
        return self.econ.nodes

    @property
    def hours(self) -> float:
        """Hours of training compute, before preemption overhead."""
        return self.econ.hours

    @property
    def wall_hours(self) -> float:
        """Expected wall-clock hours: with a token budget, spot preemptions stretch the run;
        with a stated duration the run is that long and preemptions cost progress instead."""
        return self.econ.wall_hours

    @property
    def billed_hours(self) -> float:
        """Hours the provider bills (granularity and minimum applied to ``wall_hours``)."""
        return self.econ.billed_hours

    @property
    def cost_usd(self) -> float:
        return self.econ.cost_usd(self.offer.price_usd_per_hour)

    @property
    def expected_cost_usd(self) -> float:
        return self.econ.expected_cost_usd(self.offer.price_usd_per_hour)

    @property
    def storage_usd(self) -> float:
        return self.econ.storage_usd

    @property
    def spot(self) -> SpotEconomics | None:
        return self.econ.spot

    @property
    def meets_deadline(self) -> bool:
        return self.econ.meets_deadline

    @property
    def tokens(self) -> float:
        """Tokens the run processes: the work every option is priced for (a token budget, or
        what a stated duration buys on the reference layout), else throughput × hours."""
        return self.econ.tokens

    @property
    def pessimistic_wall_hours(self) -> float:
        """The plan's pessimistic wall-clock hours: spot's pessimistic end (billing.SpotEconomics)
        times a fine-tune's time-range top (equal to ``wall_hours`` for pretraining on
        demand). See economics.Economics."""
        return self.econ.pessimistic_wall_hours

    @property
    def pessimistic_cost_usd(self) -> float:
        return self.econ.pessimistic_cost_usd(self.offer.price_usd_per_hour)

    @property
    def spot_worst_wall_hours(self) -> float:
        """Spot's worst case at the estimate, without a fine-tune's range: what its risk is
        judged on (the expected hours on demand)."""
        return self.econ.spot_worst_wall_hours

    @property
    def spot_worst_cost_usd(self) -> float:
        return self.econ.spot_worst_cost_usd(self.offer.price_usd_per_hour)

    @property
    def lead_hours(self) -> float:
        """Hours before the run can start (a reservation: economics.reservation_lead_hours)."""
        return self.econ.lead_hours

    @property
    def finish_hours(self) -> float:
        """Hours from now until the run is done: the lead, then the run."""
        return self.econ.finish_hours

    @property
    def pessimistic_finish_hours(self) -> float:
        return self.econ.pessimistic_finish_hours

    @property
    def spot_worst_finish_hours(self) -> float:
        return self.lead_hours + self.spot_worst_wall_hours

    @property
    def usd_per_btok(self) -> float:
        """Expected cost per billion tokens trained: the unit every option is compared on."""
        return per_btok(self.expected_cost_usd, self.tokens)

    @property
    def hours_per_btok(self) -> float:
        """Expected wall-clock hours per billion tokens trained."""
        return per_btok(self.wall_hours, self.tokens)

    @property
    def over_duration(self) -> bool:
        """Takes longer than the duration the user stated (duration basis only)."""
        return over_duration(self.wall_hours, self.target_hours)

    @property
    def total_gpus(self) -> int:
        return self.offer.gpu_count * self.nodes

    @property
    def price_usd_per_hour(self) -> float:
        """Cluster price per hour (all nodes)."""
        return self.offer.price_usd_per_hour * self.nodes

    @property
    def expected_hours(self) -> float:
        return self.wall_hours


def over_duration(wall_hours: float, target_hours: float | None) -> bool:
    """Whether a run of ``wall_hours`` takes longer than the user's stated duration (beyond
    :data:`OVER_DURATION_TOLERANCE`)."""
    return target_hours is not None and wall_hours > target_hours * (1 + OVER_DURATION_TOLERANCE)


def per_btok(amount: float, tokens: float) -> float:
    """``amount`` per billion ``tokens`` (infinite for no tokens, or so few that the count in
    billions underflows to zero: a denormal such as 2e-315 parsed from "3E-324")."""
    billions = tokens / 1e9
    return amount / billions if billions > 0 else math.inf


def price_option(
    workload: Workload,
    offer: Offer,
    plan: Plan,
    *,
    rules: Mapping[str, BillingRule],
    econ: Economics | None = None,
    extra_caveats: tuple[Caveat, ...] = (),
    rank: int = 0,
    target_hours: float | None = None,
    doubtful: bool = False,
) -> Option:
    """Price running ``workload`` on ``plan.nodes`` instances of ``offer``.

    ``econ`` is :func:`economics` for this plan, provider and spot flag when the caller has
    it already; it is computed otherwise. ``extra_caveats`` (e.g. :func:`caveats_of_source`)
    follow the option's own. ``target_hours`` is the duration the user stated when the work
    was defined from it (see :attr:`Option.over_duration`).
    """
    gpu = get_gpu(offer.gpu_id)
    rule = rules.get(offer.provider.lower(), rule_for(offer.provider))
    if econ is None:
        econ = economics(
            workload,
            plan,
            rule=rule,
            spot=offer.spot,
            tokens_per_hour=tokens_per_hour(workload, plan, Network.of(offer)),
            gpu_id=offer.gpu_id,
        )
    caveats = _caveats(workload, offer, plan, econ, gpu, rule, target_hours) + extra_caveats
    return Option(offer, plan, econ, caveats, doubtful, rank, target_hours)


def _caveats(
    workload: Workload,
    offer: Offer,
    plan: Plan,
    econ: Economics,
    gpu: GpuSpec,
    rule: BillingRule,
    target_hours: float | None,
) -> tuple[Caveat, ...]:
    wall = econ.wall_hours
    out: list[Caveat] = []
    if econ.spot is not None:
        s = econ.spot
        every = hours_text(s.checkpoint_interval_hours)
        worst = f", up to {s.pessimistic.expected_interruptions:.1f}" if s.pessimistic else ""
        start = (
            f"; ~{hours_text(s.start_wait_hours)} to get all {s.nodes} nodes at once first"
            if s.start_wait_hours > 0
            else ""
        )
        out.append(
            Caveat(
                CaveatKind.PREEMPTION,
                Severity.WARN,
                f"spot: ~{s.expected_interruptions:.1f} preemptions expected{worst} "
                f"(MTBF {hours_text(s.mtbf_hours)}), each waiting ~{hours_text(s.wait_hours)} "
                f"for capacity{start}; checkpoint every {every} "
                f"({s.checkpoint_gib:.0f} GiB, ~{s.checkpoint_write_s:.0f} s to write); "
                f"+{s.overhead_frac * 100:.1f} % expected overhead{_spot_range(offer, econ)}",
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
    if econ.nodes > 1:
        fabric = offer.fabric.value
        gbps = f" {offer.fabric_gbps:.0f} Gb/s" if offer.fabric_gbps else ""
        out.append(
            Caveat(
                CaveatKind.MULTI_NODE,
                Severity.INFO,
                f"{econ.nodes} nodes over {fabric}{gbps}: needs a cluster launcher "
                "(torchrun/SLURM) and capacity for all nodes at once",
            )
        )
        out.append(Caveat(CaveatKind.CAPACITY, Severity.WARN, _capacity_text(offer, econ)))
    if gpu.form_factor == "Superchip":
        # Grace (GH200/GB200) hosts are aarch64: NVIDIA ships PyTorch for it, but some
        # training wheels (bitsandbytes, flash-attn, DeepSpeed ops) may need building.
        out.append(
            Caveat(
                CaveatKind.ARM_HOST,
                Severity.WARN,
                f"{gpu.name} runs on an ARM (aarch64) Grace host: check that every package of "
                "your stack has aarch64 wheels (bitsandbytes, flash-attn and DeepSpeed ops "
                "may need building from source)",
            )
        )
    if plan.fits and not plan.safe:
        tight = tight_memory_text(workload, plan)
        out.append(Caveat(CaveatKind.TIGHT_HEADROOM, Severity.WARN, tight))
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
    if plan.strategy.offload is not Offload.NONE and workload.offload is None:
        out.append(
            Caveat(
                CaveatKind.OFFLOAD,
                Severity.WARN,
                f"CPU offload of {plan.strategy.offload.value} on to fit: optimizer steps run on "
                "the host, often 2-5× slower",
            )
        )
    if target_hours is not None and over_duration(wall, target_hours):
        out.append(
            Caveat(
                CaveatKind.OVER_DURATION,
                Severity.WARN,
                f"takes {hours_text(wall)}, over your {hours_text(target_hours)}",
            )
        )
    if not econ.meets_deadline and workload.deadline_hours is not None:
        late = f"finishes in ~{hours_text(wall)}"
        if econ.pessimistic_wall_hours > workload.deadline_hours >= wall:
            # the pessimistic end: spot's, and a fine-tune's time range (issue #32)
            where = "on spot " if econ.spot is not None else ""
            late = f"{where}may take up to {hours_text(econ.pessimistic_wall_hours)}"
        out.append(
            Caveat(
                CaveatKind.DEADLINE,
                Severity.WARN,
                f"{late}, past the {hours_text(workload.deadline_hours)} deadline",
            )
        )
    if not rule.known:
        out.append(
            Caveat(
                CaveatKind.BILLING,
                Severity.INFO,
                f"{offer.provider}'s billing unit is unknown: billed per whole hour "
                "(1 h minimum) as a conservative assumption",
            )
        )
    billed = econ.billed_hours
    # Waits for spot capacity are not billed: compare the bill with the hours run.
    wall = min(wall, econ.spot.run_hours) if econ.spot is not None else wall
    if billed > 0 and (billed - wall) / billed > BILLING_ROUNDUP_FRAC:
        out.append(
            Caveat(
                CaveatKind.BILLING,
                Severity.INFO,
                f"{offer.provider} bills in {rule.granularity_s // 60 or 1}-"
                f"{'minute' if rule.granularity_s >= 60 else 'second'} units: "
                f"{hours_text(wall)} is billed as {hours_text(billed)}",
            )
        )
    return tuple(out)


def _capacity_text(offer: Offer, econ: Economics) -> str:
    """Whether the plan's nodes can be had on the day, or must be reserved first."""
    nodes = econ.nodes
    if offer.spot:
        return (
            f"{nodes} spot nodes at once are rarely granted together, and any one preemption "
            f"stops the job: confirm capacity with {offer.provider} first, or reserve on-demand"
        )
    if econ.lead_hours > 0:
        return (
            f"{nodes} nodes must be reserved ahead with {offer.provider} (AWS Capacity Blocks "
            "for ML, GCP/Azure reservations, or the provider's cluster sales): counted as "
            f"starting {hours_text(econ.lead_hours)} from now"
        )
    return f"confirm with {offer.provider} that {nodes} nodes can be had at once before you start"


def _spot_range(offer: Offer, econ: Economics) -> str:
    """The spot run's optimistic-to-pessimistic time and cost, and where the rates come from
    (a fixed duration has no range in time: the run stops when the duration is up)."""
    s = econ.spot
    if s is None or econ.spot_worst_wall_hours <= econ.wall_hours:
        return ""
    price = offer.price_usd_per_hour
    return (
        f"; range {hours_text(s.optimistic_hours)}-{hours_text(econ.spot_worst_wall_hours)}, "
        f"up to ${econ.spot_worst_cost_usd(price):,.0f} ({s.source})"
    )


def tight_memory_text(workload: Workload, plan: Plan) -> str:
    """The warning of a plan under the safety margin: the figures, the margin, what to do."""
    fixes: list[str] = []
    if workload.checkpointing is False and not plan.strategy.checkpointing:
        fixes.append("allow activation checkpointing")
    if workload.hardware is not None and workload.hardware.count is not None:
        fixes.append("use more GPUs")
    else:
        fixes.append("use more GPUs or a larger GPU")
    fixes.append("a shorter sequence" if workload.micro_batch == 1 else "a smaller micro-batch")
    return (
        f"tight memory: {plan.memory.total_gib:.1f} of {plan.usable_gib:.1f} GiB per GPU, "
        f"{max(plan.headroom_gib, 0.0):.1f} GiB free, under the {plan.margin_gib:.1f} GiB "
        f"safety margin ({HEADROOM_FRAC * 100:.0f} %, at least {HEADROOM_MIN_GIB:.0f} GiB, for the "
        "estimate's error): "
        f"may run out of memory; {', '.join(fixes[:-1])} or {fixes[-1]}"
    )


def caveats_of_source(info: SourceInfo, now: datetime) -> tuple[Caveat, ...]:
    """Stale prices and a failed refresh: the same for every offer of one source."""
    out: list[Caveat] = []
    age = info.age_hours(now)
    if age > STALE_AFTER_HOURS:
        out.append(
            Caveat(
                CaveatKind.STALE_PRICES,
                Severity.WARN,
                f"price from {info.name}, {hours_text(age)} old (as of {info.as_of:%Y-%m-%d})",
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
