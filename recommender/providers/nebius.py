"""Nebius: billing, preemptible VMs, InfiniBand GPU clusters, SkyPilot's ``nebius``."""

from __future__ import annotations

import re
from datetime import date
from types import MappingProxyType

from recommender.pricing.billing_rules import BAND_SPOT_PER_HOUR, BillingRule
from recommender.pricing.offers import Fabric
from recommender.pricing.spot import SpotModel, SpotTerms
from recommender.providers.base import GPUHUNT, SKYPILOT, FabricPattern, Provider

__all__ = ["PROVIDER"]

#: 8-GPU H100/H200/B200 VMs join InfiniBand GPU clusters at 8x400 Gbit/s; source:
#: docs.nebius.com/compute/clusters/gpu ("InfiniBand ... 3.2 Tbit/s per VM").
_IB = FabricPattern(re.compile(r"^gpu-(h100|h200|b200)-sxm_8gpu-"), Fabric.INFINIBAND, 3200.0)

PROVIDER = Provider(
    id="nebius",
    name="Nebius",
    words=("nebius",),
    catalogs=MappingProxyType({SKYPILOT: ("nebius",), GPUHUNT: ("nebius",)}),
    billing=BillingRule(
        provider="nebius",
        granularity_s=1,  # usage is metered per second
        minimum_s=0,
        spot_available=True,  # "preemptible" VMs
        per_gpu_pricing=True,
        spot_interruptions_per_hour=BAND_SPOT_PER_HOUR,  # ours: like other clouds' spot
        checkpoint_write_gb_per_s=1.0,  # network SSD (ours)
        storage_usd_per_gb_month=0.015,  # object storage standard
        source="nebius.com/prices (per-second metering, preemptible VMs)",
        as_of=date(2026, 11, 20),
    ),
    spot=SpotTerms(
        model=SpotModel.BAND, label="ours: Nebius preemptible (no published rate), as an AWS-style"
    ),
    fabric_patterns=(_IB,),
    network_tier="InfiniBand",
    network_note=" on Nebius (VMs or its Kubernetes clusters).",
    skypilot_cloud="nebius",
)
