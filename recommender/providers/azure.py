"""Microsoft Azure: billing, spot eviction terms, ND-series InfiniBand, SkyPilot's ``azure``."""

from __future__ import annotations

from datetime import date
from types import MappingProxyType

from recommender.pricing.billing_rules import BAND_SPOT_PER_HOUR, MINUTE_S, BillingRule
from recommender.pricing.offers import Fabric
from recommender.pricing.spot import SpotModel, SpotTerms
from recommender.providers.base import GPUHUNT, SKYPILOT, Provider

__all__ = ["PROVIDER"]

#: ND series: InfiniBand between VMs of one scale set, GPUDirect RDMA; source:
#: MicrosoftDocs/azure-docs articles/virtual-machines/sizes/gpu-accelerated/includes
#: nd-a100-v4- and ndm-a100-v4-series-summary (one 200 Gb/s HDR link per GPU, 1.6 Tb/s a VM),
#: nd-h100-v5-series-summary (400 Gb/s NDR per GPU, 3.2 Tb/s), ndv2-series-summary (100 Gb/s
#: EDR).
_FABRICS = MappingProxyType(
    {
        "Standard_ND96asr_v4": (Fabric.INFINIBAND, 1600.0),
        "Standard_ND96amsr_A100_v4": (Fabric.INFINIBAND, 1600.0),
        "Standard_ND96isr_H100_v5": (Fabric.INFINIBAND, 3200.0),
        "Standard_ND40rs_v2": (Fabric.INFINIBAND, 100.0),
    }
)

PROVIDER = Provider(
    id="azure",
    name="Azure",
    words=("azure",),
    catalogs=MappingProxyType({SKYPILOT: ("azure",), GPUHUNT: ("azure",)}),
    billing=BillingRule(
        provider="azure",
        granularity_s=MINUTE_S,  # VMs are metered per minute of use
        minimum_s=MINUTE_S,
        spot_available=True,
        per_gpu_pricing=False,
        spot_interruptions_per_hour=BAND_SPOT_PER_HOUR,
        checkpoint_write_gb_per_s=1.0,  # Premium SSD v2 per-disk throughput class (ours)
        storage_usd_per_gb_month=0.018,  # Blob hot LRS
        source="azure.microsoft.com/pricing/details/virtual-machines (per-minute metering)",
        as_of=date(2026, 11, 20),
    ),
    spot=SpotTerms(
        model=SpotModel.BAND,
        # Azure publishes per-size bands (portal, Resource Graph) but only as live data.
        label="ours: Azure eviction-rate",
        notice_s=30,  # Scheduled Events: "you will have 30 seconds to finish any jobs"
        notice_source="learn.microsoft.com/azure/virtual-machines/spot-vms",
    ),
    fabrics=_FABRICS,
    skypilot_cloud="azure",
)
