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

from recommender.spot import BAND_LIFETIME_HOURS, SpotRange, band_to_hourly, capacity_wait
from recommender.spot import interruption_range as _interruption_range

__all__ = [
    "DEFAULT_RULE",
    "RULES",
    "BillingRule",
    "SpotCase",
    "SpotEconomics",
    "billed_hours",
    "interruption_range",
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
    #: False when no source for the provider's metering was found: then it is billed per
    #: whole hour as a conservative assumption, and every option of it says so.
    known: bool = True

    def __post_init__(self) -> None:
        if self.granularity_s < 1 or self.minimum_s < 0:
            raise ValueError("granularity must be positive and minimum non-negative")


HOUR_S = 3600
MINUTE_S = 60
HOURS_PER_MONTH = 730  # 365 × 24 / 12, the convention every cloud price page uses

# Spot interruption rates per GPU class live in recommender/spot.py, as (optimistic, expected,
# pessimistic) ranges with their sources. A rule's own rate is the expected figure for a
# training-class GPU, used when an offer names no GPU; 0 means the provider sells no spot.
# A monthly band is read over a typical spot lifetime, not a 730-hour month (see spot.py).
_BAND_SPOT_PER_HOUR = band_to_hourly(0.30, BAND_LIFETIME_HOURS[1])  # ">20 %" band, 1-day life
# Marketplace/community spot (RunPod interruptible, Vast interruptible bids) is outbid often.
_MARKET_SPOT_PER_HOUR = 1 / 12  # ours: interruptible pods are reclaimed when outbid (spot.py)


_READ = date(2026, 11, 20)

#: Clouds gpufit reads (SkyPilot's catalogs, recommender/feeds/skypilot.py CLOUDS) for which
#: no page stating how time is metered was found (searched 2026-12-03): Cudo, Daytona,
#: Fluidstack, Hyperbolic (docs.hyperbolic.xyz quotes hourly prices only), Hyperstack (docs
#: state an "hourly cost" per VM state, not the unit), Lium, Mithril (spot "billed ... based
#: on the actual used hours", reservations in 1-hour increments: docs.mithril.ai), Paperspace,
#: Prime Intellect, Samsung SDS (scp), Seeweb, Shadeform, Spheron, Verda (docs.verda.com
#: "Pricing and Billing" names no unit) and Yotta.
_UNKNOWN_BILLING = (
    *("cudo", "daytona", "fluidstack", "hyperbolic", "hyperstack", "lium", "mithril"),
    *("paperspace", "primeintellect", "scp", "seeweb", "shadeform", "spheron", "verda", "yotta"),
)


def _unknown(provider: str) -> BillingRule:
    """The explicit rule of a cloud whose metering is not known: whole hours, 1 h minimum."""
    return BillingRule(
        provider=provider,
        granularity_s=HOUR_S,
        minimum_s=HOUR_S,
        spot_available=True,
        per_gpu_pricing=False,
        spot_interruptions_per_hour=_MARKET_SPOT_PER_HOUR,
        checkpoint_write_gb_per_s=0.5,
        storage_usd_per_gb_month=0.10,
        source="unknown: billed per hour as a conservative assumption",
        as_of=date(2026, 12, 3),
        known=False,
    )


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
                spot_interruptions_per_hour=_BAND_SPOT_PER_HOUR,
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
                spot_interruptions_per_hour=_BAND_SPOT_PER_HOUR,
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
                spot_interruptions_per_hour=_BAND_SPOT_PER_HOUR,
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
                spot_interruptions_per_hour=_BAND_SPOT_PER_HOUR,  # ours: like other clouds' spot
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
            BillingRule(
                provider="oci",
                granularity_s=1,  # Compute is billed per second
                minimum_s=MINUTE_S,  # "with a one-minute minimum"
                spot_available=True,  # preemptible instances at 50 % of on-demand
                per_gpu_pricing=True,  # GPU shapes are listed per GPU-hour
                spot_interruptions_per_hour=_BAND_SPOT_PER_HOUR,  # ours: like other clouds' spot
                checkpoint_write_gb_per_s=1.0,  # block volume, higher-performance tier (ours)
                storage_usd_per_gb_month=0.0255,  # Object Storage Standard
                source="oracle.com/cloud/compute/pricing (per-second billing, 1 min minimum)",
                as_of=_READ,
            ),
            BillingRule(
                provider="do",
                granularity_s=1,  # Droplets (GPU Droplets too) are billed per second
                minimum_s=MINUTE_S,  # "a minimum charge of 60 seconds"
                spot_available=False,  # no spot market
                per_gpu_pricing=True,  # GPU Droplets are listed per GPU-hour
                spot_interruptions_per_hour=0.0,
                checkpoint_write_gb_per_s=0.5,  # volumes block storage (ours)
                storage_usd_per_gb_month=0.02,  # Spaces object storage overage
                source="docs.digitalocean.com/platform/billing (per-second, 60 s minimum)",
                as_of=_READ,
            ),
            BillingRule(
                provider="ibm",
                granularity_s=1,  # VPC virtual servers are billed per second
                minimum_s=MINUTE_S,  # "with a one-minute minimum"
                spot_available=False,  # no spot VPC GPU profiles in SkyPilot's catalog
                per_gpu_pricing=False,
                spot_interruptions_per_hour=0.0,
                checkpoint_write_gb_per_s=0.5,  # VPC block storage profiles (ours)
                storage_usd_per_gb_month=0.022,  # Cloud Object Storage Standard, regional
                source="cloud.ibm.com/docs/vpc?topic=vpc-vsi-billing (per second, 1 min minimum)",
                as_of=_READ,
            ),
            BillingRule(
                provider="jarvislabs",
                granularity_s=MINUTE_S,  # "Pay per minute billing" (github.com/jarvislabsai)
                minimum_s=MINUTE_S,  # ours: one billing unit
                spot_available=True,  # "is_reserved=False refers to a spot instance"
                per_gpu_pricing=True,  # GPU instances are priced per GPU-hour
                spot_interruptions_per_hour=_MARKET_SPOT_PER_HOUR,  # ours: like marketplace spot
                checkpoint_write_gb_per_s=0.5,  # ours: instance storage
                storage_usd_per_gb_month=0.10,  # ours: as the default
                source="github.com/jarvislabsai (profile README: 'Pay per minute billing'); "
                "docs.jarvislabs.ai/api (is_reserved=False is spot)",
                as_of=date(2026, 12, 3),
            ),
        )
    }
    | {provider: _unknown(provider) for provider in _UNKNOWN_BILLING}
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
    source="unknown: billed per hour as a conservative assumption",
    as_of=_READ,
    known=False,
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


def interruption_range(rule: BillingRule, nodes: int, gpu_id: str | None = None) -> SpotRange:
    """Preemptions per hour of a job on ``nodes`` spot instances, as a range with its source.

    A synchronous job stops when any one node is preempted, so the per-node rate is multiplied
    by the node count (independent nodes: the minimum of n exponential lifetimes has n × the
    rate).
    """
    per_node = _interruption_range(rule.provider, gpu_id, rule.spot_interruptions_per_hour)
    return per_node.scaled(max(1, nodes))


def interruptions_per_hour(rule: BillingRule, nodes: int, gpu_id: str | None = None) -> float:
    """Expected preemptions per hour of a job on ``nodes`` spot instances (any one stops it)."""
    return interruption_range(rule, nodes, gpu_id).expected


# Restarting after a preemption once capacity is back: pull the image, load the checkpoint and
# warm up. 10 minutes is typical for a single node (ours; SkyPilot managed-job recovery logs).
# It is billed; the wait for capacity before it (spot.capacity_wait) is not.
RESTART_S = 600
# Beyond this exponent a case never finishes in practice; capping it keeps figures finite.
_MAX_EXPONENT = 50.0


@dataclass(frozen=True, slots=True)
class SpotCase:
    """One end of the spot range for a run of ``hours`` of training compute."""

    interruptions_per_hour: float
    #: Hours each preemption waits for capacity to return (not billed).
    wait_hours: float
    #: Fraction of extra billed time: checkpoint writes + lost work + restarts.
    overhead_frac: float
    expected_interruptions: float
    #: Billed running hours: compute hours × (1 + overhead).
    run_hours: float
    #: Wall-clock hours: running hours plus every wait for capacity.
    elapsed_hours: float

    @property
    def mtbf_hours(self) -> float:
        return math.inf if self.interruptions_per_hour <= 0 else 1 / self.interruptions_per_hour


@dataclass(frozen=True, slots=True)
class SpotEconomics:
    """Cost of preemptions for a job on spot capacity: the expected case in the first
    fields, the optimistic and pessimistic ends in :attr:`optimistic` / :attr:`pessimistic`."""

    interruptions_per_hour: float
    checkpoint_gib: float
    checkpoint_write_s: float
    #: Young/Daly optimum √(2·C·MTBF) for the expected rate, in hours; every case uses it.
    checkpoint_interval_hours: float
    restart_s: float
    #: Fraction of extra billed time: checkpoint writes + lost work + restarts.
    overhead_frac: float
    expected_interruptions: float
    nodes: int = 1
    #: Expected hours each preemption waits for capacity to return (not billed).
    wait_hours: float = 0.0
    #: Expected billed running hours and wall-clock hours (running + waits) of the run.
    run_hours: float = 0.0
    elapsed_hours: float = 0.0
    optimistic: SpotCase | None = None
    pessimistic: SpotCase | None = None
    #: Where the interruption rate and the capacity wait come from.
    source: str = ""

    @property
    def mtbf_hours(self) -> float:
        return math.inf if self.interruptions_per_hour <= 0 else 1 / self.interruptions_per_hour

    @property
    def pessimistic_hours(self) -> float:
        """Wall-clock hours of the run at the pessimistic end (rate, wait)."""
        return self.pessimistic.elapsed_hours if self.pessimistic else self.elapsed_hours

    @property
    def optimistic_hours(self) -> float:
        return self.optimistic.elapsed_hours if self.optimistic else self.elapsed_hours


def _overhead(rate: float, tau_s: float, write_s: float, restart_s: float) -> float:
    """Extra time per unit of compute with exponential preemptions at ``rate`` per hour,
    checkpointing every ``tau_s`` of compute (Daly 2006, eq. 20, complete first-failure model):
    T_wall / T_solve = (M/τ) · e^(R/M) · (e^((τ+C)/M) − 1), less one. To first order this is
    Young's C/τ + τ/(2M) + R/M; unlike it, it grows without bound when M nears τ."""
    if rate <= 0:
        return write_s / tau_s if math.isfinite(tau_s) else 0.0
    m = HOUR_S / rate
    x = min((tau_s + write_s) / m, _MAX_EXPONENT)
    r = min(restart_s / m, _MAX_EXPONENT)
    return m / tau_s * math.exp(r) * math.expm1(x) - 1


def _case(rate: float, wait_h: float, tau_s: float, write_s: float, hours: float) -> SpotCase:
    overhead = max(_overhead(rate, tau_s, write_s, RESTART_S), 0.0)
    run = hours * (1 + overhead)
    n = rate * run
    return SpotCase(rate, wait_h, overhead, n, run, run + n * wait_h)


def spot_economics(
    rule: BillingRule,
    *,
    nodes: int,
    checkpoint_gib: float,
    hours: float,
    gpu_id: str | None = None,
) -> SpotEconomics:
    """Cost of preemptions for ``hours`` of compute on ``nodes`` spot instances of ``gpu_id``.

    The checkpoint interval is Young's optimum τ = √(2·C·M) for the expected MTBF M and write
    time C (Young 1974); a team picks it once, so the optimistic and pessimistic ends keep the
    same τ and only their rate and wait for capacity differ. Each case's overhead is Daly's
    (2006) complete model; each preemption then waits for capacity (unbilled) and restarts.
    """
    rates = interruption_range(rule, nodes, gpu_id)
    waits = capacity_wait(gpu_id)
    write_s = checkpoint_gib * 2**30 / 1e9 / rule.checkpoint_write_gb_per_s
    source = f"rate: {rates.source}; wait for capacity: {waits.source}"
    if rates.expected <= 0:
        none = _case(0.0, 0.0, math.inf, write_s, hours)
        return SpotEconomics(
            0.0, checkpoint_gib, write_s, math.inf, RESTART_S, 0.0, 0.0, max(1, nodes),
            0.0, hours, hours, none, none, rates.source,
        )  # fmt: skip
    tau_s = math.sqrt(2 * max(write_s, 1.0) * HOUR_S / rates.expected)
    opt = _case(rates.optimistic, waits.optimistic, tau_s, write_s, hours)
    exp = _case(rates.expected, waits.expected, tau_s, write_s, hours)
    pess = _case(rates.pessimistic, waits.pessimistic, tau_s, write_s, hours)
    return SpotEconomics(
        interruptions_per_hour=rates.expected,
        checkpoint_gib=checkpoint_gib,
        checkpoint_write_s=write_s,
        checkpoint_interval_hours=tau_s / HOUR_S,
        restart_s=RESTART_S,
        overhead_frac=exp.overhead_frac,
        expected_interruptions=exp.expected_interruptions,
        nodes=max(1, nodes),
        wait_hours=waits.expected,
        run_hours=exp.run_hours,
        elapsed_hours=exp.elapsed_hours,
        optimistic=opt,
        pessimistic=pess,
        source=source,
    )
