"""Usable GPU memory and the safety margin a plan keeps: what PyTorch can allocate on a GPU
(below the label: the driver's share, ECC on GDDR cards), and how much of it a plan should
leave free given the memory estimate's measured error (docs/estimator.md)."""

from __future__ import annotations

from recommender.gpus import GpuSpec

__all__ = [
    "HEADROOM_FRAC",
    "HEADROOM_MIN_GIB",
    "safe_limit_gib",
    "safety_margin_gib",
    "usable_gib",
]

# Usable capacity. Vendors label binary-sized DRAM in "GB": an "80GB" A100 is 81920 MiB in
# nvidia-smi, and PyTorch reports "total capacity of 79.15 GiB" (Lightning-AI/litgpt
# tutorials/oom.md); the driver keeps the rest. So the label is read as GiB and scaled by
# the fraction PyTorch can see.
VISIBLE_FRACTION = 79.15 / 80
# GDDR data-centre cards ship with ECC on, which reserves 1/16 of the memory: a 16 GB T4
# shows 15360 MiB and a 24 GB L4 23034 MiB in nvidia-smi (NVIDIA T4/L4 product briefs:
# "ECC on by default"). HBM has side-band ECC and loses nothing.
ECC_RESERVED_FRACTION = 1 / 16
ECC_GDDR_GPUS = frozenset({"T4", "L4", "A10", "A10G", "A40", "L40", "L40S"})

# Safety margin, set from the estimate's measured error (docs/estimator.md, "Uncertainty and
# the safety margin": 45 calibration cases): outside QLoRA, 83 % of the underestimates are
# within −16 %; a plan that leaves 15 % free can be 1/0.85 − 1 = 17.6 % low and still fit. The
# 2 GiB floor covers small GPUs and small jobs, where fixed costs (CUDA context 0.3-0.4 GiB,
# NCCL buffers, allocator slack) dominate the error.
HEADROOM_FRAC = 0.15
HEADROOM_MIN_GIB = 2.0


def usable_gib(gpu: GpuSpec) -> float:
    """Memory PyTorch can allocate on one GPU, in GiB (below the label; see the constants)."""
    capacity = gpu.memory_gb * VISIBLE_FRACTION
    if gpu.id in ECC_GDDR_GPUS:
        capacity *= 1 - ECC_RESERVED_FRACTION
    return capacity


def safety_margin_gib(usable: float) -> float:
    """Memory a plan should leave free on a GPU with ``usable`` GiB: :data:`HEADROOM_FRAC`
    of it (15 %), at least :data:`HEADROOM_MIN_GIB` (2 GiB)."""
    return max(HEADROOM_FRAC * usable, HEADROOM_MIN_GIB)


def safe_limit_gib(usable: float) -> float:
    """The most a plan may use per GPU and keep the safety margin (:func:`safety_margin_gib`)."""
    return usable - safety_margin_gib(usable)
