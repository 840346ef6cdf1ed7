"""Provider billing rules: how each cloud meters time and its minimum charge.

Prices in offers are per instance-hour; what a team pays depends on how the provider meters
time (per second, minute or hour) and its minimum charge. Every rule below names its source
and the date it was read. Spot economics built on these rules live in
recommender/pricing/billing.py.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import date
from types import MappingProxyType

from recommender.pricing.spot import BAND_LIFETIME_HOURS, band_to_hourly

__all__ = [
    "DEFAULT_RULE",
    "HOURS_PER_MONTH",
    "HOUR_S",
    "MINUTE_S",
    "RULES",
    "BillingRule",
    "billed_hours",
    "rule_for",
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

# Spot interruption rates per GPU class live in recommender/pricing/spot.py, as (optimistic,
# expected, pessimistic) ranges with their sources. A rule's own rate is the expected figure for a
# training-class GPU, used when an offer names no GPU; 0 means the provider sells no spot. A monthly
# band is read over a typical spot lifetime, not a 730-hour month (see spot.py).
_BAND_SPOT_PER_HOUR = band_to_hourly(0.30, BAND_LIFETIME_HOURS[1])  # ">20 %" band, 1-day life
# Marketplace/community spot (RunPod interruptible, Vast interruptible bids) is outbid often.
_MARKET_SPOT_PER_HOUR = 1 / 12  # ours: interruptible pods are reclaimed when outbid (spot.py)


_READ = date(2026, 11, 20)

#: Clouds gpufit reads (SkyPilot's catalogs, recommender/feeds/skypilot.py CLOUDS) whose own
#: pages state no metering unit, so their rule is the explicit unknown one. Searched 2026-12-03
#: ("<cloud> billing per second / per minute / docs billing" in public docs and pages, and each
#: provider's public GitHub repos). Third-party pages are leads, not sources.
#: What each provider's own material says:
#: - fluidstack: docs source (github.com/fluidstackio/fern-config) shows a credit balance and a
#:   billing history; its API quotes hourly prices. No unit.
#: - hyperbolic: docs.hyperbolic.xyz/docs/gpu-marketplace-pricing gives hourly prices only.
#: - hyperstack: docs.hyperstack.cloud/docs/billing/billing-policies has a "Pricing and billing
#:   intervals" section the stored copy does not reach; a stopped (SHUTOFF) VM bills like a
#:   running one. Lead: per minute (a third-party transcript of hyperstack.cloud/gpu-pricing).
#: - lium: docs.lium.io quotes hourly USD prices (providers are paid daily); github.com/
#:   Datura-ai/lium lists "spot" (reclaimable) and "secure" tiers. No unit.
#: - mithril: docs.mithril.ai: spot capacity by auction; reservations of 3 h to 2 weeks in
#:   1-hour increments. No unit for spot or on-demand use.
#: - paperspace: github.com/Paperspace/Docs (2021) prorates a destroyed machine "to the hour";
#:   too old and too narrow for today's meter (now billed through DigitalOcean). Lead: per
#:   second (third party).
#: - primeintellect: a marketplace; docs.primeintellect.ai quotes each provider's hourly price.
#: - scp (Samsung SDS): docs.e.samsungsdscloud.com cost management names no unit.
#: - seeweb: nothing on metering in seeweb.it pages or github.com/Seeweb.
#: - shadeform: a marketplace over other clouds (docs.shadeform.ai/getting-started/concepts);
#:   no unit of its own.
#: - verda (formerly DataCrunch): docs.verda.com "Pricing and Billing" names no unit;
#:   github.com/verda-cloud/verda-cli prices per GPU and has a SPOT contract. Lead: per second.
#: - yotta (Yotta Labs): docs.yottalabs.ai "GPU Pods" names no unit. Lead: per second.
_UNKNOWN_BILLING = (
    *("fluidstack", "hyperbolic", "hyperstack", "lium", "mithril", "paperspace"),
    *("primeintellect", "scp", "seeweb", "shadeform", "verda", "yotta"),
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
            BillingRule(
                provider="cudo",
                granularity_s=1,  # usage is computed "with precision to the nearest second"
                minimum_s=0,  # the billing page names no minimum charge
                spot_available=True,  # ours: as the default
                per_gpu_pricing=False,  # ours: as the default
                spot_interruptions_per_hour=_MARKET_SPOT_PER_HOUR,  # ours: as the default
                checkpoint_write_gb_per_s=0.5,  # ours: as the default
                storage_usd_per_gb_month=0.10,  # ours: as the default
                source="cudocompute.com/docs/billing (usage to the nearest second)",
                as_of=date(2026, 12, 3),
            ),
            BillingRule(
                provider="daytona",
                granularity_s=1,  # "Every resource is charged per second of usage"
                minimum_s=0,  # the docs name no minimum charge
                spot_available=True,  # SkyPilot's daytona catalog lists spot prices
                per_gpu_pricing=False,  # ours: as the default
                spot_interruptions_per_hour=_MARKET_SPOT_PER_HOUR,  # ours: as the default
                checkpoint_write_gb_per_s=0.5,  # ours: as the default
                storage_usd_per_gb_month=0.10,  # ours: as the default
                source="daytona.io/docs/sandbox-management (charged per second of usage)",
                as_of=date(2026, 12, 3),
            ),
            BillingRule(
                provider="spheron",
                granularity_s=1,  # "Pay-per-second billing"
                # "All instance types enforce a 20-minute minimum runtime before manual
                # termination", so a run pays for at least 20 minutes.
                minimum_s=20 * MINUTE_S,
                spot_available=True,  # spot instances "can be reclaimed by the provider"
                per_gpu_pricing=False,  # ours: as the default
                spot_interruptions_per_hour=_MARKET_SPOT_PER_HOUR,  # ours: like marketplace spot
                checkpoint_write_gb_per_s=0.5,  # ours: as the default
                storage_usd_per_gb_month=0.10,  # ours: as the default
                source="docs.spheron.ai/billing (pay-per-second); docs.spheron.network/concepts "
                "(20-minute minimum runtime, spot instances)",
                as_of=date(2026, 12, 3),
            ),
        )
    }
    | {provider: _unknown(provider) for provider in _UNKNOWN_BILLING}
)

# Unknown providers are billed conservatively: whole hours with a one-hour minimum, so a
# 90-minute job costs two hours. Better to over-estimate than to surprise a budget.
DEFAULT_RULE = _unknown("*")


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
