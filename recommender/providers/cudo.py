"""Cudo Compute: billing, SkyPilot's ``cudo``."""

from __future__ import annotations

from datetime import date
from types import MappingProxyType

from recommender.pricing.billing_rules import MARKET_SPOT_PER_HOUR, BillingRule
from recommender.providers.base import GPUHUNT, SKYPILOT, Provider

__all__ = ["PROVIDER"]

PROVIDER = Provider(
    id="cudo",
    name="Cudo Compute",
    words=("cudo compute", "cudocompute", "cudo"),
    catalogs=MappingProxyType({SKYPILOT: ("cudo",), GPUHUNT: ("cudo",)}),
    billing=BillingRule(
        provider="cudo",
        granularity_s=1,  # usage is computed "with precision to the nearest second"
        minimum_s=0,  # the billing page names no minimum charge
        spot_available=True,  # ours: as the default
        per_gpu_pricing=False,  # ours: as the default
        spot_interruptions_per_hour=MARKET_SPOT_PER_HOUR,  # ours: as the default
        checkpoint_write_gb_per_s=0.5,  # ours: as the default
        storage_usd_per_gb_month=0.10,  # ours: as the default
        source="cudocompute.com/docs/billing (usage to the nearest second)",
        as_of=date(2026, 12, 3),
    ),
    skypilot_cloud="cudo",
)
