"""Memory and layout only, no prices: the answer behind ``gpufit estimate``."""

from __future__ import annotations

from dataclasses import dataclass

from recommender.estimation.topology import LayoutSearch, Plan
from recommender.gpus import get_gpu
from recommender.workload import Workload

__all__ = ["Estimate", "estimate"]


@dataclass(frozen=True, slots=True)
class Estimate:
    workload: Workload
    #: The answer for exactly the hardware the text named, when it named a GPU and a count.
    hardware: Plan | None
    #: The smallest layout per GPU type that fits.
    layouts: tuple[Plan, ...]


def estimate(workload: Workload) -> Estimate:
    """Per-GPU memory and the smallest fitting layout, for the named hardware or every GPU."""
    search = LayoutSearch(workload)
    hw = workload.hardware
    exact: Plan | None = None
    if hw is not None and hw.gpu_id is not None:
        exact = search.evaluate(get_gpu(hw.gpu_id), gpus=hw.count or 1)
    return Estimate(workload=workload, hardware=exact, layouts=search.smallest_layouts())
