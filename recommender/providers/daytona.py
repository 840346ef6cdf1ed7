"""Daytona: billing and spot prices; SkyPilot lists its prices but gpufit has no launch target."""

from __future__ import annotations

from datetime import date
from types import MappingProxyType

from recommender.pricing.billing_rules import MARKET_SPOT_PER_HOUR, BillingRule
from recommender.providers.base import SKYPILOT, Provider

__all__ = ["PROVIDER"]

PROVIDER = Provider(
    id="daytona",
    name="Daytona",
    words=("daytona",),
    catalogs=MappingProxyType({SKYPILOT: ("daytona",)}),
    billing=BillingRule(
        provider="daytona",
        granularity_s=1,  # "Every resource is charged per second of usage"
        minimum_s=0,  # the docs name no minimum charge
        spot_available=True,  # SkyPilot's daytona catalog lists spot prices
        per_gpu_pricing=False,  # ours: as the default
        spot_interruptions_per_hour=MARKET_SPOT_PER_HOUR,  # ours: as the default
        checkpoint_write_gb_per_s=0.5,  # ours: as the default
        storage_usd_per_gb_month=0.10,  # ours: as the default
        source="daytona.io/docs/sandbox-management (charged per second of usage)",
        as_of=date(2026, 12, 3),
    ),
)
