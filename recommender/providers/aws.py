"""AWS (EC2): billing, Spot Instance Advisor bands, EFA fabrics, SkyPilot's ``aws``."""

from __future__ import annotations

import re
from datetime import date
from types import MappingProxyType

from recommender.pricing.billing_rules import BAND_SPOT_PER_HOUR, MINUTE_S, BillingRule
from recommender.pricing.offers import Fabric
from recommender.pricing.spot import SpotModel, SpotTerms
from recommender.providers.base import GPUHUNT, SKYPILOT, Provider, QuotaFamily, ZoneKind

__all__ = ["PROVIDER"]

#: AWS Spot Instance Advisor band of the instance family carrying each GPU. Ours: typical
#: readings of the advisor for us-east-1/us-west-2, not a live value (the feed
#: spot-bid-advisor.s3.amazonaws.com/spot-advisor-data.json should override them).
_BAND_BY_GPU = MappingProxyType(
    {
        "H100-SXM-80GB": ">20%",  # p5
        "H200-SXM-141GB": ">20%",  # p5e / p5en
        "B200-180GB": ">20%",  # p6-b200
        "B300-288GB": ">20%",  # p6-b300
        "A100-SXM-80GB": ">20%",  # p4de
        "A100-SXM-40GB": ">20%",  # p4d
        "V100-SXM-16GB": "10-15%",  # p3
        "V100-SXM-32GB": "10-15%",  # p3dn
        "L40S": "5-10%",  # g6e
        "L4": "5-10%",  # g6
        "A10G": "5-10%",  # g5
        "T4": "<5%",  # g4dn
    }
)

#: EFA bandwidth per instance; source: aws.amazon.com/ec2/instance-types/p3, /p4, /p5, /p6
#: ("Network bandwidth", "EFA"): p3dn 100, p4d/p4de 400 (4x100), p5/p5e/p5en 3200, p6-b200
#: 3200 (EFAv4), p6-b300 6400 Gbit/s. p3.16xlarge: 25 Gbit/s ENA, no EFA (same source).
#: Opt-in zones: Local Zones (names like us-west-2-lax-1a, zone IDs like usw2-lax1-az1, the
#: IDs being what SkyPilot's catalog lists, e.g. use1-atl2-az1) and Wavelength Zones (names
#: like us-east-1-wl1-bos-wlz-1, IDs like use1-wl1-bos-wlz1); sources:
#: docs.aws.amazon.com/local-zones/latest/ug/getting-started.html ("opt in"),
#: docs.aws.amazon.com/wavelength/latest/developerguide/get-started-wavelength.html,
#: docs.aws.amazon.com/ram/latest/userguide/working-with-az-ids.html (zone IDs).
_OPT_IN_ZONES = (
    ZoneKind(re.compile(r"-wl\d+-"), "Wavelength"),
    ZoneKind(
        re.compile(
            r"^(?:[a-z]{2}(?:-gov)?-[a-z]+-\d+-[a-z]{3}-\d+[a-z]|[a-z]+\d+-[a-z]{3}\d+-az\d+)$"
        ),
        "Local",
    ),
)

#: On-demand P instances need the "Running On-Demand P instances" vCPU quota raised (its
#: default is far below one such instance) or an EC2 Capacity Block; sources:
#: docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-resource-limits.html,
#: docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-capacity-blocks.html
_P_FAMILY = QuotaFamily(
    re.compile(r"^p(?:4d|4de|5|5e|5en|6[a-z0-9-]*)\."),
    "a raised 'Running On-Demand P instances' vCPU quota or an EC2 Capacity Block",
)

_FABRICS = MappingProxyType(
    {
        "p3dn.24xlarge": (Fabric.EFA, 100.0),
        "p4d.24xlarge": (Fabric.EFA, 400.0),
        "p4de.24xlarge": (Fabric.EFA, 400.0),
        "p5.48xlarge": (Fabric.EFA, 3200.0),
        "p5e.48xlarge": (Fabric.EFA, 3200.0),
        "p5en.48xlarge": (Fabric.EFA, 3200.0),
        "p6-b200.48xlarge": (Fabric.EFA, 3200.0),
        "p6-b300.48xlarge": (Fabric.EFA, 6400.0),
        "p3.16xlarge": (Fabric.ETHERNET, 25.0),
    }
)

PROVIDER = Provider(
    id="aws",
    name="AWS",
    words=("aws", "amazon", "ec2"),
    catalogs=MappingProxyType({SKYPILOT: ("aws",), GPUHUNT: ("aws",)}),
    billing=BillingRule(
        provider="aws",
        granularity_s=1,  # per-second billing for Linux On-Demand and Spot
        minimum_s=MINUTE_S,  # "minimum of 60 seconds"
        spot_available=True,
        per_gpu_pricing=False,
        spot_interruptions_per_hour=BAND_SPOT_PER_HOUR,
        checkpoint_write_gb_per_s=1.0,  # EBS gp3 max 1,000 MB/s per volume (AWS EBS docs)
        storage_usd_per_gb_month=0.023,  # S3 Standard, first 50 TB, us-east-1
        source="aws.amazon.com/ec2/pricing/on-demand (per-second billing, 60 s minimum)",
        as_of=date(2026, 11, 20),
    ),
    spot=SpotTerms(
        model=SpotModel.BAND,
        label="AWS Spot Instance Advisor",
        band_by_gpu=_BAND_BY_GPU,
        class_label="ours: AWS-style",
        notice_s=120,  # "a Spot Instance interruption notice ... two minutes before"
        notice_source="docs.aws.amazon.com/AWSEC2/latest/UserGuide/spot-instance-termination-notices.html",
    ),
    fabrics=_FABRICS,
    opt_in_zones=_OPT_IN_ZONES,
    quota_families=(_P_FAMILY,),
    network_tier="EFA (Elastic Fabric Adapter)",
    network_note=(
        " on AWS VMs (a Deep Learning AMI with the EFA drivers). An instance with several "
        "EFA interfaces (p4d: 4, p5: 32) uses them all only with `aws: use_internal_ips: "
        "true` (and `use_ssm: true` or an `ssh_proxy_command`) in `~/.sky/config.yaml`."
    ),
    skypilot_cloud="aws",
)
