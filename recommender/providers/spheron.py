"""Spheron: billing (20-minute minimum) and spot instances; listed in SkyPilot's catalogs."""

from __future__ import annotations

from datetime import date
from types import MappingProxyType

from recommender.pricing.billing_rules import MARKET_SPOT_PER_HOUR, MINUTE_S, BillingRule
from recommender.providers.base import SKYPILOT, Provider

__all__ = ["PROVIDER"]

PROVIDER = Provider(
    id="spheron",
    name="Spheron",
    words=("spheron",),
    catalogs=MappingProxyType({SKYPILOT: ("spheron",)}),
    billing=BillingRule(
        provider="spheron",
        granularity_s=1,  # "Pay-per-second billing"
        # "All instance types enforce a 20-minute minimum runtime before manual
        # termination", so a run pays for at least 20 minutes.
        minimum_s=20 * MINUTE_S,
        spot_available=True,  # spot instances "can be reclaimed by the provider"
        per_gpu_pricing=False,  # ours: as the default
        spot_interruptions_per_hour=MARKET_SPOT_PER_HOUR,  # ours: like marketplace spot
        checkpoint_write_gb_per_s=0.5,  # ours: as the default
        storage_usd_per_gb_month=0.10,  # ours: as the default
        source="docs.spheron.ai/billing (pay-per-second); docs.spheron.network/concepts "
        "(20-minute minimum runtime, spot instances)",
        as_of=date(2026, 12, 3),
    ),
)
