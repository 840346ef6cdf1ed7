"""RunPod: billing, interruptible (bid-priced) pods, SkyPilot's ``runpod``."""

from __future__ import annotations

from datetime import date
from types import MappingProxyType

from recommender.pricing.billing_rules import MARKET_SPOT_PER_HOUR, MINUTE_S, BillingRule
from recommender.pricing.spot import SpotModel, SpotTerms
from recommender.providers.base import GPUHUNT, SKYPILOT, Provider, SkyPilotMemory

__all__ = ["PROVIDER"]

#: What its SkyPilot catalog's ``MemoryInfo.SizeInMiB`` holds: GB per GPU; source:
#: SkyPilot catalog v8 ``runpod/vms.csv``: 80 for an A100-80GB.
_MEMORY = SkyPilotMemory.GB_PER_GPU

PROVIDER = Provider(
    id="runpod",
    name="RunPod",
    words=("runpod",),
    catalogs=MappingProxyType({SKYPILOT: ("runpod",), GPUHUNT: ("runpod",)}),
    billing=BillingRule(
        provider="runpod",
        granularity_s=MINUTE_S,  # pods are billed by the minute
        minimum_s=MINUTE_S,
        spot_available=True,  # "interruptible" (spot) pods
        per_gpu_pricing=True,
        spot_interruptions_per_hour=MARKET_SPOT_PER_HOUR,
        checkpoint_write_gb_per_s=0.5,  # network volumes are slower than local disk (ours)
        storage_usd_per_gb_month=0.07,  # network volume price
        source="docs.runpod.io/pods/pricing (per-minute billing, interruptible pods)",
        as_of=date(2026, 11, 20),
    ),
    spot=SpotTerms(model=SpotModel.MARKET),
    skypilot_cloud="runpod",
    skypilot_memory=_MEMORY,
)
