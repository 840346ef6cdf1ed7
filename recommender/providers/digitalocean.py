"""DigitalOcean (GPU Droplets): billing, SkyPilot's ``do``; gpuhunt names it ``digitalocean``."""

from __future__ import annotations

from datetime import date
from types import MappingProxyType

from recommender.pricing.billing_rules import MINUTE_S, BillingRule
from recommender.providers.base import GPUHUNT, SKYPILOT, Provider

__all__ = ["PROVIDER"]

PROVIDER = Provider(
    id="do",
    name="DigitalOcean",
    words=("digitalocean", "digital ocean"),
    catalogs=MappingProxyType({SKYPILOT: ("do",), GPUHUNT: ("digitalocean",)}),
    billing=BillingRule(
        provider="do",
        granularity_s=1,  # Droplets (GPU Droplets too) are billed per second
        minimum_s=MINUTE_S,  # "a minimum charge of 60 seconds"
        spot_available=False,  # no spot market
        per_gpu_pricing=True,  # GPU Droplets are listed per GPU-hour
        spot_interruptions_per_hour=0.0,
        checkpoint_write_gb_per_s=0.5,  # volumes block storage (ours)
        storage_usd_per_gb_month=0.02,  # Spaces object storage overage
        source="docs.digitalocean.com/platform/billing (per-second, 60 s minimum)",
        as_of=date(2026, 11, 20),
    ),
    skypilot_cloud="do",
)
