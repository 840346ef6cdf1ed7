"""Google Cloud (GCE): billing, spot terms, GPUDirect fabrics, SkyPilot's ``gcp``."""

from __future__ import annotations

from datetime import date
from types import MappingProxyType

from recommender.pricing.billing_rules import BAND_SPOT_PER_HOUR, MINUTE_S, BillingRule
from recommender.pricing.offers import Fabric
from recommender.pricing.spot import SpotModel, SpotTerms
from recommender.providers.base import GPUHUNT, SKYPILOT, Provider

__all__ = ["PROVIDER"]

#: GPUDirect-TCPX (a3-high, 4x200), -TCPXO (a3-mega, 8x200), RDMA over RoCE (a3-ultra, a4:
#: 8x400); source: cloud.google.com/compute/docs/gpus#a3-series and #a4-series. The a2 8/16-GPU
#: VMs have plain VPC networking at 100 Gbit/s (cloud.google.com/compute/docs/gpus#a2-vms,
#: "maximum network bandwidth").
_FABRICS = MappingProxyType(
    {
        "a3-highgpu-8g": (Fabric.ROCE, 800.0),
        "a3-megagpu-8g": (Fabric.ROCE, 1600.0),
        "a3-ultragpu-8g": (Fabric.ROCE, 3200.0),
        "a4-highgpu-8g": (Fabric.ROCE, 3200.0),
        "a2-highgpu-8g": (Fabric.ETHERNET, 100.0),
        "a2-megagpu-16g": (Fabric.ETHERNET, 100.0),
        "a2-ultragpu-8g": (Fabric.ETHERNET, 100.0),
    }
)

PROVIDER = Provider(
    id="gcp",
    name="GCP",
    words=("gcp", "google cloud", "google", "gce"),
    catalogs=MappingProxyType({SKYPILOT: ("gcp",), GPUHUNT: ("gcp",)}),
    billing=BillingRule(
        provider="gcp",
        granularity_s=1,  # "billed in one-second increments"
        minimum_s=MINUTE_S,  # "with a one-minute minimum"
        spot_available=True,
        per_gpu_pricing=True,  # GPUs are priced per accelerator on top of the host VM
        spot_interruptions_per_hour=BAND_SPOT_PER_HOUR,
        checkpoint_write_gb_per_s=1.2,  # pd-balanced/hyperdisk per-VM write ceiling (ours)
        storage_usd_per_gb_month=0.020,  # Cloud Storage Standard, us-central1
        source="cloud.google.com/compute/vm-instance-pricing (1 s increments, 1 min min.)",
        as_of=date(2026, 11, 20),
    ),
    spot=SpotTerms(
        model=SpotModel.BAND,
        # GCP publishes no rate for GPU VMs ("You can't view the preemption rate ... for N1
        # machine types that have GPUs attached"); the class band is a proxy.
        label="ours: GCP (no published GPU rate), as an AWS-style",
        # "30 seconds between GCE ACPI G2 Soft Off and ACPI G3 Mechanical Off ... for Spot VMs"
        notice_s=30,
        notice_source="Compute Engine API v1, Scheduling.skipGuestOsShutdown; "
        "cloud.google.com/compute/docs/instances/spot (preemption process)",
    ),
    fabrics=_FABRICS,
    network_tier="GPUDirect-TCPX (A3 VMs)",
    network_note=(
        " on A3 VMs (`a3-highgpu-8g`, `a3-edgegpu-8g`); see SkyPilot's "
        "`examples/gcp_gpu_direct_tcpx` for the NCCL settings it documents."
    ),
    skypilot_cloud="gcp",
)
