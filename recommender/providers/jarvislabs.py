"""JarvisLabs: billing and spot instances; SkyPilot lists its prices but cannot launch there."""

from __future__ import annotations

from datetime import date
from types import MappingProxyType

from recommender.pricing.billing_rules import MARKET_SPOT_PER_HOUR, MINUTE_S, BillingRule
from recommender.providers.base import GPUHUNT, SKYPILOT, Provider

__all__ = ["PROVIDER"]

PROVIDER = Provider(
    id="jarvislabs",
    name="JarvisLabs",
    words=("jarvislabs.ai", "jarvislabs", "jarvis labs"),
    catalogs=MappingProxyType({SKYPILOT: ("jarvislabs",), GPUHUNT: ("jarvislabs",)}),
    billing=BillingRule(
        provider="jarvislabs",
        granularity_s=MINUTE_S,  # "Pay per minute billing" (github.com/jarvislabsai)
        minimum_s=MINUTE_S,  # ours: one billing unit
        spot_available=True,  # "is_reserved=False refers to a spot instance"
        per_gpu_pricing=True,  # GPU instances are priced per GPU-hour
        spot_interruptions_per_hour=MARKET_SPOT_PER_HOUR,  # ours: like marketplace spot
        checkpoint_write_gb_per_s=0.5,  # ours: instance storage
        storage_usd_per_gb_month=0.10,  # ours: as the default
        source="github.com/jarvislabsai (profile README: 'Pay per minute billing'); "
        "docs.jarvislabs.ai/api (is_reserved=False is spot)",
        as_of=date(2026, 12, 3),
    ),
)
