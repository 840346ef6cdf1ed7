"""A layout of a workload on identical GPUs, and the notes that explain its strategy.

A switch (checkpointing, sharding, offload) is on only when it is what makes the job fit,
and :attr:`Plan.notes` says so, with what it costs; a plan that does not fit says by how
much, and whether CPU offload would have made it fit.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from recommender.estimation.activations import Kernels
from recommender.estimation.memory import (
    MemoryBreakdown,
    MemoryModel,
    estimate_memory,
    safety_margin_gib,
)
from recommender.estimation.parallelism import parallel_notes
from recommender.estimation.posttrain import SPECS
from recommender.estimation.strategies import MAX_GPUS_PER_NODE, Strategy
from recommender.workload import Objective, Offload, Sharding, Workload

__all__ = [
    "CHECKPOINTING_COMPUTE_COST",
    "Plan",
    "offload_hint",
    "plan_notes",
]

#: Full recomputation re-runs the forward: 8·N·D instead of 6·N·D FLOPs (Korthikanti §5;
#: Transformer Math 101) → about a third more compute.
CHECKPOINTING_COMPUTE_COST = 2 / 6


@dataclass(frozen=True, slots=True)
class Plan:
    """One layout of the workload on identical GPUs, with its per-GPU memory and the notes
    that say what its strategy switched on and why (or why the job does not fit)."""

    gpu_id: str
    gpus: int
    gpus_per_node: int
    nodes: int
    strategy: Strategy
    memory: MemoryBreakdown
    usable_gib: float
    fits: bool
    #: Fits with the safety margin to spare (:func:`safe_limit_gib`): the layout search's
    #: own test, which a caller shows with a warning when it fails.
    safe: bool
    notes: tuple[str, ...]

    @property
    def headroom_frac(self) -> float:
        """Share of usable memory left over; negative when the job does not fit."""
        return (self.usable_gib - self.memory.total_gib) / self.usable_gib

    @property
    def headroom_gib(self) -> float:
        return self.usable_gib - self.memory.total_gib

    @property
    def margin_gib(self) -> float:
        """Memory a plan should leave free on this GPU (:func:`safety_margin_gib`)."""
        return safety_margin_gib(self.usable_gib)

    @property
    def host_ram_gib(self) -> float:
        """Host RAM one node needs for offloaded states (0 without offload)."""
        return self.memory.cpu_offload_gib * self.gpus_per_node

    def describe(self) -> str:
        """``4× A100-SXM-80GB, FSDP full shard + activation checkpointing``."""
        nodes = f" ({self.nodes} nodes × {self.gpus_per_node})" if self.nodes > 1 else ""
        return f"{self.gpus}× {self.gpu_id}{nodes}, {self.strategy.describe(self.gpus)}"


def offload_hint(
    workload: Workload, memory: MemoryModel, *, gpus: int, gpus_per_node: int, usable: float
) -> tuple[str, ...]:
    """Would parameter + optimizer offload make it fit? Say so with the host RAM it needs."""
    if workload.sharding is not None and not Strategy.compatible(workload.sharding, Offload.PARAMS):
        return ()
    sharding = workload.sharding or (Sharding.ZERO3 if gpus == 1 else Sharding.FSDP)
    ckpt = True if workload.checkpointing is None else workload.checkpointing
    strategy = Strategy(sharding, Offload.PARAMS, ckpt)
    mem = memory.breakdown(strategy, gpus=gpus, gpus_per_node=gpus_per_node)
    if mem.total_gib > usable:
        return ()
    host = mem.cpu_offload_gib * gpus_per_node
    return (
        f"would fit with {strategy.describe(gpus)} ({mem.total_gib:.1f} GiB/GPU) on a node with "
        f"~{host:.0f} GiB host RAM, several times slower",
    )


def plan_notes(
    workload: Workload,
    strategy: Strategy,
    mem: MemoryBreakdown,
    fits: bool,
    tried: list[tuple[Strategy, float]],
    *,
    usable: float,
    gpus: int,
    kernels: Kernels,
    limit: float | None = None,
) -> tuple[str, ...]:
    """What the plan switched on and why; ``tried`` holds the strategies tried before
    ``strategy`` with their per-GPU totals (GiB), ``limit`` the per-GPU figure the search
    held them to (usable memory less the safety margin; ``usable`` when it could not)."""
    notes: list[str] = []
    over = (
        f"> {usable:.1f} usable"
        if limit is None or limit >= usable
        else f"> {limit:.1f} (usable {usable:.1f} less the safety margin)"
    )
    if not fits:
        notes.append(
            f"does not fit: even {strategy.describe(gpus)} needs {mem.total_gib:.1f} GiB/GPU "
            f"> {usable:.1f} usable"
        )
        return tuple(notes)

    if strategy.checkpointing:
        if workload.checkpointing:
            notes.append("activation checkpointing on, as requested (costs ~33% more compute)")
        else:
            without = next(
                (
                    total
                    for s, total in tried
                    if s.sharding is strategy.sharding
                    and s.offload is strategy.offload
                    and s.parallel == strategy.parallel
                    and not s.checkpointing
                ),
                None,
            )
            detail = f": without it {without:.1f} GiB/GPU {over}" if without else ""
            notes.append(
                f"activation checkpointing switched on{detail} "
                f"(costs ~{CHECKPOINTING_COMPUTE_COST:.0%} more compute)"
            )
    if not strategy.parallel.trivial:
        notes += parallel_notes(workload, strategy, tried, usable=usable, gpus=gpus, over=over)
    elif gpus > 1 and strategy.sharding is not Sharding.DDP:
        if workload.sharding is not None:
            notes.append(f"{strategy.describe(gpus).split(' + ')[0]}, as requested")
        else:
            # The replicated layout with the same checkpointing choice, as the comparison.
            ddp = next(
                (
                    total
                    for s, total in tried
                    if s.sharding is Sharding.DDP and s.checkpointing == strategy.checkpointing
                ),
                None,
            )
            detail = f": replicated (DDP) it would need {ddp:.1f} GiB/GPU {over}" if ddp else ""
            notes.append(
                f"{strategy.describe(gpus).split(' + ')[0]} sharding switched on{detail} "
                "(adds all-gather/reduce-scatter traffic)"
            )
    if strategy.offload is not Offload.NONE:
        what = (
            "optimizer states"
            if strategy.offload is Offload.OPTIMIZER
            else ("parameters and optimizer states")
        )
        host = mem.cpu_offload_gib * min(gpus, MAX_GPUS_PER_NODE)
        reason = (
            "as requested"
            if workload.offload is not None
            else ("nothing fits on the GPUs without it")
        )
        notes.append(
            f"{what} offloaded to CPU RAM ({reason}): needs ~{host:.0f} GiB host RAM per node "
            "and runs several times slower"
        )
    if workload.savers.labels:
        notes.append("counted with the memory savers stated: " + ", ".join(workload.savers.labels))
    if workload.objective is not Objective.SFT:
        notes.append(_against_sft(workload, strategy, mem, gpus=gpus, kernels=kernels))
    if not kernels.fused_for(workload):
        notes.append(
            "attention scores are materialised (no fused flash kernel): the s² term counts"
        )
    return tuple(notes)


def _against_sft(
    workload: Workload, strategy: Strategy, mem: MemoryBreakdown, *, gpus: int, kernels: Kernels
) -> str:
    """A post-training plan next to SFT of the same model on the same layout, which it never
    undercuts (the extra sequences, models and generation only add): a post-training answer
    can show less memory than an SFT answer only because it runs on another layout."""
    sft = replace(workload, objective=Objective.SFT, precomputed_reference=False)
    per_node = min(gpus, MAX_GPUS_PER_NODE)
    base = estimate_memory(sft, strategy, gpus=gpus, gpus_per_node=per_node, kernels=kernels)
    spec = SPECS[workload.objective]
    why = []
    if spec.sequences == 2:
        why.append("two sequences per sample")
    if spec.reference:
        if workload.precomputed_reference:
            why.append("reference log-probs precomputed, no reference model")
        elif workload.method.trains_all_weights:
            why.append("a frozen reference model")
        else:
            why.append("reference = the base with adapters off (free)")
    elif not spec.value:
        why.append("no reference model")
    if spec.reward:
        why.append("a reward model")
    if spec.value:
        why.append("a trained value model")
    if spec.generates:
        why.append("generation's KV cache")
    label = workload.objective.label
    return (
        f"{label} on this layout: {mem.total_gib:.1f} GiB/GPU vs {base.total_gib:.1f} for SFT "
        f"of the same model on the same layout ({', '.join(why)}); an SFT answer on another "
        "layout can show more"
    )
