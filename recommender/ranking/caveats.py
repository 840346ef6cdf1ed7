"""Caveats: the honest small print attached to every option, as data."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

__all__ = ["Caveat", "CaveatKind", "Severity"]


class CaveatKind(StrEnum):
    PREEMPTION = "preemption"  # spot capacity: expected interruptions and checkpoint advice
    PCIE_SHARDING = "pcie_sharding"  # sharding across GPUs without a peer fabric
    MULTI_NODE = "multi_node"  # the job spans several machines
    SLOW_FABRIC = "slow_fabric"  # several machines without InfiniBand/EFA/RoCE
    TIGHT_HEADROOM = "tight_headroom"  # under memory.safety_margin_gib (HEADROOM_FRAC, >= 2 GiB)
    NO_BF16 = "no_bf16"  # the GPU lacks bf16; fp16 + loss scaling instead
    NO_FP8 = "no_fp8"  # fp8 asked for on a GPU without FP8 tensor cores
    STALE_PRICES = "stale_prices"  # the price is older than the freshness limit
    DEADLINE = "deadline"  # misses the stated deadline
    OVER_DURATION = "over_duration"  # takes longer than the stated duration to do the work
    CHECKPOINTING = "checkpointing"  # activation checkpointing switched on to fit
    OFFLOAD = "offload"  # CPU offload switched on to fit
    BILLING = "billing"  # the billing granularity rounds the run up noticeably
    IDLE_GPUS = "idle_gpus"  # more GPUs than the memory needs (instance shape)
    SOURCE_ERROR = "source_error"  # the price source failed its last refresh
    OUTLIER = "outlier"  # a price far from its peers (median, on-demand): see sanity.py
    ZONE = "zone"  # where it runs: an opt-in zone, or the same price in several regions
    CAPACITY = "capacity"  # needs a quota or a reservation before it can be launched
    AVAILABILITY = "availability"  # how often the shape was listed this week: availability.py
    SPOT_RISK = "spot_risk"  # what spot saves against the sure plan, and its worst case
    ARM_HOST = "arm_host"  # an aarch64 host (Grace): some wheels must be built from source


class Severity(StrEnum):
    INFO = "info"
    WARN = "warn"
    HIGH = "high"  # decides against the option unless the user accepts the risk


@dataclass(frozen=True, slots=True)
class Caveat:
    kind: CaveatKind
    severity: Severity
    text: str
