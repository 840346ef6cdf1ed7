"""Inter-node fabric per instance type: what the CSV catalogs do not say about networking.

Neither SkyPilot's ``vms.csv`` nor gpuhunt's catalog states how instances are networked, so
the SkyPilot and gpuhunt adapters both look it up here (:func:`fabric_for`); each figure
names its source.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from recommender.pricing.offers import Fabric

__all__ = ["FABRICS", "fabric_for"]

#: Inter-node fabric per instance type (total Gbit/s per instance).
FABRICS: Mapping[tuple[str, str], tuple[Fabric, float | None]] = {
    # AWS: EFA bandwidth per instance; source: aws.amazon.com/ec2/instance-types/p3, /p4, /p5,
    # /p6 ("Network bandwidth", "EFA"): p3dn 100, p4d/p4de 400 (4x100), p5/p5e/p5en 3200,
    # p6-b200 3200 (EFAv4), p6-b300 6400 Gbit/s.
    ("aws", "p3dn.24xlarge"): (Fabric.EFA, 100.0),
    ("aws", "p4d.24xlarge"): (Fabric.EFA, 400.0),
    ("aws", "p4de.24xlarge"): (Fabric.EFA, 400.0),
    ("aws", "p5.48xlarge"): (Fabric.EFA, 3200.0),
    ("aws", "p5e.48xlarge"): (Fabric.EFA, 3200.0),
    ("aws", "p5en.48xlarge"): (Fabric.EFA, 3200.0),
    ("aws", "p6-b200.48xlarge"): (Fabric.EFA, 3200.0),
    ("aws", "p6-b300.48xlarge"): (Fabric.EFA, 6400.0),
    # AWS p3.16xlarge: 25 Gbit/s ENA, no EFA; source: aws.amazon.com/ec2/instance-types/p3.
    ("aws", "p3.16xlarge"): (Fabric.ETHERNET, 25.0),
    # GCP: GPUDirect-TCPX (a3-high, 4x200), -TCPXO (a3-mega, 8x200), RDMA over RoCE (a3-ultra,
    # a4: 8x400); source: cloud.google.com/compute/docs/gpus#a3-series and #a4-series.
    ("gcp", "a3-highgpu-8g"): (Fabric.ROCE, 800.0),
    ("gcp", "a3-megagpu-8g"): (Fabric.ROCE, 1600.0),
    ("gcp", "a3-ultragpu-8g"): (Fabric.ROCE, 3200.0),
    ("gcp", "a4-highgpu-8g"): (Fabric.ROCE, 3200.0),
    # GCP a2 8/16-GPU: plain VPC networking, 100 Gbit/s; source: cloud.google.com/compute/docs/
    # gpus#a2-vms ("maximum network bandwidth").
    ("gcp", "a2-highgpu-8g"): (Fabric.ETHERNET, 100.0),
    ("gcp", "a2-megagpu-16g"): (Fabric.ETHERNET, 100.0),
    ("gcp", "a2-ultragpu-8g"): (Fabric.ETHERNET, 100.0),
    # Azure ND series: InfiniBand between VMs of one scale set, GPUDirect RDMA; source:
    # MicrosoftDocs/azure-docs articles/virtual-machines/sizes/gpu-accelerated/includes
    # nd-a100-v4- and ndm-a100-v4-series-summary (one 200 Gb/s HDR link per GPU, 1.6 Tb/s a
    # VM), nd-h100-v5-series-summary (400 Gb/s NDR per GPU, 3.2 Tb/s), ndv2-series-summary
    # (100 Gb/s EDR).
    ("azure", "Standard_ND96asr_v4"): (Fabric.INFINIBAND, 1600.0),
    ("azure", "Standard_ND96amsr_A100_v4"): (Fabric.INFINIBAND, 1600.0),
    ("azure", "Standard_ND96isr_H100_v5"): (Fabric.INFINIBAND, 3200.0),
    ("azure", "Standard_ND40rs_v2"): (Fabric.INFINIBAND, 100.0),
}

#: Nebius 8-GPU H100/H200/B200 VMs join InfiniBand GPU clusters at 8x400 Gbit/s; source:
#: docs.nebius.com/compute/clusters/gpu ("InfiniBand ... 3.2 Tbit/s per VM").
_NEBIUS_IB = re.compile(r"^gpu-(h100|h200|b200)-sxm_8gpu-")
_NEBIUS_IB_GBPS = 3200.0

#: Lambda on-demand instances network over Ethernet; its InfiniBand is sold only as
#: "1-Click Clusters", not these instance types; source: docs.lambda.ai/public-cloud/on-demand.
_LAMBDA_MULTI_GPU = re.compile(r"^gpu_8x_")


def fabric_for(cloud: str, instance_type: str, gpu_count: int) -> tuple[Fabric, float | None]:
    """The inter-node fabric (and Gbit/s) of a known instance type; ``NONE`` otherwise."""
    known = FABRICS.get((cloud, instance_type))
    if known is not None:
        return known
    if cloud == "nebius" and _NEBIUS_IB.match(instance_type):
        return Fabric.INFINIBAND, _NEBIUS_IB_GBPS
    if cloud == "lambda" and _LAMBDA_MULTI_GPU.match(instance_type) and gpu_count >= 8:
        return Fabric.ETHERNET, None
    return Fabric.NONE, None
