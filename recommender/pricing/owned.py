"""Hardware the team already owns ("we already have 4x A100", "我们已经有8张H100"): one
offer at $0 rental, metered per second with nothing to store in a cloud, so the answer is
the time the job takes on it (:mod:`recommender.ranking.objective`)."""

from __future__ import annotations

from datetime import date

from recommender.estimation.strategies import MAX_GPUS_PER_NODE
from recommender.gpus import get_gpu
from recommender.pricing.billing import BillingRule
from recommender.pricing.offers import OWNED_PROVIDER, Fabric, Offer
from recommender.workload import HardwareRequest

__all__ = ["OWNED_PROVIDER", "OWNED_RULE", "owned_offer"]

#: No rental to meter: every second is free, checkpoints stay on the team's own storage.
OWNED_RULE = BillingRule(
    provider=OWNED_PROVIDER,
    granularity_s=1,
    minimum_s=0,
    spot_available=False,
    per_gpu_pricing=False,
    spot_interruptions_per_hour=0.0,
    # Checkpoint writes to local NVMe: ~2 GB/s per node (ours: one PCIe 4 NVMe drive).
    checkpoint_write_gb_per_s=2.0,
    storage_usd_per_gb_month=0.0,
    source="your own hardware: no rental",
    as_of=date(2026, 12, 1),
)


def owned_offer(hardware: HardwareRequest) -> Offer:
    """The team's GPUs as one offer: up to 8 to a node (an HGX board), more in the largest
    node of at most 8 that divides them, which a cluster the team runs joins over
    InfiniBand (assumed, and said in the answer)."""
    if hardware.gpu_id is None or hardware.count is None:
        raise ValueError("owned hardware names a GPU and a count")
    gpu = get_gpu(hardware.gpu_id)
    count = hardware.count
    per_node = max(d for d in range(1, MAX_GPUS_PER_NODE + 1) if count % d == 0)
    return Offer(
        provider=OWNED_PROVIDER,
        instance_type=f"your {hardware.count}× {gpu.name}",
        gpu_id=gpu.id,
        gpu_count=per_node,
        price_usd_per_hour=0.0,
        spot=False,
        region="your site",
        fabric=Fabric.INFINIBAND if count > per_node else Fabric.NONE,
    )
