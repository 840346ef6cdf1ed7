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

from collections.abc import Iterable
from dataclasses import replace
from operator import itemgetter

from recommender.activations import DEFAULT_KERNELS, Kernels
from recommender.gpus import GpuSpec, IntraNode, all_gpus
from recommender.hardware import precision_on
from recommender.ladder import Layout, Rung, fewest_nodes, guess_nodes, rung_fits
from recommender.memory import MemoryModel, safe_limit_gib, usable_gib
from recommender.model_states import regime
from recommender.plan import CHECKPOINTING_COMPUTE_COST, Plan, offload_hint, plan_notes
from recommender.strategies import MAX_GPUS_PER_NODE, Strategy, candidate_strategies
from recommender.workload import Offload, Precision, Workload

__all__ = [
    "CHECKPOINTING_COMPUTE_COST",
    "MAX_GPUS_PER_NODE",
    "MULTI_NODE_LIMIT",
    "LayoutSearch",
    "Plan",
    "candidate_strategies",
]

#: GPU counts ``smallest_layout`` tries on one node before whole 8-GPU nodes.
_SINGLE_NODE_COUNTS = (1, 2, 4, 8)
#: Most nodes a search tries.
MULTI_NODE_LIMIT = 64

#: A plan's key in a search: usable GiB, GPUs, GPUs per node, first fitting rung (-1: none),
#: whether the offload-free ladder's answer (see :meth:`LayoutSearch.plan`), whether that
#: rung keeps the safety margin, and NVLink.
_PlanKey = tuple[float, int, int, int, bool, bool, bool]
#: A layout and the positions of the rungs a search may use in its ladder.
_Rungs = tuple[Layout, tuple[int, ...]]
#: A search's answer: the layout found, as (GPUs, GPUs per node), or ``None``.
_Found = tuple[int, int] | None


class LayoutSearch:
    """The layout search for one workload, memoised for the length of one question.

    Memory does not depend on the GPU model, only on the layout (GPU count, GPUs per node)
    and the strategy, so each (layout, strategy) is estimated once and every GPU type and
    instance shape of a catalog is checked against the same figures; plans are memoised by
    usable memory (GPU types with the same memory get the same plan), and a GPU that trains
    in another precision of the same memory regime reads the same figures (:meth:`on`).

    Beyond one node the per-GPU memory of a fixed strategy depends on the node count only
    through the data-parallel degree its states are sharded over (what every rank keeps
    plus what is sharded, :class:`~recommender.memory.MemoryModel`), so it shrinks as nodes
    are added, but whether *some* strategy fits is not always monotone in the node count:
    a pipeline degree must divide the GPU count, so a count with few divisors may lack the
    split a smaller count has, and full sharding over a single data-parallel rank keeps no
    gathered stage. :meth:`_fewest_nodes` therefore returns a node count that fits where
    one node fewer does not, found from a guess; where fitting is monotone (every
    rented-node case in the tests) that is the fewest, as trying 2, 3, 4, ... in turn.

    "Fits" means fits with the safety margin (:func:`recommender.memory.safe_limit_gib`): a
    search first looks for a layout and strategy that leave it free, climbing the ladder and
    adding GPUs as needed, and only when none does takes the first that fits at all; such a
    plan is not :attr:`Plan.safe` and its caller shows it with a warning.
    """

    def __init__(
        self,
        workload: Workload,
        kernels: Kernels = DEFAULT_KERNELS,
        *,
        hardware_note: str | None = None,
        same_memory: LayoutSearch | None = None,
    ) -> None:
        self.workload = workload
        self.kernels = kernels
        #: Set on the search for a GPU that lacks the precision asked for (see :meth:`on`).
        self.hardware_note = hardware_note
        self._variants: dict[Precision, LayoutSearch] = {}
        self._plans: dict[_PlanKey, Plan] = {}
        self.memory: MemoryModel
        #: Layouts by (GPUs, GPUs per node, NVLink).
        self._layouts: dict[tuple[int, int, bool], Layout]
        #: Search answers by (GiB limit per GPU, single-node counts, GPUs per node beyond one
        #: node, node limit, host RAM, NVLink).
        self._found: dict[tuple[float, tuple[int, ...], int, int, float | None, bool], _Found]
        if same_memory is None:
            self.memory, self._layouts, self._found = MemoryModel(workload, kernels), {}, {}
        else:
            # A search whose workload needs the same memory everywhere (see :meth:`on`)
            # reads the same figures, layouts and search answers; only its plans differ.
            self.memory = same_memory.memory
            self._layouts, self._found = same_memory._layouts, same_memory._found
        #: Whether the GPU being searched has NVLink (tensor parallelism is searched only
        #: over NVLink); set per GPU by the public methods.
        self._nvlink = True

    def _use(self, gpu: GpuSpec) -> None:
        """Search for ``gpu``: tensor parallelism only where its GPUs share NVLink."""
        self._nvlink = gpu.intra_node is IntraNode.NVLINK

    def on(self, gpu: GpuSpec) -> LayoutSearch:
        """The search for ``gpu``: this one, or one for the precision ``gpu`` can run when it
        lacks the one asked for (no bf16 before Ampere, no FP8 before Ada/Hopper), whose
        plans say so (:mod:`recommender.hardware`)."""
        precision, note = precision_on(self.workload.precision, gpu)
        if note is None:
            return self
        found = self._variants.get(precision)
        if found is None:
            # Memory depends on the precision only through its regime (fp16, bf16 and FP8
            # mixed precision all keep 16-bit weights and fp32 states: model_states.regime).
            same = regime(precision) is regime(self.workload.precision)
            found = self._variants[precision] = LayoutSearch(
                replace(self.workload, precision=precision),
                self.kernels,
                hardware_note=note,
                same_memory=self if same else None,
            )
        return found

    # -------------------------------------------------------------- per layout

    def layout(self, *, gpus: int, gpus_per_node: int) -> Layout:
        """This layout's ladder with its offload rungs
        (:func:`~recommender.strategies.candidate_strategies`), its rungs read as needed."""
        key = (gpus, gpus_per_node, self._nvlink)
        found = self._layouts.get(key)
        if found is None:
            ladder = candidate_strategies(
                self.workload,
                gpus=gpus,
                nodes=-(-gpus // gpus_per_node),
                allow_offload=True,
                gpus_per_node=gpus_per_node,
                nvlink=self._nvlink,
            )
            found = self._layouts[key] = Layout(self.memory, ladder, gpus, gpus_per_node)
        return found

    def _rungs(self, gpus: int, gpus_per_node: int, host_ram_gib: float | None) -> _Rungs:
        """The rungs a search may use on this layout: offload ones only when the node's host
        RAM is known (it must hold the offloaded states) or the workload asks for offload."""
        layout = self.layout(gpus=gpus, gpus_per_node=gpus_per_node)
        allow = host_ram_gib is not None or self.workload.offload is not None
        return layout, layout.with_offload if allow else layout.without_offload

    @staticmethod
    def _first_rung(
        layout: Layout, order: tuple[int, ...], limit: float, host_ram_gib: float | None
    ) -> int:
        """The position in ``order`` of the first rung of ``layout`` that fits in ``limit``
        GiB per GPU and, with offload, in the node's host RAM, or -1 when none does."""
        for position, i in enumerate(order):
            if rung_fits(layout.rung(i), limit, host_ram_gib):
                return position
        return -1

    def _leanest(
        self, gpus: int, gpus_per_node: int, limit: float, host_ram_gib: float | None
    ) -> Strategy | None:
        """A usable rung of this layout that fits, read from the top of the ladder, or
        ``None``. The ladder climbs from the fastest strategies to the leanest, so a layout
        that fits usually says so at the first rung read."""
        layout, order = self._rungs(gpus, gpus_per_node, host_ram_gib)
        for i in reversed(order):
            if rung_fits(layout.rung(i), limit, host_ram_gib):
                return layout.ladder[i]
        return None

    def plan(
        self, gpu: GpuSpec, *, gpus: int, gpus_per_node: int, host_ram_gib: float | None = None
    ) -> Plan:
        """Exactly ``gpus`` GPUs, ``gpus_per_node`` to a node: the cheapest strategy that
        keeps the safety margin, else the cheapest that fits at all (not :attr:`Plan.safe`).

        Offload is tried only when the node's host RAM is known (it must hold the offloaded
        states) or the workload asks for it.
        """
        if (search := self.on(gpu)) is not self:
            return search.plan(
                gpu, gpus=gpus, gpus_per_node=gpus_per_node, host_ram_gib=host_ram_gib
            )
        self._use(gpu)
        usable = usable_gib(gpu)
        limit = safe_limit_gib(usable)
        layout, order = self._rungs(gpus, gpus_per_node, host_ram_gib)
        # The plan depends on the host RAM only through the first rung that fits and whether
        # offload was allowed at all, so shapes that differ only in RAM share the plan. When
        # a rung without offload fits, not even the latter matters: the ladders with and
        # without offload rungs agree up to their first offload rung.
        first = self._first_rung(layout, order, limit, host_ram_gib)
        safe = first >= 0
        if not safe:
            first = self._first_rung(layout, order, usable, host_ram_gib)
            limit = usable
        offload_free = first >= 0 and layout.ladder[order[first]].offload is Offload.NONE
        free = offload_free or host_ram_gib is None
        key = (usable, gpus, gpus_per_node, first, free, safe, self._nvlink)
        plan = self._plans.get(key)
        if plan is None:
            # The rungs the notes compare: those before the first that fits, or all of them.
            read = order[: first + 1] if first >= 0 else order
            rungs = tuple(layout.rung(i) for i in read)
            plan = self._make_plan(gpu, key, rungs, first, host_ram_gib, limit)
            self._plans[key] = plan
        elif plan.gpu_id != gpu.id:  # GPU types with the same usable memory share the plan
            plan = replace(plan, gpu_id=gpu.id)
        return plan

    def _make_plan(
        self,
        gpu: GpuSpec,
        key: _PlanKey,
        rungs: tuple[Rung, ...],
        first: int,
        host_ram_gib: float | None,
        limit: float,
    ) -> Plan:
        """Rung ``first``, or (-1) the least-memory rung, which does not fit; its notes
        compare its strategy with the rungs tried before it (all of them when none fits),
        and a plan that does not fit says whether offload would have made it fit."""
        usable, gpus, gpus_per_node = key[0], key[1], key[2]
        fits = first >= 0
        strategy = rungs[first][0] if fits else min(rungs, key=itemgetter(1))[0]
        tried = [(s, total) for s, total, _ in (rungs[:first] if fits else rungs)]
        workload = self.workload
        mem = self.memory.breakdown(strategy, gpus=gpus, gpus_per_node=gpus_per_node)
        notes = plan_notes(
            workload,
            strategy,
            mem,
            fits,
            tried,
            usable=usable,
            gpus=gpus,
            kernels=self.kernels,
            limit=limit,
        )
        if self.hardware_note is not None:
            notes = (self.hardware_note, *notes)
        if not fits and host_ram_gib is None and workload.offload is None:
            notes += offload_hint(
                workload, self.memory, gpus=gpus, gpus_per_node=gpus_per_node, usable=usable
            )
        return Plan(
            gpu_id=gpu.id,
            gpus=gpus,
            gpus_per_node=gpus_per_node,
            nodes=-(-gpus // gpus_per_node),
            strategy=strategy,
            memory=mem,
            usable_gib=usable,
            fits=fits,
            safe=key[5],
            notes=notes,
        )

    # -------------------------------------------------------------- searches

    def _fewest_nodes(
        self, *, gpus_per_node: int, last: int, limit: float, host_ram_gib: float | None
    ) -> int | None:
        """The fewest nodes in 2..``last`` on which some strategy fits (see
        :func:`~recommender.ladder.fewest_nodes` and the class docstring), or ``None`` when
        none fits on ``last`` nodes. Its guess is the fewest nodes on which the leanest
        strategy that fits on ``last`` nodes would fit (:func:`~recommender.ladder.guess_nodes`)."""

        def leanest(nodes: int) -> Strategy | None:
            return self._leanest(nodes * gpus_per_node, gpus_per_node, limit, host_ram_gib)

        lean = leanest(last) if last >= 2 else None
        if lean is None:
            return None
        return fewest_nodes(
            lambda nodes: leanest(nodes) is not None,
            last=last,
            guess=guess_nodes(self.memory, lean, gpus_per_node, last, limit, host_ram_gib),
        )

    def _first_fit(
        self,
        usable: float,
        host_ram_gib: float | None,
        *,
        single: tuple[int, ...],
        per_node: int,
        last: int,
    ) -> _Found:
        """The first layout that keeps the safety margin, else the first that fits at all
        (see :meth:`_first_fit_in`)."""
        for limit in (safe_limit_gib(usable), usable):
            found = self._first_fit_in(
                limit, host_ram_gib, single=single, per_node=per_node, last=last
            )
            if found is not None:
                break
        return found

    def _first_fit_in(
        self,
        limit: float,
        host_ram_gib: float | None,
        *,
        single: tuple[int, ...],
        per_node: int,
        last: int,
    ) -> _Found:
        """The first of ``single`` GPU counts on one node that fits in ``limit`` GiB per GPU,
        else the fewest nodes of ``per_node`` GPUs up to ``last`` nodes; memoised (GPU types
        with the same usable memory, and instance shapes alike, share the answer)."""
        key = (limit, single, per_node, last, host_ram_gib, self._nvlink)
        if key in self._found:
            return self._found[key]
        found: _Found = None
        for count in single:
            if self._leanest(count, count, limit, host_ram_gib) is not None:
                found = (count, count)
                break
        else:
            nodes = self._fewest_nodes(
                gpus_per_node=per_node, last=last, limit=limit, host_ram_gib=host_ram_gib
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
        max_nodes: int = MULTI_NODE_LIMIT,
        multi_node: bool = True,
        host_ram_gib: float | None = None,
    ) -> Plan | None:
        """As :func:`recommender.layouts.fit_on_nodes`."""
        if (search := self.on(gpu)) is not self:
            return search.fit_on_nodes(
                gpu,
                gpus_per_node=gpus_per_node,
                max_nodes=max_nodes,
                multi_node=multi_node,
                host_ram_gib=host_ram_gib,
            )
        self._use(gpu)
        if gpus_per_node < 1:
            raise ValueError("gpus_per_node must be at least 1")
        hw = self.workload.hardware
        if hw is not None and hw.count is not None:
            if hw.count % gpus_per_node:
                return None
            if hw.count > gpus_per_node and not multi_node:
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

    def smallest_layout(self, gpu: GpuSpec, *, host_ram_gib: float | None = None) -> Plan | None:
        """As :func:`recommender.layouts.smallest_layout`."""
        if (search := self.on(gpu)) is not self:
            return search.smallest_layout(gpu, host_ram_gib=host_ram_gib)
        self._use(gpu)
        hw = self.workload.hardware
        if hw is not None and hw.count is not None:
            plan = self.evaluate(gpu, gpus=hw.count, host_ram_gib=host_ram_gib)
            return plan if plan.fits else None
        found = self._first_fit(
            usable_gib(gpu),
            host_ram_gib,
            single=_SINGLE_NODE_COUNTS,
            per_node=MAX_GPUS_PER_NODE,
            last=MULTI_NODE_LIMIT,
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
        """As :func:`recommender.layouts.evaluate`."""
        if gpus < 1:
            raise ValueError("gpus must be at least 1")
        per_node = gpus_per_node or min(gpus, MAX_GPUS_PER_NODE)
        return self.plan(
            gpu, gpus=gpus, gpus_per_node=min(per_node, gpus), host_ram_gib=host_ram_gib
        )

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
