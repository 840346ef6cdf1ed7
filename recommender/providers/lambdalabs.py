"""Lambda (Lambda Labs): billing, Ethernet between on-demand instances, SkyPilot's ``lambda``."""

from __future__ import annotations

import re
from datetime import date
from types import MappingProxyType

from recommender.pricing.billing_rules import MINUTE_S, BillingRule
from recommender.pricing.offers import Fabric
from recommender.providers.base import GPUHUNT, SKYPILOT, FabricPattern, Provider

__all__ = ["PROVIDER"]

#: On-demand instances network over Ethernet; Lambda's InfiniBand is sold only as "1-Click
#: Clusters", not these instance types; source: docs.lambda.ai/public-cloud/on-demand.
_MULTI_GPU = FabricPattern(re.compile(r"^gpu_8x_"), Fabric.ETHERNET, None, min_gpus=8)

PROVIDER = Provider(
    id="lambda",
    name="Lambda",
    words=("lambda labs", "lambdalabs", "lambda"),
    catalogs=MappingProxyType({SKYPILOT: ("lambda",), GPUHUNT: ("lambdalabs",)}),
    billing=BillingRule(
        provider="lambda",
        granularity_s=MINUTE_S,  # "billed in one-minute increments"
        minimum_s=MINUTE_S,
        spot_available=False,  # Lambda sells no spot capacity
        per_gpu_pricing=True,  # list prices are quoted per GPU-hour
        spot_interruptions_per_hour=0.0,
        checkpoint_write_gb_per_s=1.0,  # local NVMe is faster; persistent FS ~1 GB/s (ours)
        storage_usd_per_gb_month=0.20,  # Lambda persistent filesystem
        source="lambda.ai/pricing and docs (on-demand billed per minute, no spot)",
        as_of=date(2026, 11, 20),
    ),
    fabric_patterns=(_MULTI_GPU,),
    skypilot_cloud="lambda",
)
