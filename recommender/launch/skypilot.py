"""SkyPilot's side of a launch: its names for GPUs, and the disk a node needs.

Its names for clouds (``sky/clouds``) are in the provider registry (``skypilot_cloud`` of
each cloud's module in recommender/providers/); accelerator names those of its catalogs
(``AcceleratorName``, as ``sky show-gpus`` lists them); ``disk_size`` is the task's
``resources.disk_size`` in GiB (docs.skypilot.co/en/latest/reference/yaml-spec.html).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from types import MappingProxyType

from recommender.pricing.economics import checkpoint_gib
from recommender.workload import Workload

__all__ = [
    "MIN_DISK_GIB",
    "disk_size_gib",
    "skypilot_accelerator",
]

# ------------------------------------------------------------------ SkyPilot names

#: Canonical GPU id → SkyPilot accelerator name (``AcceleratorName`` in SkyPilot's catalogs,
#: as ``sky show-gpus`` lists them). SkyPilot checks it against the instance type.
_SKY_ACCELERATORS: Mapping[str, str] = MappingProxyType(
    {
        "H200-SXM-141GB": "H200",
        "H200-NVL-141GB": "H200",
        "H100-SXM-80GB": "H100",
        "H100-PCIE-80GB": "H100",
        "H100-NVL-94GB": "H100-NVL",
        "GH200-96GB": "GH200",
        "GH200-144GB": "GH200",
        "B200-180GB": "B200",
        "B300-288GB": "B300",
        "GB200-186GB": "GB200",
        "A100-SXM-80GB": "A100-80GB",
        "A100-PCIE-80GB": "A100-80GB",
        "A100-SXM-40GB": "A100",
        "A100-PCIE-40GB": "A100",
        "L40S": "L40S",
        "L40": "L40",
        "L4": "L4",
        "A10G": "A10G",
        "A10": "A10",
        "A40": "A40",
        "RTX-A6000": "RTXA6000",
        "RTX-6000-ADA": "RTX6000-Ada",
        "RTX-4090": "RTX4090",
        "RTX-3090": "RTX3090",
        "V100-SXM-32GB": "V100-32GB",
        "V100-SXM-16GB": "V100",
        "T4": "T4",
        "P100-16GB": "P100",
        "MI300X": "MI300X",
        "MI325X": "MI325X",
        "MI250X": "MI250X",
        "GAUDI2": "Gaudi2",
        "GAUDI3": "Gaudi3",
    }
)


def skypilot_accelerator(gpu_id: str, instance_type: str = "") -> str:
    """SkyPilot's accelerator name for a canonical GPU id (GCP's A3 Mega is ``H100-MEGA``)."""
    if gpu_id == "H100-SXM-80GB" and instance_type.startswith("a3-megagpu"):
        return "H100-MEGA"
    return _SKY_ACCELERATORS.get(gpu_id, gpu_id)


# ------------------------------------------------------------------ disk sizing

#: OS image, CUDA, Python environment and caches on each node, GiB (ours: a CUDA + PyTorch
#: environment is ~20-30 GiB; the rest is slack for logs and pip/HF caches).
DISK_BASE_GIB = 50
#: Bytes on disk per training token: the raw text (~4 bytes a token for English BPE
#: vocabularies) plus its tokenized cache (int32 ids, 4 bytes). Ours.
DATA_BYTES_PER_TOKEN = 8
#: Base weights as downloaded (bf16/fp16 safetensors), bytes per parameter.
WEIGHT_BYTES_PER_PARAM = 2
#: Checkpoints held on a node's disk at once: the latest and the one being written.
CHECKPOINTS_ON_DISK = 2
#: SkyPilot's default ``disk_size`` (GiB); gpufit never asks for less.
MIN_DISK_GIB = 256
DISK_STEP_GIB = 50


def disk_size_gib(workload: Workload, tokens: float) -> int:
    """Disk per node, GiB: base + downloaded weights + the data + two whole checkpoints
    (conservative for sharded multi-node checkpoints, where each node holds a share),
    rounded up to 50 GiB and never below SkyPilot's default of 256."""
    need = (
        DISK_BASE_GIB
        + workload.model.params * WEIGHT_BYTES_PER_PARAM / 2**30
        + tokens * DATA_BYTES_PER_TOKEN / 2**30
        + CHECKPOINTS_ON_DISK * checkpoint_gib(workload)
    )
    return max(MIN_DISK_GIB, DISK_STEP_GIB * math.ceil(need / DISK_STEP_GIB))
