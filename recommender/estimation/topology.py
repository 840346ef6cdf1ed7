"""The smallest layout that holds a workload, and the cheapest strategy that makes it fit.

The search is plain:

* **One layout** (``gpus`` GPUs, ``gpus_per_node`` to a node): climb the ladder of
  strategies, cheapest first (:mod:`recommender.estimation.strategies`), and take the first rung
  that fits with the memory safety margin; else the first that fits at all (not :attr:`Plan.safe`);
  else the leanest rung, which does not fit. A switch (checkpointing, sharding, offload) is
  therefore on only when it is what makes the job fit, and :attr:`Plan.notes` says so
  (:mod:`recommender.estimation.plan`).
* **Fewest nodes** of an instance shape: one node, then 2, 4, 8 … nodes until a layout fits,
  then bisection between the last count that did not and the first that did. Per-GPU memory
  of a strategy shrinks as nodes are added (states are sharded over more ranks), so fitting
  is monotone in the node count except where a pipeline degree must divide the GPU count;
  there the search may return a few more nodes than the fewest.

Whatever the workload fixes (sharding, offload, checkpointing, a GPU count) is honoured. CPU
offload needs ~16 bytes of host RAM per trained parameter (DeepSpeed's estimators), so it is
proposed only when the caller passes the node's host RAM, and must fit in it with
:data:`HOST_RAM_RESERVE_FRAC` left for the OS, the data loaders and pinned buffers.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import replace

from recommender.estimation.activations import DEFAULT_KERNELS, Kernels
from recommender.estimation.hardware import precision_on
from recommender.estimation.memory import MemoryModel, safe_limit_gib, usable_gib
from recommender.estimation.plan import CHECKPOINTING_COMPUTE_COST, Plan, offload_hint, plan_notes
from recommender.estimation.strategies import MAX_GPUS_PER_NODE, Strategy, candidate_strategies
from recommender.gpus import GpuSpec, IntraNode, all_gpus
from recommender.workload import Workload

__all__ = [
    "CHECKPOINTING_COMPUTE_COST",
    "HOST_RAM_RESERVE_FRAC",
    "MAX_GPUS_PER_NODE",
    "MULTI_NODE_LIMIT",
    "LayoutSearch",
    "Plan",
    "candidate_strategies",
    "host_ram_limit_gib",
]

#: GPU counts :meth:`LayoutSearch.smallest_layout` tries on one node before 8-GPU nodes.
_SINGLE_NODE_COUNTS = (1, 2, 4, 8)
#: Most nodes a search tries: 2,048 nodes of 8 GPUs is 16,384 GPUs, the cluster Llama 3 405B
#: trained on (Llama 3 paper, §3.3.1).
MULTI_NODE_LIMIT = 2048
#: Share of a node's host RAM an offload plan leaves free: the OS, page cache, data-loader
#: workers and pinned transfer buffers (DeepSpeed ZeRO-Offload pins its buffers; ours: 15 %,
#: the GPU safety margin's share, so 1,600 GiB hosts offer 1,360 GiB to offloaded states).
HOST_RAM_RESERVE_FRAC = 0.15


def host_ram_limit_gib(host_ram_gib: float) -> float:
    """Host RAM an offload plan may use on a node with ``host_ram_gib``."""
    return host_ram_gib * (1 - HOST_RAM_RESERVE_FRAC)


class LayoutSearch:
    """The layout search for one workload: plain methods over one memory model per
    precision the GPUs searched can run (a GPU without bf16 trains in fp16 mixed precision,
    :mod:`recommender.estimation.hardware`). It lives as long as one question."""

    def __init__(self, workload: Workload, kernels: Kernels = DEFAULT_KERNELS) -> None:
        self.workload = workload
        self.kernels = kernels
        self.memory = MemoryModel(workload, kernels)
        self._other_precisions: dict[str, tuple[Workload, MemoryModel, str]] = {}

    def _for(self, gpu: GpuSpec) -> tuple[Workload, MemoryModel, str | None]:
        """The workload as ``gpu`` runs it, its memory model, and the note that says why it
        differs from the one asked for (``None`` when it does not)."""
        precision, note = precision_on(self.workload.precision, gpu)
        if note is None:
            return self.workload, self.memory, None
        if precision not in self._other_precisions:
            variant = replace(self.workload, precision=precision)
            self._other_precisions[precision] = (variant, MemoryModel(variant, self.kernels), note)
        return self._other_precisions[precision]

    # -------------------------------------------------------------- one layout

    def plan(
        self, gpu: GpuSpec, *, gpus: int, gpus_per_node: int, host_ram_gib: float | None = None
    ) -> Plan:
        """Exactly ``gpus`` GPUs, ``gpus_per_node`` to a node: the cheapest strategy that
        keeps the safety margin, else the cheapest that fits at all (not :attr:`Plan.safe`),
        else the leanest, which does not fit (``fits=False``, with what it would need).

        Offload rungs are tried only when the node's host RAM is known (it must hold the
        offloaded states, :func:`host_ram_limit_gib`) or the workload asks for offload.
        """
        workload, memory, note = self._for(gpu)
        ladder = candidate_strategies(
            workload,
            gpus=gpus,
            nodes=-(-gpus // gpus_per_node),
            allow_offload=host_ram_gib is not None or workload.offload is not None,
            gpus_per_node=gpus_per_node,
            nvlink=gpu.intra_node is IntraNode.NVLINK,
        )
        usable = usable_gib(gpu)
        host_limit = None if host_ram_gib is None else host_ram_limit_gib(host_ram_gib)
        # Each rung's per-GPU total, read up the ladder only as far as needed.
        tried: list[tuple[Strategy, float]] = []
        chosen: Strategy | None = None
        safe = False
        for limit in (safe_limit_gib(usable), usable):
            tried = []
            for strategy in ladder:
                total, host = _rung(memory, strategy, gpus, gpus_per_node)
                if total <= limit and (host_limit is None or host * gpus_per_node <= host_limit):
                    chosen = strategy
                    break
                tried.append((strategy, total))
            if chosen is not None:
                safe = limit < usable
                break
        fits = chosen is not None
        if chosen is None:  # the leanest rung, with every rung in the notes
            chosen = min(tried, key=lambda rung: rung[1])[0]
        mem = memory.breakdown(chosen, gpus=gpus, gpus_per_node=gpus_per_node)
        notes = plan_notes(
            workload,
            chosen,
            mem,
            fits,
            tried,
            usable=usable,
            gpus=gpus,
            kernels=self.kernels,
            limit=safe_limit_gib(usable) if safe else usable,
        )
        if note is not None:
            notes = (note, *notes)
        if not fits and host_ram_gib is None and workload.offload is None:
            notes += offload_hint(
                workload, memory, gpus=gpus, gpus_per_node=gpus_per_node, usable=usable
            )
        return Plan(
            gpu_id=gpu.id,
            gpus=gpus,
            gpus_per_node=gpus_per_node,
            nodes=-(-gpus // gpus_per_node),
            strategy=chosen,
            memory=mem,
            usable_gib=usable,
            fits=fits,
            safe=safe,
            notes=notes,
        )

    # -------------------------------------------------------------- fewest nodes

    def fewest_nodes(
        self,
        gpu: GpuSpec,
        *,
        gpus_per_node: int,
        max_nodes: int,
        host_ram_gib: float | None = None,
    ) -> Plan | None:
        """The fewest nodes of ``gpus_per_node`` × ``gpu`` (up to ``max_nodes``) on which the
        job keeps the safety margin, else on which it fits at all; ``None`` when it fits on
        none. See the module docstring for the search."""
        for safe_only in (True, False):

            def ok(plan: Plan, safe_only: bool = safe_only) -> bool:
                return plan.safe if safe_only else plan.fits

            def at(nodes: int) -> Plan:
                return self.plan(
                    gpu,
                    gpus=nodes * gpus_per_node,
                    gpus_per_node=gpus_per_node,
                    host_ram_gib=host_ram_gib,
                )

            low, nodes = 0, 1  # ``low`` nodes do not fit (0: none tried yet)
            while nodes <= max_nodes and not ok(plan := at(nodes)):
                low, nodes = nodes, nodes * 2
            if nodes > max_nodes:
                if low < max_nodes and ok(plan := at(max_nodes)):
                    nodes = max_nodes
                else:
                    continue
            high, found = nodes, plan
            while high - low > 1:
                mid = (low + high) // 2
                if ok(plan := at(mid)):
                    high, found = mid, plan
                else:
                    low = mid
            return found
        return None

    def fit_on_nodes(
        self,
        gpu: GpuSpec,
        *,
        gpus_per_node: int,
        max_nodes: int = MULTI_NODE_LIMIT,
        multi_node: bool = True,
        host_ram_gib: float | None = None,
    ) -> Plan | None:
        """The fewest whole nodes of ``gpus_per_node`` × ``gpu`` on which the workload fits:
        more than one only when ``multi_node`` (a fast fabric); a GPU count the workload
        names is evaluated as is (a whole number of nodes, ``None`` when it does not fit)."""
        if gpus_per_node < 1:
            raise ValueError("gpus_per_node must be at least 1")
        hw = self.workload.hardware
        if hw is not None and hw.count is not None:
            if hw.count % gpus_per_node or (hw.count > gpus_per_node and not multi_node):
                return None
            plan = self.plan(
                gpu, gpus=hw.count, gpus_per_node=gpus_per_node, host_ram_gib=host_ram_gib
            )
            return plan if plan.fits else None
        return self.fewest_nodes(
            gpu,
            gpus_per_node=gpus_per_node,
            max_nodes=max_nodes if multi_node else 1,
            host_ram_gib=host_ram_gib,
        )

    def smallest_layout(self, gpu: GpuSpec, *, host_ram_gib: float | None = None) -> Plan | None:
        """1, 2, 4 or 8 GPUs on one node, then the fewest 8-GPU nodes: the smallest layout
        that keeps the safety margin, else the smallest that fits. A GPU count the workload
        names is evaluated as is (``None`` when it does not fit)."""
        hw = self.workload.hardware
        if hw is not None and hw.count is not None:
            plan = self.evaluate(gpu, gpus=hw.count, host_ram_gib=host_ram_gib)
            return plan if plan.fits else None
        singles = [
            self.plan(gpu, gpus=n, gpus_per_node=n, host_ram_gib=host_ram_gib)
            for n in _SINGLE_NODE_COUNTS
        ]
        found = next((p for p in singles if p.safe), None) or next(
            (p for p in singles if p.fits), None
        )
        if found is not None:
            return found
        return self.fewest_nodes(
            gpu,
            gpus_per_node=MAX_GPUS_PER_NODE,
            max_nodes=MULTI_NODE_LIMIT,
            host_ram_gib=host_ram_gib,
        )

    def evaluate(
        self,
        gpu: GpuSpec,
        *,
        gpus: int,
        gpus_per_node: int | None = None,
        host_ram_gib: float | None = None,
    ) -> Plan:
        """Exactly this hardware: the cheapest strategy that fits on it, or (``fits=False``)
        the least-memory strategy with what it would need. Up to 8 GPUs form one node."""
        if gpus < 1:
            raise ValueError("gpus must be at least 1")
        per_node = min(gpus_per_node or MAX_GPUS_PER_NODE, gpus)
        return self.plan(gpu, gpus=gpus, gpus_per_node=per_node, host_ram_gib=host_ram_gib)

    def smallest_layouts(self, gpus: Iterable[GpuSpec] | None = None) -> tuple[Plan, ...]:
        """Per GPU type (``gpus``, or every GPU in the spec table), the smallest layout the
        job fits on; a GPU the workload names is the only one, and a GPU count it names is
        evaluated as is (fitting or not)."""
        out: list[Plan] = []
        hw = self.workload.hardware
        for gpu in gpus if gpus is not None else all_gpus():
            if hw is not None and hw.gpu_id is not None and gpu.id != hw.gpu_id:
                continue
            if hw is not None and hw.count is not None:
                out.append(self.evaluate(gpu, gpus=hw.count))
                continue
            plan = self.smallest_layout(gpu)
            if plan is not None:
                out.append(plan)
        return tuple(out)


def _rung(
    memory: MemoryModel, strategy: Strategy, gpus: int, gpus_per_node: int
) -> tuple[float, float]:
    """(per-GPU GiB, host GiB per GPU) of one rung; a split this layout cannot host (a fixed
    ``tp 8`` on 4 GPUs) needs infinite memory."""
    if strategy.parallel.problem(memory.model, gpus=gpus, gpus_per_node=gpus_per_node):
        return math.inf, 0.0
    return memory.totals(strategy, gpus=gpus, gpus_per_node=gpus_per_node)
