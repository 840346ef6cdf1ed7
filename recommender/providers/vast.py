"""Vast.ai: billing, interruptible (bid-priced) instances, SkyPilot's ``vast``."""

from __future__ import annotations

from datetime import date
from types import MappingProxyType

from recommender.pricing.billing_rules import MARKET_SPOT_PER_HOUR, BillingRule
from recommender.pricing.spot import SpotModel, SpotTerms
from recommender.providers.base import GPUHUNT, SKYPILOT, Provider, SkyPilotMemory

__all__ = ["PROVIDER"]

#: What its SkyPilot catalog's ``MemoryInfo.SizeInMiB`` holds: MiB over all its GPUs; source:
#: SkyPilot catalog v8 ``vast/vms.csv``: ``2x-A100_SXM4`` lists 81920 MiB (two 40 GB cards),
#: ``8x-RTX_4090`` 196512 MiB (eight 24 GB cards).
_MEMORY = SkyPilotMemory.MIB_ALL_GPUS

PROVIDER = Provider(
    id="vast",
    name="Vast.ai",
    words=("vast.ai", "vastai", "vast"),
    catalogs=MappingProxyType({SKYPILOT: ("vast",), GPUHUNT: ("vastai",)}),
    billing=BillingRule(
        provider="vast",
        granularity_s=1,  # per-second billing of rented machines
        minimum_s=0,
        spot_available=True,  # interruptible bids
        per_gpu_pricing=True,
        spot_interruptions_per_hour=MARKET_SPOT_PER_HOUR,
        checkpoint_write_gb_per_s=0.5,  # host-dependent local disk (ours)
        storage_usd_per_gb_month=0.10,
        source="vast.ai/pricing (per-second billing, interruptible instances)",
        as_of=date(2026, 11, 20),
    ),
    spot=SpotTerms(model=SpotModel.MARKET),
    skypilot_cloud="vast",
    skypilot_memory=_MEMORY,
)
