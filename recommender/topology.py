"""The smallest layout that holds a workload, and the cheapest strategy that makes it fit.

Strategies are tried cheapest first (the ladder is in :mod:`recommender.strategies`), so a
switch is on only when it is what makes the job fit, and :attr:`Plan.notes` says so, with
what it costs (:mod:`recommender.plan`). Whatever the workload fixes (sharding, offload,
checkpointing, a GPU count) is honoured. CPU offload needs ~16 bytes of host RAM per trained
parameter (DeepSpeed's estimators), so the search proposes it only when the caller passes the
node's host RAM (``host_ram_gib``); otherwise a plan that does not fit says whether offload
would have made it fit.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from operator import attrgetter, itemgetter
from typing import Any

from recommender.activations import DEFAULT_KERNELS, Kernels
from recommender.gpus import GpuSpec, IntraNode
from recommender.memory import MemoryBreakdown, MemoryModel, Strategy, usable_gib
from recommender.plan import (
    CHECKPOINTING_COMPUTE_COST,
    Plan,
    PlanDetails,
    offload_hint,
    plan_notes,
)
from recommender.strategies import MAX_GPUS_PER_NODE, candidate_strategies
from recommender.workload import Offload, Workload

__all__ = [
    "CHECKPOINTING_COMPUTE_COST",
    "MAX_GPUS_PER_NODE",
    "SEARCHES_KEPT",
    "SEARCH_FIELDS",
    "LayoutSearch",
    "Plan",
    "candidate_strategies",
    "clear_layout_searches",
    "evaluate",
    "fit_on_nodes",
    "layout_search",
    "smallest_layout",
]

#: ``Offload.NONE``, read once: the searches compare every rung with it, and on Python 3.11
#: each read of an Enum class attribute goes through EnumType.__getattr__'s hook (~0.1 µs).
_NO_OFFLOAD = Offload.NONE
#: GPU counts ``smallest_layout`` tries on one node before whole 8-GPU nodes.
_SINGLE_NODE_COUNTS = (1, 2, 4, 8)
_MULTI_NODE_LIMIT = 64

#: One rung of a layout: the strategy, its per-GPU total and the host RAM per node, GiB.
_Rung = tuple[Strategy, float, float]
#: A plan's key in a search: usable GiB, GPUs, GPUs per node, first fitting rung (-1: none),
#: and whether the offload-free ladder's answer (see :meth:`LayoutSearch.plan`).
_PlanKey = tuple[float, int, int, int, bool]
#: What a plan's details are computed from: its strategy, the layout's rungs, the first
#: fitting one, and whether to say if offload would fit.
_Made = tuple[Strategy, tuple[_Rung, ...], int, bool]
#: A search's answer: the layout found, as (GPUs, GPUs per node), or ``None``.
_Found = tuple[int, int] | None


def _first_fitting(
    rungs: tuple[_Rung, ...], least: float, usable: float, host_ram_gib: float | None
) -> int:
    """The index of the first rung that fits in ``usable`` GiB per GPU and, with offload, in
    the node's host RAM, or -1 when none does (``least``: the rungs' least total)."""
    if least <= usable:  # else no rung fits, whatever the host RAM
        for i, (_, total, host) in enumerate(rungs):
            if total <= usable and (host_ram_gib is None or host <= host_ram_gib):
                return i
    return -1


class _Details:
    """The details (memory breakdown, notes) of a search's plans, computed when first read.

    Plans refer to it, not to their search, so a search and its plans form no reference
    cycle and are freed as soon as the last question holding them is (the cyclic garbage
    collector's full passes grow with what waits for them).
    """

    __slots__ = ("details", "kernels", "made", "memory", "mems", "workload")

    def __init__(self, workload: Workload, kernels: Kernels, memory: MemoryModel) -> None:
        self.workload = workload
        self.kernels = kernels
        self.memory = memory
        #: Per plan key: what its details are computed from, and (once read) the details.
        self.made: dict[_PlanKey, _Made] = {}
        self.details: dict[_PlanKey, PlanDetails] = {}
        self.mems: dict[tuple[Strategy, int, int], MemoryBreakdown] = {}

    def _breakdown(self, strategy: Strategy, gpus: int, gpus_per_node: int) -> MemoryBreakdown:
        key = (strategy, gpus, gpus_per_node)
        mem = self.mems.get(key)
        if mem is None:
            mem = self.mems[key] = self.memory.breakdown(
                strategy, gpus=gpus, gpus_per_node=gpus_per_node
            )
        return mem

    def plan_details(self, key: Hashable) -> PlanDetails:
        """The memory breakdown and notes of the plan kept under ``key``: the notes compare
        its strategy with the rungs tried before it (all of them when none fits), and a plan
        that does not fit says whether offload would have made it fit."""
        plan_key: _PlanKey = key  # type: ignore[assignment]  # the keys plans are made with
        details = self.details.get(plan_key)
        if details is not None:
            return details
        strategy, rungs, first, hint = self.made[plan_key]
        usable, gpus, gpus_per_node = plan_key[0], plan_key[1], plan_key[2]
        fits = first >= 0
        tried = [(s, total) for s, total, _ in (rungs[:first] if fits else rungs)]
        workload = self.workload
        mem = self._breakdown(strategy, gpus, gpus_per_node)
        notes = plan_notes(
            workload, strategy, mem, fits, tried, usable=usable, gpus=gpus, kernels=self.kernels
        )
        if hint:
            notes += offload_hint(
                workload, self.memory, gpus=gpus, gpus_per_node=gpus_per_node, usable=usable
            )
        details = self.details[plan_key] = mem, notes
        return details


class LayoutSearch:
    """The layout search for one workload, memoised for the length of one question.

    Memory does not depend on the GPU model, only on the layout (GPU count, GPUs per node)
    and the strategy, so each (layout, strategy) is estimated once and every GPU type and
    instance shape of a catalog is checked against the same figures; plans are memoised by
    usable memory (GPU types with the same memory get the same plan). Beyond one node the
    per-GPU memory of a fixed strategy never grows with the node count (shards only get
    smaller; activations and buffers stay), nor does the host RAM it needs per node, so the
    fewest nodes that fit are found by a galloping search and bisection
    (:meth:`_fewest_nodes`) with the same answer as trying 2, 3, 4, ... in turn.

    It holds no state beyond figures of the workload's :data:`SEARCH_FIELDS`, so questions
    whose workloads agree on those can share one instance (:func:`layout_search`).
    """

    __slots__ = (
        "_first",
        "_found",
        "_ladders",
        "_plans",
        "_rungs",
        "_store",
        "kernels",
        "layouts",
        "memory",
        "shapes",
        "workload",
    )

    def __init__(self, workload: Workload, kernels: Kernels = DEFAULT_KERNELS) -> None:
        self.workload = workload
        self.kernels = kernels
        self.memory = MemoryModel(workload, kernels)
        self._ladders: dict[tuple[bool, bool, bool], tuple[Strategy, ...]] = {}
        self._rungs: dict[tuple[int, int, bool], tuple[tuple[_Rung, ...], float]] = {}
        self._plans: dict[_PlanKey, Plan] = {}
        self._store = _Details(workload, kernels, self.memory)
        #: The first fitting rung by (GPUs, GPUs per node, usable GiB, host RAM).
        self._first: dict[tuple[int, int, float, float | None], int] = {}
        #: Search answers by (usable GiB, single-node counts, GPUs per node beyond one node,
        #: node limit, host RAM).
        self._found: dict[tuple[float, tuple[int, ...], int, int, float | None], _Found] = {}
        #: For the callers' memos (the search only holds them): the plan of each instance
        #: shape a catalog sells (``selection``), the smallest layouts per tuple of GPU types
        #: (``ranking``). Both are functions of the workload's search fields alone.
        self.shapes: dict[tuple[str, int, IntraNode, bool, float | None], Plan | None] = {}
        self.layouts: dict[tuple[GpuSpec, ...], tuple[Plan, ...]] = {}

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
        return self._rungs_of(gpus, gpus_per_node, allow)

    # The private methods below take positional arguments: the searches call them hundreds
    # of times per question, and keyword calls cost measurably more in CPython.

    def _rungs_of(
        self, gpus: int, gpus_per_node: int, allow: bool
    ) -> tuple[tuple[_Rung, ...], float]:
        key = (gpus, gpus_per_node, allow)
        found = self._rungs.get(key)
        if found is None and not allow and self.workload.offload is None:
            # Without offload allowed the ladder is the offload-allowing one less its offload
            # rungs, in the same order; reuse its figures when that one is known already.
            with_offload = self._rungs.get((gpus, gpus_per_node, True))
            if with_offload is not None:
                kept = tuple(r for r in with_offload[0] if r[0].offload is _NO_OFFLOAD)
                found = (kept, min(r[1] for r in kept))
                self._rungs[key] = found
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

    def _first_rung(
        self, gpus: int, gpus_per_node: int, usable: float, host_ram_gib: float | None
    ) -> int:
        """The index of the first rung of this layout that fits (in ``usable`` GiB per GPU
        and, with offload, in the node's host RAM), or -1 when none does."""
        key = (gpus, gpus_per_node, usable, host_ram_gib)
        first = self._first.get(key)
        if first is None:
            rungs, least = self._rungs_of(gpus, gpus_per_node, host_ram_gib is not None)
            first = self._first[key] = _first_fitting(rungs, least, usable, host_ram_gib)
        return first

    def _fits_any(
        self, gpus: int, gpus_per_node: int, usable: float, host_ram_gib: float | None
    ) -> bool:
        return self._first_rung(gpus, gpus_per_node, usable, host_ram_gib) >= 0

    def plan(
        self, gpu: GpuSpec, *, gpus: int, gpus_per_node: int, host_ram_gib: float | None = None
    ) -> Plan:
        """Exactly ``gpus`` GPUs, ``gpus_per_node`` to a node: the cheapest fitting strategy.

        Offload is tried only when the node's host RAM is known (it must hold the offloaded
        states) or the workload asks for it.
        """
        usable = usable_gib(gpu)
        rungs, _ = self._rungs_of(gpus, gpus_per_node, host_ram_gib is not None)
        # The plan depends on the host RAM only through the first rung that fits and whether
        # offload was allowed at all, so shapes that differ only in RAM share the plan. When
        # a rung without offload fits, not even the latter matters: the ladders with and
        # without offload rungs agree up to their first offload rung.
        first = self._first_rung(gpus, gpus_per_node, usable, host_ram_gib)
        offload_free = first >= 0 and rungs[first][0].offload is _NO_OFFLOAD
        key = (usable, gpus, gpus_per_node, first, offload_free or host_ram_gib is None)
        return self._plan_of(gpu, key, rungs, first, host_ram_gib)

    def _plan_of(
        self,
        gpu: GpuSpec,
        key: _PlanKey,
        rungs: tuple[_Rung, ...],
        first: int,
        host_ram_gib: float | None,
    ) -> Plan:
        """The plan kept under ``key`` (made now if new), for ``gpu``: GPU types with the
        same usable memory share it, each under its own id."""
        plan = self._plans.get(key)
        if plan is None:
            # Rung ``first``, or (-1) the least-memory rung, which does not fit; the details
            # are found when read (_Details.plan_details).
            fits = first >= 0
            strategy = rungs[first][0] if fits else min(rungs, key=itemgetter(1))[0]
            hint = not fits and host_ram_gib is None and self.workload.offload is None
            self._store.made[key] = (strategy, rungs, first, hint)
            usable, gpus, gpus_per_node = key[0], key[1], key[2]
            nodes = -(-gpus // gpus_per_node)
            plan = self._plans[key] = Plan.of(
                gpu.id, gpus, gpus_per_node, nodes, strategy, usable, fits, self._store, key
            )
        elif plan.gpu_id != gpu.id:
            plan = Plan.of(
                gpu.id,
                plan.gpus,
                plan.gpus_per_node,
                plan.nodes,
                plan.strategy,
                plan.usable_gib,
                plan.fits,
                self._store,
                key,
            )
        return plan

    # -------------------------------------------------------------- searches

    def _fewest_nodes(
        self, *, gpus_per_node: int, last: int, usable: float, host_ram_gib: float | None
    ) -> int | None:
        """The fewest nodes in 2..``last`` on which some strategy fits.

        Fitting is monotone in the node count (see the class docstring), so any search for
        the first node count that fits gives the same answer. The answer is usually small,
        so after checking ``last`` the search gallops up from 2 (2, 3, 5, 9, 17, 33: each
        step doubles the span tried) and then bisects between the last count that did not
        fit and the first that did. Searches with the same node size share the galloping
        counts' memory figures, where a bisection from the top would try counts that only
        one search needs.
        """
        if last < 2:
            return None

        def fits(nodes: int) -> bool:
            return self._fits_any(nodes * gpus_per_node, gpus_per_node, usable, host_ram_gib)

        if not fits(last):
            return None
        low, probe = 2, 2
        while probe < last and not fits(probe):
            low, probe = probe + 1, 2 * probe - 1
        high = min(probe, last)  # fits(high) holds; find the smallest such from low
        while low < high:
            mid = (low + high) // 2
            if fits(mid):
                high = mid
            else:
                low = mid + 1
        return low

    def _first_fit(
        self,
        usable: float,
        host_ram_gib: float | None,
        *,
        single: tuple[int, ...],
        per_node: int,
        last: int,
    ) -> _Found:
        """The first of ``single`` GPU counts on one node that fits, else the fewest nodes
        of ``per_node`` GPUs up to ``last`` nodes; memoised (GPU types with the same usable
        memory, and instance shapes alike, share the answer)."""
        key = (usable, single, per_node, last, host_ram_gib)
        if key in self._found:
            return self._found[key]
        found: _Found = None
        for count in single:
            if self._fits_any(count, count, usable, host_ram_gib):
                found = (count, count)
                break
        else:
            nodes = self._fewest_nodes(
                gpus_per_node=per_node, last=last, usable=usable, host_ram_gib=host_ram_gib
            )
            if nodes is not None:
                found = (nodes * per_node, per_node)
        self._found[key] = found
        return found

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
        found = self._first_fit(
            usable_gib(gpu),
            host_ram_gib,
            single=(gpus_per_node,) if last >= 1 else (),
            per_node=gpus_per_node,
            last=last,
        )
        if found is None:
            return None
        return self.plan(gpu, gpus=found[0], gpus_per_node=found[1], host_ram_gib=host_ram_gib)

    def shape_plan(
        self,
        gpu: GpuSpec,
        gpus_per_node: int,
        max_nodes: int,
        multi_node: bool,
        host_ram_gib: float | None,
    ) -> Plan | None:
        """:meth:`fit_on_nodes` for an instance shape, for a workload that names no GPU
        count, positional. It runs once per shape a question prices, and a new model setup
        prices every shape anew, so the usual answer (one node of the shape holds the job)
        is found here in one pass instead of through the memoised chain of
        :meth:`_first_fit`, :meth:`_first_rung` and :meth:`plan` (same steps, same memo of
        plans, so the same plan); other answers take that chain."""
        hw = self.workload.hardware
        if gpus_per_node < 1 or max_nodes < 1 or (hw is not None and hw.count is not None):
            return self.fit_on_nodes(
                gpu,
                gpus_per_node=gpus_per_node,
                max_nodes=max_nodes,
                multi_node=multi_node,
                host_ram_gib=host_ram_gib,
            )
        usable = usable_gib(gpu)
        rungs, least = self._rungs_of(gpus_per_node, gpus_per_node, host_ram_gib is not None)
        first = _first_fitting(rungs, least, usable, host_ram_gib)
        if first < 0:  # not on one node: more nodes, or none
            if not multi_node:
                return None
            return self.fit_on_nodes(
                gpu,
                gpus_per_node=gpus_per_node,
                max_nodes=max_nodes,
                multi_node=True,
                host_ram_gib=host_ram_gib,
            )
        offload_free = rungs[first][0].offload is _NO_OFFLOAD
        key = (usable, gpus_per_node, gpus_per_node, first, offload_free or host_ram_gib is None)
        return self._plan_of(gpu, key, rungs, first, host_ram_gib)

    def smallest_layout(self, gpu: GpuSpec, *, host_ram_gib: float | None = None) -> Plan | None:
        """As :func:`smallest_layout`."""
        hw = self.workload.hardware
        if hw is not None and hw.count is not None:
            plan = self.evaluate(gpu, gpus=hw.count, host_ram_gib=host_ram_gib)
            return plan if plan.fits else None
        found = self._first_fit(
            usable_gib(gpu),
            host_ram_gib,
            single=_SINGLE_NODE_COUNTS,
            per_node=MAX_GPUS_PER_NODE,
            last=_MULTI_NODE_LIMIT,
        )
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


#: The workload fields a layout search reads (memory, the strategy ladder, plan notes, the
#: hardware asked for). The rest (duration, tokens, budget, spot policy, providers, regions,
#: what was assumed or ignored, the text) only price, filter and describe the plans.
SEARCH_FIELDS = (
    "model",
    "method",
    "precision",
    "optimizer",
    "seq_len",
    "micro_batch",
    "checkpointing",
    "sharding",
    "offload",
    "hardware",
    "lora_rank",
    "lora_targets",
    "nf4_double_quant",
)
_search_key = attrgetter(*SEARCH_FIELDS)

#: Layout searches kept for later questions (least recently used dropped first). Ours: a
#: search holds tens to a few hundred small plans and figures, so 64 stay well under a few MB,
#: and a team refines far fewer distinct model setups than that between two of its questions.
SEARCHES_KEPT = 64

_searches: OrderedDict[tuple[Any, Kernels], LayoutSearch] = OrderedDict()
_searches_lock = threading.Lock()  # questions may run in several threads at once


def layout_search(workload: Workload, kernels: Kernels = DEFAULT_KERNELS) -> LayoutSearch:
    """The layout search for ``workload``, shared with earlier questions whose workloads
    agree on :data:`SEARCH_FIELDS` (the same model setup asked with another duration, token
    budget, budget, spot policy, provider or region: a follow-up or a refine button), whose
    plans it already holds. Its answers are those of a new :class:`LayoutSearch`."""
    key = (_search_key(workload), kernels)
    with _searches_lock:
        search = _searches.get(key)
        if search is not None:
            _searches.move_to_end(key)
            return search
    search = LayoutSearch(workload, kernels)
    with _searches_lock:
        search = _searches.setdefault(key, search)
        while len(_searches) > SEARCHES_KEPT:
            _searches.popitem(last=False)
    return search


def clear_layout_searches() -> None:
    """Forget the shared layout searches (the next question about each setup starts anew)."""
    with _searches_lock:
        _searches.clear()


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
