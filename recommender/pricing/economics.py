"""What running a plan costs per unit of instance price: hours, billed hours, spot
preemptions, checkpoint storage, and the tokens the run trains.

Every offer of one instance shape from one provider, on-demand or spot alike, shares these
figures (:class:`Economics`); an offer's run then costs ``billed_hours × price × nodes`` plus
storage.
"""

from __future__ import annotations

from dataclasses import dataclass

from recommender.estimation.finetune_speed import eval_tokens, run_overhead_s, time_range
from recommender.estimation.model_states import lora_params, regime, trainable_bytes
from recommender.estimation.topology import Plan
from recommender.pricing.billing import (
    HOURS_PER_MONTH,
    BillingRule,
    SpotEconomics,
    billed_hours,
    spot_economics,
)
from recommender.pricing.offers import OWNED_PROVIDER
from recommender.workload import Method, Workload

__all__ = [
    "DEFAULT_HOURS",
    "RESERVATION_LEAD_HOURS",
    "RESERVE_FROM_NODES",
    "Economics",
    "checkpoint_gib",
    "economics",
    "reservation_lead_hours",
]

#: From this many nodes, on-demand capacity is reserved ahead, not found on the day: AWS sells
#: p5/p4d clusters as EC2 Capacity Blocks for ML (1-64 instances, booked for a future start;
#: AWS EC2 user guide), GCP and Azure as reservations, smaller clouds through sales.
RESERVE_FROM_NODES = 4  # ours: 32 GPUs, past what an on-demand request is usually granted
#: The least time such a reservation takes before the run can start (ours: Capacity Blocks
#: start at a fixed hour of a later day; a cloud's sales answer within a day at best). It is
#: not billed, but counts toward a deadline and, at the time value, in the ranking.
RESERVATION_LEAD_HOURS = 24.0


def reservation_lead_hours(nodes: int, *, spot: bool, provider: str) -> float:
    """Hours before a plan of ``nodes`` on-demand nodes can start: a reservation from
    :data:`RESERVE_FROM_NODES` on (spot capacity is waited for in the spot model; the team's
    own GPUs need none)."""
    if spot or provider == OWNED_PROVIDER or nodes < RESERVE_FROM_NODES:
        return 0.0
    return RESERVATION_LEAD_HOURS


# With no duration and no token budget, options are compared on one day of running.
DEFAULT_HOURS = 24.0  # ours: a day is the natural unit a team budgets a trial run in


def checkpoint_gib(workload: Workload) -> float:
    """Size of one resumable training checkpoint for the whole job, GiB.

    Full training saves the weights as trained (bf16 weights plus the fp32 master under mixed
    precision, as DeepSpeed/FSDP checkpoints do) and the optimizer states; LoRA and QLoRA save
    only the adapters (in the dtype they train in: fp32 under PEFT's mixed precision, bf16 in
    pure bf16) and their states, a few hundred MB at most.
    """
    # What a checkpoint holds per trained parameter is what the step keeps in memory less the
    # gradients (never saved): the weights as trained, the fp32 master copy under mixed
    # precision and the optimizer states (model_states.trainable_bytes, memory.md §1.2).
    adapters = not workload.method.trains_all_weights
    per = trainable_bytes(workload.optimizer, regime(workload.precision), adapters=adapters)
    trained = (
        lora_params(workload.model, workload.lora_rank, workload.lora_targets)
        if adapters
        else workload.model.params
    )
    return trained * (per.weights + per.optimizer) / 2**30


@dataclass(frozen=True, slots=True)
class Economics:
    """What running a plan costs per unit of instance price, under one provider's rule.

    Every offer of one instance shape from one provider, on-demand or spot alike, shares
    these figures; an offer's run then costs ``billed_hours × price × nodes`` plus
    ``storage_usd`` (see :meth:`expected_cost_usd`).
    """

    nodes: int
    #: Hours of training compute before preemption overhead.
    hours: float
    wall_hours: float
    billed_hours: float
    storage_usd: float
    spot: SpotEconomics | None
    meets_deadline: bool
    #: The plan's pessimistic wall-clock and billed hours: a fine-tune's or post-training
    #: run's range top (recommender.estimation.finetune_speed.time_range) on spot's
    #: pessimistic end (equal to the expected ones for pretraining on demand, and when a
    #: stated duration fixes the run's length).
    pessimistic_wall_hours: float
    pessimistic_billed_hours: float
    #: Spot's worst case at the estimate, without the range: what spot's risk is judged on
    #: against the same run on demand (recommender.ranking.objective and .order), which the
    #: range stretches alike. Equal to the expected hours on demand.
    spot_worst_wall_hours: float
    spot_worst_billed_hours: float
    #: Tokens the run trains: the workload's budget, else throughput × ``hours``.
    tokens: float
    #: Hours before the run can start: a reservation (:func:`reservation_lead_hours`).
    lead_hours: float = 0.0

    @property
    def finish_hours(self) -> float:
        """Hours from now until the run is done: the lead, then the run."""
        return self.lead_hours + self.wall_hours

    @property
    def pessimistic_finish_hours(self) -> float:
        return self.lead_hours + self.pessimistic_wall_hours

    @property
    def spot_worst_finish_hours(self) -> float:
        return self.lead_hours + self.spot_worst_wall_hours

    def cost_usd(self, price_usd_per_hour: float) -> float:
        return self.billed_hours * price_usd_per_hour * self.nodes

    def expected_cost_usd(self, price_usd_per_hour: float) -> float:
        return self.billed_hours * price_usd_per_hour * self.nodes + self.storage_usd

    def pessimistic_cost_usd(self, price_usd_per_hour: float) -> float:
        return self.pessimistic_billed_hours * price_usd_per_hour * self.nodes + self.storage_usd

    def spot_worst_cost_usd(self, price_usd_per_hour: float) -> float:
        return self.spot_worst_billed_hours * price_usd_per_hour * self.nodes + self.storage_usd


def economics(
    workload: Workload,
    plan: Plan,
    *,
    rule: BillingRule,
    spot: bool,
    tokens_per_hour: float,
    checkpoint_size_gib: float | None = None,
    gpu_id: str | None = None,
    ranged: bool = True,
) -> Economics:
    """Hours, billed hours, storage and spot overhead of ``plan`` under ``rule``: what every
    offer of one instance shape from one provider, on-demand or spot alike, shares.

    ``tokens_per_hour`` is the layout's training rate on the offer's network
    (:func:`recommender.estimation.throughput.tokens_per_hour`). ``checkpoint_size_gib`` is
    :func:`checkpoint_gib` of the workload (pass it when pricing many shapes for one
    workload; it is computed when omitted). ``ranged=False`` keeps a fine-tune's time range
    out of the pessimistic hours: for work defined as what a stated duration buys, whose run
    stops when the duration is up.
    """
    # Hours to train the token budget, if there is one.
    computed = None if workload.tokens is None else workload.tokens / tokens_per_hour
    if computed is not None and workload.method is not Method.PRETRAIN:
        # A fine-tune's fixed costs: start, load, checkpoints and evaluation (issue #32,
        # recommender.estimation.finetune_speed)
        computed += eval_tokens(workload) / tokens_per_hour
        computed += run_overhead_s(workload, plan.gpus) / 3600
    nodes = plan.nodes
    hours = computed if computed is not None else (workload.duration_hours or DEFAULT_HOURS)
    tokens = workload.tokens if workload.tokens is not None else tokens_per_hour * hours
    ckpt = checkpoint_gib(workload) if checkpoint_size_gib is None else checkpoint_size_gib
    preemption = (
        spot_economics(rule, nodes=nodes, checkpoint_gib=ckpt, hours=hours, gpu_id=gpu_id)
        if spot
        else None
    )
    # A token budget takes longer when preempted; a duration is a duration.
    wall = run = worst_wall = worst_run = hours
    if preemption is not None and computed is not None:
        wall, run = preemption.elapsed_hours, preemption.run_hours
        pess = preemption.pessimistic
        worst_wall, worst_run = (pess.elapsed_hours, pess.run_hours) if pess else (wall, run)
    if preemption is not None and computed is None and preemption.elapsed_hours > 0:
        # A fixed run length on spot: preemptions and waits eat into the compute done.
        tokens *= hours / preemption.elapsed_hours
    # Fine-tunes and post-training carry a time range (issue #32): the plan's pessimistic
    # hours are its top (recommender.estimation.finetune_speed.time_range), spot's
    # preemptions included (a longer run meets more of them); a deadline is judged on them.
    # A stated duration is a length, not an estimate: no range (nor for the work defined
    # from one: ``ranged``).
    top = time_range(workload)[1] if computed is not None and ranged else 1.0
    pess_wall, pess_run = worst_wall * top, worst_run * top
    billed = billed_hours(rule, run)
    # One checkpoint kept in object storage for the run (at least a month is not assumed:
    # storage is billed pro rata by the hour on every provider in RULES).
    storage = ckpt * 2**30 / 1e9 * rule.storage_usd_per_gb_month * wall / HOURS_PER_MONTH
    deadline = workload.deadline_hours
    lead = reservation_lead_hours(nodes, spot=spot, provider=rule.provider)
    return Economics(
        nodes=nodes,
        hours=hours,
        wall_hours=wall,
        billed_hours=billed,
        storage_usd=storage,
        spot=preemption,
        meets_deadline=deadline is None or lead + pess_wall <= deadline,
        pessimistic_wall_hours=pess_wall,
        pessimistic_billed_hours=billed_hours(rule, pess_run),
        spot_worst_wall_hours=worst_wall,
        spot_worst_billed_hours=billed_hours(rule, worst_run),
        tokens=tokens,
        lead_hours=lead,
    )
