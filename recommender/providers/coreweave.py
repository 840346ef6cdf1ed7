"""CoreWeave: billing, InfiniBand through SkyPilot's ``coreweave`` (Kubernetes).

No catalog gpufit reads lists CoreWeave's prices; a native feed can.
"""

from __future__ import annotations

from datetime import date
from types import MappingProxyType

from recommender.pricing.billing_rules import MINUTE_S, BillingRule
from recommender.providers.base import Provider

__all__ = ["PROVIDER"]

PROVIDER = Provider(
    id="coreweave",
    name="CoreWeave",
    words=("coreweave",),
    catalogs=MappingProxyType({}),
    billing=BillingRule(
        provider="coreweave",
        granularity_s=MINUTE_S,  # instances are billed per minute
        minimum_s=MINUTE_S,
        spot_available=False,  # no public spot market
        per_gpu_pricing=False,
        spot_interruptions_per_hour=0.0,
        checkpoint_write_gb_per_s=2.0,  # distributed file storage per node (ours)
        storage_usd_per_gb_month=0.07,
        source="coreweave.com/pricing (hourly list prices per instance, per-minute use)",
        as_of=date(2026, 11, 20),
    ),
    network_tier="InfiniBand",
    network_note=" on CoreWeave (VMs or its Kubernetes clusters).",
    skypilot_cloud="coreweave",
)
