"""IBM Cloud (VPC virtual servers): billing, SkyPilot's ``ibm``."""

from __future__ import annotations

from datetime import date
from types import MappingProxyType

from recommender.pricing.billing_rules import MINUTE_S, BillingRule
from recommender.providers.base import SKYPILOT, Provider

__all__ = ["PROVIDER"]

PROVIDER = Provider(
    id="ibm",
    name="IBM Cloud",
    words=("ibm cloud", "ibm"),
    catalogs=MappingProxyType({SKYPILOT: ("ibm",)}),
    billing=BillingRule(
        provider="ibm",
        granularity_s=1,  # VPC virtual servers are billed per second
        minimum_s=MINUTE_S,  # "with a one-minute minimum"
        spot_available=False,  # no spot VPC GPU profiles in SkyPilot's catalog
        per_gpu_pricing=False,
        spot_interruptions_per_hour=0.0,
        checkpoint_write_gb_per_s=0.5,  # VPC block storage profiles (ours)
        storage_usd_per_gb_month=0.022,  # Cloud Object Storage Standard, regional
        source="cloud.ibm.com/docs/vpc?topic=vpc-vsi-billing (per second, 1 min minimum)",
        as_of=date(2026, 11, 20),
    ),
    skypilot_cloud="ibm",
)
