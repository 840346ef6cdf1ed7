"""A layout of a workload on identical GPUs, and the notes that explain its strategy.

A switch (checkpointing, sharding, offload) is on only when it is what makes the job fit,
and :attr:`Plan.notes` says so, with what it costs; a plan that does not fit says by how
much, and whether CPU offload would have made it fit.
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any, Protocol

from recommender.activations import Kernels
from recommender.memory import MemoryBreakdown, MemoryModel, Strategy
from recommender.model_states import FULL_SHARDING
from recommender.strategies import MAX_GPUS_PER_NODE
from recommender.workload import Offload, Sharding, Workload

__all__ = [
    "CHECKPOINTING_COMPUTE_COST",
    "DetailsSource",
    "Plan",
    "PlanDetails",
    "offload_hint",
    "plan_notes",
]

#: Full recomputation re-runs the forward: 8·N·D instead of 6·N·D FLOPs (Korthikanti §5;
#: Transformer Math 101) → about a third more compute.
CHECKPOINTING_COMPUTE_COST = 2 / 6


#: A plan's per-GPU memory and its notes: what only a shown plan needs.
PlanDetails = tuple[MemoryBreakdown, tuple[str, ...]]


class DetailsSource(Protocol):
    """Where a plan's details come from: the layout search that made it."""

    def plan_details(self, key: Hashable) -> PlanDetails:
        """The memory breakdown and notes of the plan the search keeps under ``key``."""
        ...


#: What a plan's repr and equality show, in order (its fields, with the details in place).
_REPR_FIELDS = (
    "gpu_id",
    "gpus",
    "gpus_per_node",
    "nodes",
    "strategy",
    "memory",
    "usable_gib",
    "fits",
    "notes",
)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Plan:
    """One layout of the workload on identical GPUs, with its per-GPU memory.

    The memory breakdown and the notes are computed when first read and kept by the search
    that made the plan (``source``, under ``source_key``): a question plans every instance
    shape of the catalog and shows a few. Plans compare and hash by their values (the
    details included), however they were made.
    """

    gpu_id: str
    gpus: int
    gpus_per_node: int
    nodes: int
    strategy: Strategy
    usable_gib: float
    fits: bool
    source: DetailsSource
    source_key: Hashable

    @staticmethod
    def of(
        gpu_id: str,
        gpus: int,
        gpus_per_node: int,
        nodes: int,
        strategy: Strategy,
        usable_gib: float,
        fits: bool,
        source: DetailsSource,
        source_key: Hashable,
    ) -> Plan:
        """``Plan(...)`` with the fields in order, in about a fifth of the time: the layout
        search makes a plan for every instance shape of a new model setup (~20 a question
        on the bundled catalog, ~3 µs each through the frozen dataclass's ``__init__``)."""
        # Any: mypy sees the frozen Plan's fields as read-only; the draft's are not.
        plan: Any = object.__new__(_PlanDraft)
        plan.gpu_id = gpu_id
        plan.gpus = gpus
        plan.gpus_per_node = gpus_per_node
        plan.nodes = nodes
        plan.strategy = strategy
        plan.usable_gib = usable_gib
        plan.fits = fits
        plan.source = source
        plan.source_key = source_key
        plan.__class__ = Plan  # now frozen (see _PlanDraft)
        done: Plan = plan
        return done

    @property
    def memory(self) -> MemoryBreakdown:
        """Per-GPU memory of this layout and strategy."""
        return self.source.plan_details(self.source_key)[0]

    @property
    def notes(self) -> tuple[str, ...]:
        """What the strategy switched on and why, or why the job does not fit."""
        return self.source.plan_details(self.source_key)[1]

    def _values(self) -> tuple[object, ...]:
        memory, notes = self.source.plan_details(self.source_key)
        return (
            self.gpu_id,
            self.gpus,
            self.gpus_per_node,
            self.nodes,
            self.strategy,
            memory,
            self.usable_gib,
            self.fits,
            notes,
        )

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not Plan:
            return NotImplemented
        return self is other or self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def __repr__(self) -> str:
        values = ", ".join(f"{f}={v!r}" for f, v in zip(_REPR_FIELDS, self._values(), strict=True))
        return f"Plan({values})"

    @property
    def headroom_frac(self) -> float:
        """Share of usable memory left over; negative when the job does not fit."""
        return (self.usable_gib - self.memory.total_gib) / self.usable_gib

    @property
    def headroom_gib(self) -> float:
        return self.usable_gib - self.memory.total_gib

    @property
    def host_ram_gib(self) -> float:
        """Host RAM one node needs for offloaded states (0 without offload)."""
        return self.memory.cpu_offload_gib * self.gpus_per_node

    def describe(self) -> str:
        """``4× A100-SXM-80GB, FSDP full shard + activation checkpointing``."""
        nodes = f" ({self.nodes} nodes × {self.gpus_per_node})" if self.nodes > 1 else ""
        return f"{self.gpus}× {self.gpu_id}{nodes}, {self.strategy.describe(self.gpus)}"


class _PlanDraft(Plan):
    """A :class:`Plan` while :meth:`Plan.of` fills it in; it never leaves that method.

    The same device as ``offers._OfferDraft``: a frozen dataclass stores each field through
    ``object.__setattr__``; this subclass adds no slots and restores object's own setters,
    so plain slot stores apply, and the finished object becomes a ``Plan`` by ``__class__``
    assignment (the same layout). Equality, hashing and ``repr`` see an ordinary ``Plan``.
    """

    __slots__ = ()
    __setattr__ = object.__setattr__
    __delattr__ = object.__delattr__


def offload_hint(
    workload: Workload, memory: MemoryModel, *, gpus: int, gpus_per_node: int, usable: float
) -> tuple[str, ...]:
    """Would parameter + optimizer offload make it fit? Say so with the host RAM it needs."""
    if workload.sharding is not None and workload.sharding not in FULL_SHARDING:
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
) -> tuple[str, ...]:
    """What the plan switched on and why; ``tried`` holds the strategies tried before
    ``strategy`` with their per-GPU totals (GiB)."""
    notes: list[str] = []
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
                    and not s.checkpointing
                ),
                None,
            )
            detail = f": without it {without:.1f} GiB/GPU > {usable:.1f} usable" if without else ""
            notes.append(
                f"activation checkpointing switched on{detail} "
                f"(costs ~{CHECKPOINTING_COMPUTE_COST:.0%} more compute)"
            )
    if gpus > 1 and strategy.sharding is not Sharding.DDP:
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
            detail = (
                f": replicated (DDP) it would need {ddp:.1f} GiB/GPU > {usable:.1f} usable"
                if ddp
                else ""
            )
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
    if not kernels.flash_for(workload.model.block):
        notes.append(
            "attention scores are materialised (no fused flash kernel): the s² term counts"
        )
    return tuple(notes)
