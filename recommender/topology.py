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

from dataclasses import dataclass

from recommender.gpus import GpuSpec
from recommender.memory import (
    DEFAULT_KERNELS,
    FULL_SHARDING,
    Kernels,
    MemoryBreakdown,
    MemoryModel,
    Strategy,
    usable_gib,
)
from recommender.workload import Offload, Sharding, Workload

__all__ = [
    "CHECKPOINTING_COMPUTE_COST",
    "MAX_GPUS_PER_NODE",
    "LayoutSearch",
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


#: One rung of a layout: the strategy, its per-GPU total and the host RAM per node, GiB.
_Rung = tuple[Strategy, float, float]


class LayoutSearch:
    """The layout search for one workload, memoised for the length of one question.

    Memory does not depend on the GPU model, only on the layout (GPU count, GPUs per node)
    and the strategy, so each (layout, strategy) is estimated once and every GPU type and
    instance shape of a catalog is checked against the same figures; plans are memoised by
    usable memory (GPU types with the same memory get the same plan). Beyond one node the
    per-GPU memory of a fixed strategy never grows with the node count (shards only get
    smaller; activations and buffers stay), so the fewest nodes that fit are found by
    bisection with the same answer as trying 2, 3, 4, ... in turn.

    Keep one instance per question: it holds no state beyond the workload's own figures.
    """

    __slots__ = (
        "_fewest",
        "_fits",
        "_ladders",
        "_mems",
        "_plans",
        "_rungs",
        "_smallest",
        "kernels",
        "memory",
        "workload",
    )

    def __init__(self, workload: Workload, kernels: Kernels = DEFAULT_KERNELS) -> None:
        self.workload = workload
        self.kernels = kernels
        self.memory = MemoryModel(workload, kernels)
        self._ladders: dict[tuple[bool, bool, bool], tuple[Strategy, ...]] = {}
        self._rungs: dict[tuple[int, int, bool], tuple[tuple[_Rung, ...], float]] = {}
        self._plans: dict[tuple[float, int, int, bool, int], Plan] = {}
        self._mems: dict[tuple[Strategy, int, int], MemoryBreakdown] = {}
        self._fits: dict[tuple[int, int, float, float | None], bool] = {}
        #: Search results by (usable GiB, GPUs per node, node limit, host RAM) and by
        #: (usable GiB, host RAM): the layout found, as (GPUs, GPUs per node), or None.
        self._fewest: dict[tuple[float, int, int, float | None], tuple[int, int] | None] = {}
        self._smallest: dict[tuple[float, float | None], tuple[int, int] | None] = {}

    # -------------------------------------------------------------- per layout

    def _strategies(self, *, gpus: int, nodes: int, allow: bool) -> tuple[Strategy, ...]:
        key = (gpus == 1, nodes == 1, allow)
        ladder = self._ladders.get(key)
        if ladder is None:
            ladder = candidate_strategies(
                self.workload, gpus=gpus, nodes=nodes, allow_offload=allow
            )
            self._ladders[key] = ladder
        return ladder

    def rungs(
        self, *, gpus: int, gpus_per_node: int, allow: bool
    ) -> tuple[tuple[_Rung, ...], float]:
        """Every candidate strategy of this layout with its memory, and the least total."""
        key = (gpus, gpus_per_node, allow)
        found = self._rungs.get(key)
        if found is None:
            nodes = -(-gpus // gpus_per_node)
            rungs: list[_Rung] = []
            totals = self.memory.totals
            for strategy in self._strategies(gpus=gpus, nodes=nodes, allow=allow):
                total, host = totals(strategy, gpus=gpus, gpus_per_node=gpus_per_node)
                rungs.append((strategy, total, host * gpus_per_node))
            found = (tuple(rungs), min(r[1] for r in rungs))
            self._rungs[key] = found
        return found

    def _fits_any(
        self, *, gpus: int, gpus_per_node: int, usable: float, host_ram_gib: float | None
    ) -> bool:
        key = (gpus, gpus_per_node, usable, host_ram_gib)
        fits = self._fits.get(key)
        if fits is None:
            rungs, least = self.rungs(
                gpus=gpus, gpus_per_node=gpus_per_node, allow=host_ram_gib is not None
            )
            # Without a host-RAM limit some rung fits exactly when the least one does.
            fits = least <= usable and (
                host_ram_gib is None
                or any(total <= usable and host <= host_ram_gib for _, total, host in rungs)
            )
            self._fits[key] = fits
        return fits

    def _try(
        self, *, gpus: int, gpus_per_node: int, usable: float, host_ram_gib: float | None
    ) -> tuple[Strategy, MemoryBreakdown, bool, list[tuple[Strategy, MemoryBreakdown]]]:
        """The first strategy that fits (or the least-memory one), and every one tried before.

        Offload is tried only when the node's host RAM is known (it must hold the offloaded
        states) or the workload asks for it.
        """
        rungs, _ = self.rungs(
            gpus=gpus, gpus_per_node=gpus_per_node, allow=host_ram_gib is not None
        )
        tried: list[tuple[Strategy, MemoryBreakdown]] = []
        for strategy, total, host in rungs:
            mem = self._breakdown(strategy, gpus, gpus_per_node)
            if total <= usable and (host_ram_gib is None or host <= host_ram_gib):
                return strategy, mem, True, tried
            tried.append((strategy, mem))
        least = min(tried, key=lambda sm: sm[1].total_gib)
        return least[0], least[1], False, tried

    def _breakdown(self, strategy: Strategy, gpus: int, gpus_per_node: int) -> MemoryBreakdown:
        key = (strategy, gpus, gpus_per_node)
        mem = self._mems.get(key)
        if mem is None:
            mem = self._mems[key] = self.memory.breakdown(
                strategy, gpus=gpus, gpus_per_node=gpus_per_node
            )
        return mem

    def plan(
        self, gpu: GpuSpec, *, gpus: int, gpus_per_node: int, host_ram_gib: float | None = None
    ) -> Plan:
        """Exactly ``gpus`` GPUs, ``gpus_per_node`` to a node: the cheapest fitting strategy."""
        usable = usable_gib(gpu)
        # The plan depends on the host RAM only through which rung fits first (and whether
        # offload was allowed at all), so shapes that differ only in RAM share it.
        rungs, _ = self.rungs(
            gpus=gpus, gpus_per_node=gpus_per_node, allow=host_ram_gib is not None
        )
        first = next(
            (
                i
                for i, (_, total, host) in enumerate(rungs)
                if total <= usable and (host_ram_gib is None or host <= host_ram_gib)
            ),
            -1,
        )
        key = (usable, gpus, gpus_per_node, host_ram_gib is None, first)
        plan = self._plans.get(key)
        if plan is None:
            plan = self._build_plan(gpu, usable, gpus, gpus_per_node, host_ram_gib)
            self._plans[key] = plan
        elif plan.gpu_id != gpu.id:
            plan = Plan(
                gpu_id=gpu.id,
                gpus=plan.gpus,
                gpus_per_node=plan.gpus_per_node,
                nodes=plan.nodes,
                strategy=plan.strategy,
                memory=plan.memory,
                usable_gib=plan.usable_gib,
                fits=plan.fits,
                notes=plan.notes,
            )
        return plan

    def _build_plan(
        self,
        gpu: GpuSpec,
        usable: float,
        gpus: int,
        gpus_per_node: int,
        host_ram_gib: float | None,
    ) -> Plan:
        workload, kernels = self.workload, self.kernels
        strategy, mem, fits, tried = self._try(
            gpus=gpus, gpus_per_node=gpus_per_node, usable=usable, host_ram_gib=host_ram_gib
        )
        nodes = -(-gpus // gpus_per_node)
        notes = _notes(
            workload, strategy, mem, fits, tried, usable=usable, gpus=gpus, kernels=kernels
        )
        if not fits and host_ram_gib is None and workload.offload is None:
            notes += _offload_hint(
                workload, self.memory, gpus=gpus, gpus_per_node=gpus_per_node, usable=usable
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

    # -------------------------------------------------------------- searches

    def _fewest_nodes(
        self, *, gpus_per_node: int, last: int, usable: float, host_ram_gib: float | None
    ) -> int | None:
        """The fewest nodes in 2..``last`` on which some strategy fits (bisection)."""
        if last < 2:
            return None

        def fits(nodes: int) -> bool:
            return self._fits_any(
                gpus=nodes * gpus_per_node,
                gpus_per_node=gpus_per_node,
                usable=usable,
                host_ram_gib=host_ram_gib,
            )

        if not fits(last):
            return None
        low, high = 2, last  # fits(high) holds; find the smallest such
        while low < high:
            mid = (low + high) // 2
            if fits(mid):
                high = mid
            else:
                low = mid + 1
        return low

    def fit_on_nodes(
        self,
        gpu: GpuSpec,
        *,
        gpus_per_node: int,
        max_nodes: int = _MULTI_NODE_LIMIT,
        multi_node: bool = True,
        host_ram_gib: float | None = None,
    ) -> Plan | None:
        """As :func:`fit_on_nodes`."""
        if gpus_per_node < 1:
            raise ValueError("gpus_per_node must be at least 1")
        hw = self.workload.hardware
        if hw is not None and hw.count is not None:
            if hw.count % gpus_per_node:
                return None
            nodes = hw.count // gpus_per_node
            if nodes > max_nodes or (nodes > 1 and not multi_node):
                return None
            plan = self.plan(
                gpu, gpus=hw.count, gpus_per_node=gpus_per_node, host_ram_gib=host_ram_gib
            )
            return plan if plan.fits else None
        last = max_nodes if multi_node else 1
        usable = usable_gib(gpu)
        key = (usable, gpus_per_node, last, host_ram_gib)
        if key in self._fewest:
            found = self._fewest[key]
        else:
            found = None
            if last >= 1 and self._fits_any(
                gpus=gpus_per_node,
                gpus_per_node=gpus_per_node,
                usable=usable,
                host_ram_gib=host_ram_gib,
            ):
                found = (gpus_per_node, gpus_per_node)
            else:
                fewest = self._fewest_nodes(
                    gpus_per_node=gpus_per_node,
                    last=last,
                    usable=usable,
                    host_ram_gib=host_ram_gib,
                )
                if fewest is not None:
                    found = (fewest * gpus_per_node, gpus_per_node)
            self._fewest[key] = found
        if found is None:
            return None
        return self.plan(gpu, gpus=found[0], gpus_per_node=found[1], host_ram_gib=host_ram_gib)

    def smallest_layout(self, gpu: GpuSpec, *, host_ram_gib: float | None = None) -> Plan | None:
        """As :func:`smallest_layout`."""
        hw = self.workload.hardware
        if hw is not None and hw.count is not None:
            plan = self.evaluate(gpu, gpus=hw.count, host_ram_gib=host_ram_gib)
            return plan if plan.fits else None
        usable = usable_gib(gpu)
        key = (usable, host_ram_gib)
        if key in self._smallest:
            found = self._smallest[key]
        else:
            found = None
            for count in _SINGLE_NODE_COUNTS:
                if self._fits_any(
                    gpus=count, gpus_per_node=count, usable=usable, host_ram_gib=host_ram_gib
                ):
                    found = (count, count)
                    break
            else:
                nodes = self._fewest_nodes(
                    gpus_per_node=MAX_GPUS_PER_NODE,
                    last=_MULTI_NODE_LIMIT,
                    usable=usable,
                    host_ram_gib=host_ram_gib,
                )
                if nodes is not None:
                    found = (nodes * MAX_GPUS_PER_NODE, MAX_GPUS_PER_NODE)
            self._smallest[key] = found
        if found is None:
            return None
        return self.plan(gpu, gpus=found[0], gpus_per_node=found[1], host_ram_gib=host_ram_gib)

    def evaluate(
        self,
        gpu: GpuSpec,
        *,
        gpus: int,
        gpus_per_node: int | None = None,
        host_ram_gib: float | None = None,
    ) -> Plan:
        """As :func:`evaluate`."""
        if gpus < 1:
            raise ValueError("gpus must be at least 1")
        per_node = gpus_per_node or min(gpus, MAX_GPUS_PER_NODE)
        return self.plan(
            gpu, gpus=gpus, gpus_per_node=min(per_node, gpus), host_ram_gib=host_ram_gib
        )


def _offload_hint(
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
    return LayoutSearch(workload, kernels).fit_on_nodes(
        gpu,
        gpus_per_node=gpus_per_node,
        max_nodes=max_nodes,
        multi_node=multi_node,
        host_ram_gib=host_ram_gib,
    )


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
    return LayoutSearch(workload, kernels).smallest_layout(gpu, host_ram_gib=host_ram_gib)


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
    return LayoutSearch(workload, kernels).evaluate(
        gpu, gpus=gpus, gpus_per_node=gpus_per_node, host_ram_gib=host_ram_gib
    )
