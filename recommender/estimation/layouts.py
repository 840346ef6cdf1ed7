"""One-shot layout searches: a :class:`~recommender.estimation.topology.LayoutSearch` for one call
(tests, calibration scripts); a recommendation keeps one search for its question."""

from __future__ import annotations

from collections.abc import Iterable

from recommender.estimation.activations import DEFAULT_KERNELS, Kernels
from recommender.estimation.plan import Plan
from recommender.estimation.topology import MULTI_NODE_LIMIT, LayoutSearch
from recommender.gpus import GpuSpec
from recommender.workload import Workload

__all__ = ["evaluate", "fit_on_nodes", "smallest_layout", "smallest_layouts"]


def smallest_layouts(workload: Workload, gpus: Iterable[GpuSpec] | None = None) -> tuple[Plan, ...]:
    """Smallest layout per GPU type: ``gpus``, or every GPU in the spec table."""
    return LayoutSearch(workload).smallest_layouts(gpus)


def fit_on_nodes(
    workload: Workload,
    gpu: GpuSpec,
    *,
    gpus_per_node: int,
    max_nodes: int = MULTI_NODE_LIMIT,
    multi_node: bool = True,
    kernels: Kernels = DEFAULT_KERNELS,
    host_ram_gib: float | None = None,
) -> Plan | None:
    """The fewest whole nodes of ``gpus_per_node`` × ``gpu`` on which the workload fits.

    Every GPU of each node is used. More than one node only when ``multi_node``; ``None``
    when nothing up to ``max_nodes`` fits. A GPU count the workload names is honoured as is,
    ``max_nodes`` or not (it must be a whole number of nodes). CPU offload is considered only
    when ``host_ram_gib`` (RAM of one node, e.g. an offer's ``ram_gib``) is given, and must
    fit in it.
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
