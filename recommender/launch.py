"""From an option to the files that launch it: a SkyPilot task, an Accelerate config, a README.

Pure functions: :func:`launch_spec` reads everything the files need off an option and its
workload into a :class:`LaunchSpec` (what ``gpufit ask --json`` carries as each option's
``launch`` object), and :func:`launch_files` writes the three texts from a spec alone, so the
files are a function of the option. Nothing here touches the file system.

The plan maps onto Accelerate as follows (``distributed_type`` and its settings):

* one GPU, no offload → ``NO``; DDP on several GPUs → ``MULTI_GPU``;
* ZeRO-1/2/3 → ``DEEPSPEED`` with that ``zero_stage``;
* FSDP full shard / grad-op shard / HSDP → ``FSDP`` with ``FULL_SHARD`` / ``SHARD_GRAD_OP`` /
  ``HYBRID_SHARD`` (FSDP1 names, so ``fsdp_version: 1``: FSDP2 has no hybrid setting in the
  config file);
* optimizer CPU offload → ``DEEPSPEED`` (ZeRO-Offload): FSDP cannot offload the optimizer
  alone; stage 3 under a full-sharding plan, else 2; parameter offload → FSDP
  ``fsdp_offload_params`` under FSDP/HSDP, else DeepSpeed stage 3 with both offloads.

Keys are the ones Accelerate documents: ``ClusterConfig`` in
``accelerate/commands/config/config_args.py`` (top level), the ``accelerate launch`` FSDP and
DeepSpeed arguments (docs/source/package_reference/cli.md, usage_guides/fsdp.md,
usage_guides/deepspeed.md, concept_guides/fsdp1_vs_fsdp2.md). SkyPilot keys follow its YAML
spec (docs.skypilot.co/en/latest/reference/yaml-spec.html) and the multi-node variables of
"Distributed jobs" (SKYPILOT_NODE_RANK, SKYPILOT_NODE_IPS, SKYPILOT_NUM_NODES,
SKYPILOT_NUM_GPUS_PER_NODE).
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from types import MappingProxyType
from typing import Any

from recommender.costing import Option
from recommender.economics import checkpoint_gib
from recommender.gpus import get_gpu
from recommender.hardware import precision_on
from recommender.model_states import FULL_SHARDING
from recommender.workload import Offload, Precision, Sharding, Workload

__all__ = [
    "LaunchSpec",
    "disk_size_gib",
    "launch_spec",
    "skypilot_accelerator",
    "skypilot_cloud",
]

# ------------------------------------------------------------------ SkyPilot names

#: gpufit provider id → SkyPilot cloud name (``sky/clouds``); others get no cloud pin.
_SKY_CLOUDS: Mapping[str, str] = MappingProxyType(
    {
        p: p
        for p in (
            "aws", "gcp", "azure", "lambda", "runpod", "nebius", "vast", "fluidstack", "cudo",
            "paperspace", "oci", "ibm", "scp", "do", "hyperbolic", "coreweave",
        )
    }
)  # fmt: skip

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


def skypilot_cloud(provider: str) -> str | None:
    """SkyPilot's name for a provider, or ``None`` when SkyPilot has no such cloud."""
    return _SKY_CLOUDS.get(provider.lower())


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


# ------------------------------------------------------------------ the spec


@dataclass(frozen=True, slots=True)
class LaunchSpec:
    """Everything the launch files say, read off one option (JSON-ready scalars only)."""

    rank: int
    provider: str
    #: SkyPilot cloud name; ``None`` when SkyPilot does not know the provider.
    cloud: str | None
    region: str
    zone: str
    instance_type: str
    accelerator: str
    gpus_per_node: int
    nodes: int
    spot: bool
    disk_size_gib: int
    model: str
    method: str
    #: Accelerate's values.
    distributed_type: str
    mixed_precision: str
    #: FSDP ``fsdp_sharding_strategy``, or ``None`` when not FSDP.
    fsdp_sharding_strategy: str | None
    fsdp_offload_params: bool
    #: DeepSpeed ``zero_stage``, or ``None`` when not DeepSpeed.
    zero_stage: int | None
    offload_optimizer_device: str
    offload_param_device: str
    activation_checkpointing: bool
    strategy: str
    #: The plan's figures.
    memory_per_gpu_gib: float
    usable_gib_per_gpu: float
    expected_hours: float
    expected_cost_usd: float
    pessimistic_hours: float
    pessimistic_cost_usd: float
    checkpoint_gib: float
    #: Spot only: the Young/Daly checkpoint interval, hours.
    checkpoint_interval_hours: float | None
    tokens: float
    checkpoint_bucket: str
    #: The plan's model split (``TP8 × PP4``), empty when the model is not split: Accelerate's
    #: FSDP and DeepSpeed settings cannot express tensor or pipeline parallelism.
    model_split: str = ""

    @property
    def total_gpus(self) -> int:
        return self.gpus_per_node * self.nodes

    def as_dict(self) -> dict[str, Any]:
        """The spec as the JSON ``launch`` object (``LaunchSpec(**d)`` reads it back)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


#: Accelerate's ``mixed_precision`` for the precision a GPU trains in (bf16 for the rest).
_MIXED_PRECISION = {Precision.FP32: "no", Precision.FP16_MIXED: "fp16", Precision.FP8_MIXED: "fp8"}


def _precision(workload: Workload, gpu_id: str) -> str:
    """Accelerate's ``mixed_precision`` for the precision the plan's GPU runs the workload in
    (:func:`recommender.hardware.precision_on`: fp16 where there is no bf16, no FP8 before
    Ada/Hopper)."""
    precision, _ = precision_on(workload.precision, get_gpu(gpu_id))
    return _MIXED_PRECISION.get(precision, "bf16")


_FSDP_STRATEGY = {
    Sharding.FSDP: "FULL_SHARD",
    Sharding.FSDP_GRAD_OP: "SHARD_GRAD_OP",
    Sharding.HSDP: "HYBRID_SHARD",
}
_ZERO_STAGE = {Sharding.ZERO1: 1, Sharding.ZERO2: 2, Sharding.ZERO3: 3}


def _distributed(
    sharding: Sharding, offload: Offload, gpus: int
) -> tuple[str, str | None, bool, int | None, str, str]:
    """(distributed_type, fsdp strategy, fsdp param offload, zero stage, optimizer offload
    device, parameter offload device) for a plan's strategy; see the module docstring."""
    if offload is Offload.OPTIMIZER:
        stage = 3 if sharding in FULL_SHARDING else 2
        return "DEEPSPEED", None, False, stage, "cpu", "none"
    if offload is Offload.PARAMS:
        if sharding in _FSDP_STRATEGY and gpus > 1:
            return "FSDP", _FSDP_STRATEGY[sharding], True, None, "none", "none"
        return "DEEPSPEED", None, False, 3, "cpu", "cpu"
    if gpus == 1:
        return "NO", None, False, None, "none", "none"
    if sharding in _FSDP_STRATEGY:
        return "FSDP", _FSDP_STRATEGY[sharding], False, None, "none", "none"
    if sharding in _ZERO_STAGE:
        return "DEEPSPEED", None, False, _ZERO_STAGE[sharding], "none", "none"
    return "MULTI_GPU", None, False, None, "none", "none"


def _bucket(option: Option, workload: Workload) -> str:
    """A checkpoint bucket name that is a function of the option (S3/GCS rules: 3-63
    lowercase letters, digits and hyphens)."""
    digest = hashlib.sha256(f"{option.offer.key}|{workload.model.name}".encode()).hexdigest()
    return f"gpufit-ckpt-{digest[:12]}"


def launch_spec(workload: Workload, option: Option) -> LaunchSpec:
    """What the launch files of ``option`` (an option of ``workload``) need."""
    offer, plan = option.offer, option.plan
    s = plan.strategy
    dist, fsdp, fsdp_off, stage, opt_dev, param_dev = _distributed(s.sharding, s.offload, plan.gpus)
    spot = option.spot
    return LaunchSpec(
        rank=option.rank,
        provider=offer.provider,
        cloud=skypilot_cloud(offer.provider),
        region=offer.region,
        zone=offer.zone,
        instance_type=offer.instance_type,
        accelerator=skypilot_accelerator(offer.gpu_id, offer.instance_type),
        gpus_per_node=offer.gpu_count,
        nodes=option.nodes,
        spot=offer.spot,
        disk_size_gib=disk_size_gib(workload, option.tokens),
        model=workload.model.name,
        method=workload.method.value,
        distributed_type=dist,
        mixed_precision=_precision(workload, offer.gpu_id),
        fsdp_sharding_strategy=fsdp,
        fsdp_offload_params=fsdp_off,
        zero_stage=stage,
        offload_optimizer_device=opt_dev,
        offload_param_device=param_dev,
        activation_checkpointing=s.checkpointing,
        strategy=plan.describe(),
        memory_per_gpu_gib=round(plan.memory.total_gib, 1),
        usable_gib_per_gpu=round(plan.usable_gib, 1),
        expected_hours=round(option.expected_hours, 2),
        expected_cost_usd=round(option.expected_cost_usd, 2),
        pessimistic_hours=round(option.pessimistic_wall_hours, 2),
        pessimistic_cost_usd=round(option.pessimistic_cost_usd, 2),
        checkpoint_gib=round(checkpoint_gib(workload), 1),
        checkpoint_interval_hours=(
            None if spot is None else round(spot.checkpoint_interval_hours, 2)
        ),
        tokens=round(option.tokens),
        checkpoint_bucket=_bucket(option, workload),
        model_split="" if s.parallel.trivial else s.parallel.describe_degrees(),
    )
