"""The smallest layout that holds a workload, and the cheapest strategy that makes it fit.

Strategies are tried cheapest first, so a switch is on only when it is what makes the job
fit (and :attr:`Plan.notes` says so, with what it costs):

* one GPU: plain → activation checkpointing → optimizer CPU offload (DeepSpeed ZeRO-Offload)
  → parameter offload (ZeRO-3 offload), the offload rungs each without then with
  checkpointing;
* several GPUs in one node: DDP → ZeRO-1 → ZeRO-2 → FSDP full shard (≡ ZeRO-3) without
  checkpointing, then the same with it, offload last;
* several nodes: HSDP (full shard inside a node, replicated across) → FSDP across all GPUs,
  without then with checkpointing, offload last.

Whatever the workload fixes (sharding, offload, checkpointing, a GPU count) is honoured.
CPU offload needs ~16 bytes of host RAM per trained parameter (DeepSpeed's estimators), so
the search proposes it only when the caller passes the node's host RAM (``host_ram_gib``);
otherwise a plan that does not fit says whether offload would have made it fit.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from recommender.gpus import GpuSpec
from recommender.memory import (
    DEFAULT_KERNELS,
    FULL_SHARDING,
    Kernels,
    MemoryBreakdown,
    Strategy,
    estimate_memory,
    usable_gib,
)
from recommender.workload import Offload, Sharding, Workload

__all__ = [
    "CHECKPOINTING_COMPUTE_COST",
    "MAX_GPUS_PER_NODE",
    "Plan",
    "candidate_strategies",
    "evaluate",
    "fit_on_nodes",
    "smallest_layout",
]

#: Largest single node the search considers: HGX/DGX boards carry 8 GPUs.
MAX_GPUS_PER_NODE = 8
#: Full recomputation re-runs the forward: 8·N·D instead of 6·N·D FLOPs (Korthikanti §5;
#: Transformer Math 101) → about a third more compute.
CHECKPOINTING_COMPUTE_COST = 2 / 6
_SINGLE_NODE_COUNTS = (1, 2, 4, 8)
_MULTI_NODE_LIMIT = 64


@dataclass(frozen=True, slots=True)
class Plan:
    """One layout of the workload on identical GPUs, with its per-GPU memory."""

    gpu_id: str
    gpus: int
    gpus_per_node: int
    nodes: int
    strategy: Strategy
    memory: MemoryBreakdown
    usable_gib: float
    fits: bool
    notes: tuple[str, ...] = ()

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


# ------------------------------------------------------------------ search


def _with_checkpointing(workload: Workload) -> tuple[bool, ...]:
    if workload.checkpointing is not None:
        return (workload.checkpointing,)
    return (False, True)


def candidate_strategies(
    workload: Workload, *, gpus: int, nodes: int, allow_offload: bool = True
) -> tuple[Strategy, ...]:
    """Strategies to try for this layout, cheapest first, honouring what the workload fixes.

    Offload rungs appear only with ``allow_offload`` or when the workload asks for offload.
    """
    if gpus == 1:
        base: list[tuple[Sharding, Offload]] = [
            (Sharding.DDP, Offload.NONE),
            (Sharding.ZERO2, Offload.OPTIMIZER),  # ZeRO-Offload (Ren et al. 2021)
            (Sharding.ZERO3, Offload.PARAMS),  # ZeRO-Infinity style parameter offload
        ]
    elif nodes == 1:
        base = [
            (Sharding.DDP, Offload.NONE),
            (Sharding.ZERO1, Offload.NONE),
            (Sharding.ZERO2, Offload.NONE),
            (Sharding.FSDP, Offload.NONE),
            (Sharding.FSDP, Offload.OPTIMIZER),
            (Sharding.FSDP, Offload.PARAMS),
        ]
    else:
        base = [
            (Sharding.HSDP, Offload.NONE),
            (Sharding.FSDP, Offload.NONE),
            (Sharding.FSDP, Offload.OPTIMIZER),
            (Sharding.FSDP, Offload.PARAMS),
        ]
    # Rungs without offload: every sharding without checkpointing, then with it. ZeRO-1/2
    # move as many bytes as DDP and FSDP 1.5× (ZeRO §7), mostly overlapped with compute,
    # while checkpointing costs a third more compute for certain. Offload rungs come last.
    rungs: list[tuple[Sharding, Offload, bool]] = [
        (sh, off, ck) for ck in (False, True) for sh, off in base if off is Offload.NONE
    ]
    rungs += [(sh, off, ck) for sh, off in base if off is not Offload.NONE for ck in (False, True)]
    out: list[Strategy] = []
    for sharding, offload, ckpt in rungs:
        if workload.sharding is not None:
            sharding = workload.sharding  # the ladder's offload rungs stay
        if workload.offload is not None and offload is not workload.offload:
            continue
        if workload.offload is None and offload is not Offload.NONE and not allow_offload:
            continue
        if offload is Offload.PARAMS and sharding not in FULL_SHARDING:
            continue
        if workload.checkpointing is not None and ckpt is not workload.checkpointing:
            continue
        strategy = Strategy(sharding=sharding, offload=offload, checkpointing=ckpt)
        if strategy not in out:
            out.append(strategy)
    if not out and workload.offload is not None:
        # A fixed offload our ladder does not list for this layout (e.g. optimizer offload
        # with DDP): take the fixed sharding (or FSDP) with it.
        sharding = workload.sharding or Sharding.FSDP
        if workload.offload is Offload.PARAMS and sharding not in FULL_SHARDING:
            sharding = Sharding.FSDP
        out = [Strategy(sharding, workload.offload, c) for c in _with_checkpointing(workload)]
    return tuple(out)


def _try(
    workload: Workload,
    gpu: GpuSpec,
    *,
    gpus: int,
    gpus_per_node: int,
    kernels: Kernels,
    host_ram_gib: float | None,
) -> tuple[Strategy, MemoryBreakdown, bool, list[tuple[Strategy, MemoryBreakdown]]]:
    """The first strategy that fits (or the least-memory one), and every one tried before.

    Offload is tried only when the node's host RAM is known (it must hold the offloaded
    states) or the workload asks for it.
    """
    nodes = -(-gpus // gpus_per_node)
    usable = usable_gib(gpu)
    tried: list[tuple[Strategy, MemoryBreakdown]] = []
    allow = host_ram_gib is not None
    for strategy in candidate_strategies(workload, gpus=gpus, nodes=nodes, allow_offload=allow):
        mem = estimate_memory(
            workload, strategy, gpus=gpus, gpus_per_node=gpus_per_node, kernels=kernels
        )
        host_ok = host_ram_gib is None or mem.cpu_offload_gib * gpus_per_node <= host_ram_gib
        if mem.total_gib <= usable and host_ok:
            return strategy, mem, True, tried
        tried.append((strategy, mem))
    least = min(tried, key=lambda sm: sm[1].total_gib)
    return least[0], least[1], False, tried


def _plan(
    workload: Workload,
    gpu: GpuSpec,
    *,
    gpus: int,
    gpus_per_node: int,
    kernels: Kernels = DEFAULT_KERNELS,
    host_ram_gib: float | None = None,
) -> Plan:
    strategy, mem, fits, tried = _try(
        workload,
        gpu,
        gpus=gpus,
        gpus_per_node=gpus_per_node,
        kernels=kernels,
        host_ram_gib=host_ram_gib,
    )
    usable = usable_gib(gpu)
    nodes = -(-gpus // gpus_per_node)
    notes = _notes(workload, strategy, mem, fits, tried, usable=usable, gpus=gpus, kernels=kernels)
    if not fits and host_ram_gib is None and workload.offload is None:
        notes += _offload_hint(
            workload, gpus=gpus, gpus_per_node=gpus_per_node, kernels=kernels, usable=usable
        )
    return Plan(
        gpu_id=gpu.id,
        gpus=gpus,
        gpus_per_node=gpus_per_node,
        nodes=nodes,
        strategy=strategy,
        memory=mem,
        usable_gib=usable,
        fits=fits,
        notes=notes,
    )


def _offload_hint(
    workload: Workload, *, gpus: int, gpus_per_node: int, kernels: Kernels, usable: float
) -> tuple[str, ...]:
    """Would parameter + optimizer offload make it fit? Say so with the host RAM it needs."""
    if workload.sharding is not None and workload.sharding not in FULL_SHARDING:
        return ()
    sharding = workload.sharding or (Sharding.ZERO3 if gpus == 1 else Sharding.FSDP)
    ckpt = True if workload.checkpointing is None else workload.checkpointing
    strategy = Strategy(sharding, Offload.PARAMS, ckpt)
    mem = estimate_memory(
        workload, strategy, gpus=gpus, gpus_per_node=gpus_per_node, kernels=kernels
    )
    if mem.total_gib > usable:
        return ()
    host = mem.cpu_offload_gib * gpus_per_node
    return (
        f"would fit with {strategy.describe(gpus)} ({mem.total_gib:.1f} GiB/GPU) on a node with "
        f"~{host:.0f} GiB host RAM, several times slower",
    )


def _notes(
    workload: Workload,
    strategy: Strategy,
    mem: MemoryBreakdown,
    fits: bool,
    tried: list[tuple[Strategy, MemoryBreakdown]],
    *,
    usable: float,
    gpus: int,
    kernels: Kernels,
) -> tuple[str, ...]:
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
                    m.total_gib
                    for s, m in tried
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
                    m.total_gib
                    for s, m in tried
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


def fit_on_nodes(
    workload: Workload,
    gpu: GpuSpec,
    *,
    gpus_per_node: int,
    max_nodes: int = _MULTI_NODE_LIMIT,
    multi_node: bool = True,
    kernels: Kernels = DEFAULT_KERNELS,
    host_ram_gib: float | None = None,
) -> Plan | None:
    """The fewest whole nodes of ``gpus_per_node`` × ``gpu`` on which the workload fits.

    Every GPU of each node is used. More than one node only when ``multi_node``; ``None``
    when nothing up to ``max_nodes`` fits. A GPU count the workload names is honoured (it
    must be a whole number of nodes). CPU offload is considered only when ``host_ram_gib``
    (RAM of one node, e.g. an offer's ``ram_gib``) is given, and must fit in it.
    """
    if gpus_per_node < 1:
        raise ValueError("gpus_per_node must be at least 1")
    hw = workload.hardware
    if hw is not None and hw.count is not None:
        if hw.count % gpus_per_node:
            return None
        nodes = hw.count // gpus_per_node
        if nodes > max_nodes or (nodes > 1 and not multi_node):
            return None
        plan = _plan(
            workload,
            gpu,
            gpus=hw.count,
            gpus_per_node=gpus_per_node,
            kernels=kernels,
            host_ram_gib=host_ram_gib,
        )
        return plan if plan.fits else None
    last = max_nodes if multi_node else 1
    for nodes in range(1, last + 1):
        plan = _plan(
            workload,
            gpu,
            gpus=nodes * gpus_per_node,
            gpus_per_node=gpus_per_node,
            kernels=kernels,
            host_ram_gib=host_ram_gib,
        )
        if plan.fits:
            return plan
    return None


def _layouts(max_nodes: int) -> Iterator[tuple[int, int]]:
    for count in _SINGLE_NODE_COUNTS:
        yield count, count
    for nodes in range(2, max_nodes + 1):
        yield nodes * MAX_GPUS_PER_NODE, MAX_GPUS_PER_NODE


def smallest_layout(
    workload: Workload,
    gpu: GpuSpec,
    *,
    kernels: Kernels = DEFAULT_KERNELS,
    host_ram_gib: float | None = None,
) -> Plan | None:
    """1, 2, 4 or 8 GPUs on one node, then 8-GPU nodes: the smallest layout that fits.

    A GPU count the workload names is evaluated as is (``None`` when it does not fit).
    """
    hw = workload.hardware
    if hw is not None and hw.count is not None:
        plan = evaluate(workload, gpu, gpus=hw.count, kernels=kernels, host_ram_gib=host_ram_gib)
        return plan if plan.fits else None
    for gpus, per_node in _layouts(_MULTI_NODE_LIMIT):
        plan = _plan(
            workload,
            gpu,
            gpus=gpus,
            gpus_per_node=per_node,
            kernels=kernels,
            host_ram_gib=host_ram_gib,
        )
        if plan.fits:
            return plan
    return None


def evaluate(
    workload: Workload,
    gpu: GpuSpec,
    *,
    gpus: int,
    gpus_per_node: int | None = None,
    kernels: Kernels = DEFAULT_KERNELS,
    host_ram_gib: float | None = None,
) -> Plan:
    """Exactly this hardware: the cheapest strategy that fits on it, or (``fits=False``) the
    least-memory strategy with what it would need. Up to 8 GPUs form one node by default."""
    if gpus < 1:
        raise ValueError("gpus must be at least 1")
    per_node = gpus_per_node or min(gpus, MAX_GPUS_PER_NODE)
    return _plan(
        workload,
        gpu,
        gpus=gpus,
        gpus_per_node=min(per_node, gpus),
        kernels=kernels,
        host_ram_gib=host_ram_gib,
    )
