"""Provider billing rules, whole-run cost and spot economics.

Prices in offers are per instance-hour; what a team pays depends on how the provider meters
time (per second, minute or hour), its minimum charge, and, on spot, the work lost to
preemptions. Every rule below names its source and the date it was read.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from types import MappingProxyType

__all__ = [
    "DEFAULT_RULE",
    "RULES",
    "BillingRule",
    "SpotEconomics",
    "billed_hours",
    "interruptions_per_hour",
    "rule_for",
    "spot_economics",
]


@dataclass(frozen=True, slots=True)
class BillingRule:
    """How one provider meters and charges time."""

    provider: str
    granularity_s: int
    minimum_s: int
    spot_available: bool
    #: True when the provider quotes per GPU; offers are normalised to per instance anyway.
    per_gpu_pricing: bool
    #: Spot preemptions per instance-hour when the feed has no better figure.
    spot_interruptions_per_hour: float
    #: Sustained checkpoint write throughput to the provider's usual storage, GB/s per node.
    checkpoint_write_gb_per_s: float
    #: Checkpoint storage price, USD per GB-month (object or network storage).
    storage_usd_per_gb_month: float
    source: str
    as_of: date

    def __post_init__(self) -> None:
        if self.granularity_s < 1 or self.minimum_s < 0:
            raise ValueError("granularity must be positive and minimum non-negative")


HOUR_S = 3600
MINUTE_S = 60
HOURS_PER_MONTH = 730  # 365 × 24 / 12, the convention every cloud price page uses

# AWS Spot Instance Advisor publishes "frequency of interruption" as monthly bands (<5 %, 5-10 %,
# 10-15 %, 15-20 %, >20 %); large GPU instances (p4d, p5) sit in the top band in most regions.
# The top band is open-ended, so gpufit takes twice its floor, 40 %/month:
# λ = −ln(1 − 0.40) / 730 h ≈ 7.0e-4 per hour (MTBF ≈ 60 days per instance).
_AWS_GPU_SPOT_MONTHLY = 0.40  # aws.amazon.com/ec2/spot/instance-advisor band ">20 %"; 2× its floor
# GCP publishes no rate; Spot VMs can be preempted at any time with 30 s notice. gpufit assumes
# one preemption per ~3 days of GPU Spot time (ours: community reports for A100/H100 spot).
_GCP_SPOT_PER_HOUR = 1 / 72  # source: cloud.google.com/compute/docs/instances/spot (no SLA); ours
# Azure Spot: evicted at any time with 30 s notice; same documented default as GCP (ours).
_AZURE_SPOT_PER_HOUR = 1 / 72  # source: learn.microsoft.com/azure/virtual-machines/spot-vms; ours
# Marketplace/community spot (RunPod interruptible, Vast interruptible bids) is outbid often.
_MARKET_SPOT_PER_HOUR = 1 / 12  # ours: interruptible pods are reclaimed when outbid (RunPod docs)


def _monthly_to_hourly(p: float) -> float:
    return -math.log(1 - p) / HOURS_PER_MONTH


# AWS Spot Instance Advisor rates each instance type by a monthly interruption band. gpufit's
# defaults per GPU, taking each band's middle (the open top band ">20 %" as 40 %). Ours:
# typical bands for the instance family that carries the GPU, not a live reading; a feed that
# carries advisor data should override them. Training-class parts are the most contended.
_AWS_MONTHLY_BAND_BY_GPU: Mapping[str, float] = MappingProxyType(
    {
        "H100-SXM-80GB": _AWS_GPU_SPOT_MONTHLY,  # p5: ">20 %" band
        "H200-SXM-141GB": _AWS_GPU_SPOT_MONTHLY,  # p5e / p5en: ">20 %"
        "B200-180GB": _AWS_GPU_SPOT_MONTHLY,  # p6-b200: ">20 %"
        "B300-288GB": _AWS_GPU_SPOT_MONTHLY,  # p6-b300: ">20 %"
        "A100-SXM-80GB": _AWS_GPU_SPOT_MONTHLY,  # p4de: ">20 %"
        "A100-SXM-40GB": _AWS_GPU_SPOT_MONTHLY,  # p4d: ">20 %"
        "V100-SXM-16GB": 0.125,  # p3: "10-15 %"
        "V100-SXM-32GB": 0.125,  # p3dn: "10-15 %"
        "L40S": 0.075,  # g6e: "5-10 %"
        "L4": 0.075,  # g6: "5-10 %"
        "A10G": 0.075,  # g5: "5-10 %"
        "T4": 0.025,  # g4dn: "<5 %"
    }
)


_READ = date(2026, 11, 20)

RULES: Mapping[str, BillingRule] = MappingProxyType(
    {
        r.provider: r
        for r in (
            BillingRule(
                provider="aws",
                granularity_s=1,  # per-second billing for Linux On-Demand and Spot
                minimum_s=MINUTE_S,  # "minimum of 60 seconds"
                spot_available=True,
                per_gpu_pricing=False,
                spot_interruptions_per_hour=_monthly_to_hourly(_AWS_GPU_SPOT_MONTHLY),
                checkpoint_write_gb_per_s=1.0,  # EBS gp3 max 1,000 MB/s per volume (AWS EBS docs)
                storage_usd_per_gb_month=0.023,  # S3 Standard, first 50 TB, us-east-1
                source="aws.amazon.com/ec2/pricing/on-demand (per-second billing, 60 s minimum)",
                as_of=_READ,
            ),
            BillingRule(
                provider="gcp",
                granularity_s=1,  # "billed in one-second increments"
                minimum_s=MINUTE_S,  # "with a one-minute minimum"
                spot_available=True,
                per_gpu_pricing=True,  # GPUs are priced per accelerator on top of the host VM
                spot_interruptions_per_hour=_GCP_SPOT_PER_HOUR,
                checkpoint_write_gb_per_s=1.2,  # pd-balanced/hyperdisk per-VM write ceiling (ours)
                storage_usd_per_gb_month=0.020,  # Cloud Storage Standard, us-central1
                source="cloud.google.com/compute/vm-instance-pricing (1 s increments, 1 min min.)",
                as_of=_READ,
            ),
            BillingRule(
                provider="azure",
                granularity_s=MINUTE_S,  # VMs are metered per minute of use
                minimum_s=MINUTE_S,
                spot_available=True,
                per_gpu_pricing=False,
                spot_interruptions_per_hour=_AZURE_SPOT_PER_HOUR,
                checkpoint_write_gb_per_s=1.0,  # Premium SSD v2 per-disk throughput class (ours)
                storage_usd_per_gb_month=0.018,  # Blob hot LRS
                source="azure.microsoft.com/pricing/details/virtual-machines (per-minute metering)",
                as_of=_READ,
            ),
            BillingRule(
                provider="lambda",
                granularity_s=MINUTE_S,  # "billed in one-minute increments"
                minimum_s=MINUTE_S,
                spot_available=False,  # Lambda sells no spot capacity
                per_gpu_pricing=True,  # list prices are quoted per GPU-hour
                spot_interruptions_per_hour=0.0,
                checkpoint_write_gb_per_s=1.0,  # local NVMe is faster; persistent FS ~1 GB/s (ours)
                storage_usd_per_gb_month=0.20,  # Lambda persistent filesystem
                source="lambda.ai/pricing and docs (on-demand billed per minute, no spot)",
                as_of=_READ,
            ),
            BillingRule(
                provider="runpod",
                granularity_s=MINUTE_S,  # pods are billed by the minute
                minimum_s=MINUTE_S,
                spot_available=True,  # "interruptible" (spot) pods
                per_gpu_pricing=True,
                spot_interruptions_per_hour=_MARKET_SPOT_PER_HOUR,
                checkpoint_write_gb_per_s=0.5,  # network volumes are slower than local disk (ours)
                storage_usd_per_gb_month=0.07,  # network volume price
                source="docs.runpod.io/pods/pricing (per-minute billing, interruptible pods)",
                as_of=_READ,
            ),
            BillingRule(
                provider="nebius",
                granularity_s=1,  # usage is metered per second
                minimum_s=0,
                spot_available=True,  # "preemptible" VMs
                per_gpu_pricing=True,
                spot_interruptions_per_hour=_GCP_SPOT_PER_HOUR,  # ours: like other clouds' spot
                checkpoint_write_gb_per_s=1.0,  # network SSD (ours)
                storage_usd_per_gb_month=0.015,  # object storage standard
                source="nebius.com/prices (per-second metering, preemptible VMs)",
                as_of=_READ,
            ),
            BillingRule(
                provider="coreweave",
                granularity_s=MINUTE_S,  # instances are billed per minute
                minimum_s=MINUTE_S,
                spot_available=False,  # no public spot market
                per_gpu_pricing=False,
                spot_interruptions_per_hour=0.0,
                checkpoint_write_gb_per_s=2.0,  # distributed file storage per node (ours)
                storage_usd_per_gb_month=0.07,
                source="coreweave.com/pricing (hourly list prices per instance, per-minute use)",
                as_of=_READ,
            ),
            BillingRule(
                provider="vast",
                granularity_s=1,  # per-second billing of rented machines
                minimum_s=0,
                spot_available=True,  # interruptible bids
                per_gpu_pricing=True,
                spot_interruptions_per_hour=_MARKET_SPOT_PER_HOUR,
                checkpoint_write_gb_per_s=0.5,  # host-dependent local disk (ours)
                storage_usd_per_gb_month=0.10,
                source="vast.ai/pricing (per-second billing, interruptible instances)",
                as_of=_READ,
            ),
        )
    }
)

# Unknown providers are billed conservatively: whole hours with a one-hour minimum, so a
# 90-minute job costs two hours. Better to over-estimate than to surprise a budget.
DEFAULT_RULE = BillingRule(
    provider="*",
    granularity_s=HOUR_S,
    minimum_s=HOUR_S,
    spot_available=True,
    per_gpu_pricing=False,
    spot_interruptions_per_hour=_MARKET_SPOT_PER_HOUR,
    checkpoint_write_gb_per_s=0.5,
    storage_usd_per_gb_month=0.10,
    source="gpufit default for providers without a known rule (hourly, 1 h minimum)",
    as_of=_READ,
)


def rule_for(provider: str) -> BillingRule:
    """The billing rule of a provider id, or the conservative default."""
    return RULES.get(provider.lower(), DEFAULT_RULE)


def billed_hours(rule: BillingRule, hours: float) -> float:
    """Hours charged for ``hours`` of use: rounded up to the granularity, at least the minimum."""
    if hours <= 0:
        return 0.0
    seconds = max(hours * HOUR_S, rule.minimum_s)
    # Subtract a hair before ceil so 2.0 h exactly on an hourly rule stays 2 h (float noise).
    units = math.ceil(seconds / rule.granularity_s - 1e-9)
    return units * rule.granularity_s / HOUR_S


def interruptions_per_hour(rule: BillingRule, nodes: int, gpu_id: str | None = None) -> float:
    """Preemptions per hour of a job on ``nodes`` spot instances (any one stops the job).

    AWS rates come from the per-GPU Spot Advisor band table when the GPU is in it; every
    other provider uses its rule's documented default.
    """
    per_node = rule.spot_interruptions_per_hour
    if rule.provider == "aws" and gpu_id is not None and gpu_id in _AWS_MONTHLY_BAND_BY_GPU:
        per_node = _monthly_to_hourly(_AWS_MONTHLY_BAND_BY_GPU[gpu_id])
    return per_node * max(1, nodes)


# Restarting after a preemption: get new capacity, pull the image, load the checkpoint and
# warm up. 10 minutes is typical for a single node (ours; SkyPilot managed-job recovery logs).
RESTART_S = 600


@dataclass(frozen=True, slots=True)
class SpotEconomics:
    """Expected cost of preemptions for a job on spot capacity."""

    interruptions_per_hour: float
    checkpoint_gib: float
    checkpoint_write_s: float
    #: Young/Daly optimum √(2·C·MTBF), in hours.
    checkpoint_interval_hours: float
    restart_s: float
    #: Fraction of extra wall time: checkpoint writes + lost work + restarts.
    overhead_frac: float
    expected_interruptions: float

    @property
    def mtbf_hours(self) -> float:
        return math.inf if self.interruptions_per_hour <= 0 else 1 / self.interruptions_per_hour


def spot_economics(
    rule: BillingRule,
    *,
    nodes: int,
    checkpoint_gib: float,
    hours: float,
    gpu_id: str | None = None,
) -> SpotEconomics:
    """Expected overhead of preemptions (Young 1974 / Daly 2006 first-order model).

    With checkpoint write time C and mean time between failures M, checkpointing every
    τ = √(2·C·M) minimises waste; the expected overhead fraction is then about
    C/τ (writing) + τ/(2·M) (work redone after a failure) + R/M (restarts).
    """
    rate = interruptions_per_hour(rule, nodes, gpu_id)
    write_s = checkpoint_gib * 2**30 / 1e9 / rule.checkpoint_write_gb_per_s
    if rate <= 0:
        return SpotEconomics(0.0, checkpoint_gib, write_s, math.inf, RESTART_S, 0.0, 0.0)
    mtbf_s = HOUR_S / rate
    tau_s = math.sqrt(2 * max(write_s, 1.0) * mtbf_s)
    overhead = write_s / tau_s + tau_s / (2 * mtbf_s) + RESTART_S / mtbf_s
    return SpotEconomics(
        interruptions_per_hour=rate,
        checkpoint_gib=checkpoint_gib,
        checkpoint_write_s=write_s,
        checkpoint_interval_hours=tau_s / HOUR_S,
        restart_s=RESTART_S,
        overhead_frac=overhead,
        expected_interruptions=rate * hours * (1 + overhead),
    )
