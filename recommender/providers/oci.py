"""Oracle Cloud Infrastructure: billing, preemptible instances, SkyPilot's ``oci``."""

from __future__ import annotations

from datetime import date
from types import MappingProxyType

from recommender.pricing.billing_rules import BAND_SPOT_PER_HOUR, MINUTE_S, BillingRule
from recommender.providers.base import GPUHUNT, SKYPILOT, Provider

__all__ = ["PROVIDER"]

PROVIDER = Provider(
    id="oci",
    name="OCI",
    words=("oracle cloud", "oracle", "oci"),
    catalogs=MappingProxyType({SKYPILOT: ("oci",), GPUHUNT: ("oci",)}),
    billing=BillingRule(
        provider="oci",
        granularity_s=1,  # Compute is billed per second
        minimum_s=MINUTE_S,  # "with a one-minute minimum"
        spot_available=True,  # preemptible instances at 50 % of on-demand
        per_gpu_pricing=True,  # GPU shapes are listed per GPU-hour
        spot_interruptions_per_hour=BAND_SPOT_PER_HOUR,  # ours: like other clouds' spot
        checkpoint_write_gb_per_s=1.0,  # block volume, higher-performance tier (ours)
        storage_usd_per_gb_month=0.0255,  # Object Storage Standard
        source="oracle.com/cloud/compute/pricing (per-second billing, 1 min minimum)",
        as_of=date(2026, 11, 20),
    ),
    skypilot_cloud="oci",
)
