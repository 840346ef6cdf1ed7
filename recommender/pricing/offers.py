"""Price offers and where they came from.

An :class:`Offer` is one rentable shape at one price: a provider's instance type with its GPUs,
in one region (and zone, where priced per zone), on-demand or spot. Prices are for the whole
instance per hour; :attr:`Offer.price_usd_per_gpu_hour` divides by the GPU count.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum

from recommender.gpus import IntraNode, get_gpu
from recommender.pricing.availability import Listing

__all__ = [
    "MAX_OFFER_USD_PER_HOUR",
    "OWNED_PROVIDER",
    "Fabric",
    "Offer",
    "SourceInfo",
    "offers_for_key",
]


#: Highest believable whole-instance price, USD/h; why: far above any real GPU instance (the
#: 8-GPU flagships are ~100 USD/h), low enough to catch unit errors and sentinel values.
MAX_OFFER_USD_PER_HOUR = 10_000
#: The provider id of hardware the team already owns ("we already have 4x A100"): offered at
#: $0 rental (:mod:`recommender.pricing.owned`).
OWNED_PROVIDER = "owned"


class Fabric(StrEnum):
    """The network between nodes of a multi-node cluster."""

    INFINIBAND = "infiniband"
    EFA = "efa"  # AWS Elastic Fabric Adapter
    ROCE = "roce"  # RDMA over Converged Ethernet (also GCP GPUDirect-TCPX/RDMA)
    ETHERNET = "ethernet"  # plain TCP: multi-node sharding is impractical
    NONE = "none"  # single-node offer; no cluster networking

    @property
    def fast(self) -> bool:
        return self in (Fabric.INFINIBAND, Fabric.EFA, Fabric.ROCE)


@dataclass(frozen=True, slots=True)
class Offer:
    """One priced instance shape."""

    provider: str
    instance_type: str
    gpu_id: str
    gpu_count: int
    price_usd_per_hour: float
    spot: bool
    region: str
    zone: str = ""
    gpu_memory_gib: float | None = None
    vcpus: float | None = None
    ram_gib: float | None = None
    #: GPU-to-GPU path inside the instance; ``None`` takes the GPU model's default.
    intra_node: IntraNode | None = None
    fabric: Fabric = Fabric.NONE
    fabric_gbps: float | None = None
    #: Name of the price source (feed) this offer came from; matches a ``SourceInfo.name``.
    source: str = ""
    #: Where the price itself was read (a pricing page, a catalog file), when the feed says.
    citation: str = ""

    def __post_init__(self) -> None:
        if self.gpu_count < 1:
            raise ValueError("an offer has at least one GPU")
        free = self.provider == OWNED_PROVIDER and self.price_usd_per_hour == 0
        if not (free or 0 < self.price_usd_per_hour < MAX_OFFER_USD_PER_HOUR):
            raise ValueError(f"implausible price {self.price_usd_per_hour!r} USD/h")
        if not self.provider or not self.instance_type:
            raise ValueError("an offer names its provider and instance type")

    def priced(self, price_usd_per_hour: float, spot: bool, region: str, zone: str) -> Offer:
        """This offer's instance shape at another price, kind (spot or not) and place."""
        return replace(
            self, price_usd_per_hour=price_usd_per_hour, spot=spot, region=region, zone=zone
        )

    @property
    def kind(self) -> str:
        """How it is rented, in words: ``spot``, ``on-demand``, or ``owned`` (the team's own)."""
        if self.provider == OWNED_PROVIDER:
            return "owned"
        return "spot" if self.spot else "on-demand"

    @property
    def price_usd_per_gpu_hour(self) -> float:
        return self.price_usd_per_hour / self.gpu_count

    @property
    def link(self) -> IntraNode:
        """The effective GPU-to-GPU path inside this instance."""
        if self.intra_node is not None:
            return self.intra_node
        return get_gpu(self.gpu_id).intra_node

    @property
    def memory_gib_per_gpu(self) -> float:
        if self.gpu_memory_gib is not None:
            return self.gpu_memory_gib
        return get_gpu(self.gpu_id).memory_gib

    @property
    def key(self) -> str:
        """Stable identity of the offer (price history, caveats, watches, dedupe):
        ``provider/instance type/GPUs/region/zone/od|spot``, such as
        ``gcp/n1-highmem-8/1xT4/us-central1/us-central1-a/od``.

        The GPUs are part of it because the instance type alone does not name them: one GCP
        N1 host type carries T4, V100, P100 or P4 GPUs, one, two, four or eight of them
        (cloud.google.com/compute/docs/gpus#n1-gpus), and each pairing is its own offer.
        """
        return self.identity()

    @property
    def legacy_key(self) -> str:
        """The key earlier versions gave this offer, without the GPUs
        (``provider/instance type/region/zone/od|spot``). Read only to carry over what they
        stored (price history, buttons of answers they posted); several offers can share one.
        """
        return self.identity(gpus=False)

    def identity(self, *, zone: bool = True, gpus: bool = True) -> str:
        """The offer's key (:attr:`key`), or the key without the zone (the listing shape,
        :func:`recommender.pricing.availability.listing_key`) or without the GPUs (the format of
        earlier versions, :attr:`legacy_key`)."""
        kind = "spot" if self.spot else "od"
        place = f"{self.region}/{self.zone}" if zone else self.region
        if gpus:
            gpu = f"{self.gpu_count}x{self.gpu_id}"
            return f"{self.provider}/{self.instance_type}/{gpu}/{place}/{kind}"
        return f"{self.provider}/{self.instance_type}/{place}/{kind}"


def offers_for_key(key: str, offers: Iterable[Offer]) -> tuple[Offer, ...]:
    """The offers ``key`` names: the offer whose :attr:`Offer.key` it is or, for a key an
    earlier version wrote (:attr:`Offer.legacy_key`, no GPUs in it), every offer it may have
    named: one, or several where one instance type carries several GPU models."""
    listed = tuple(offers)
    exact = tuple(o for o in listed if o.key == key)
    return exact or tuple(o for o in listed if o.legacy_key == key)


@dataclass(frozen=True, slots=True)
class SourceInfo:
    """Where a set of offers came from and how fresh it is."""

    name: str
    #: When the provider's prices were collected (the snapshot's as-of time).
    as_of: datetime
    #: When gpufit last fetched it successfully (``None`` for bundled data).
    fetched_at: datetime | None = None
    rows: int = 0
    rejected: int = 0
    #: Why rows were rejected, as the adapter said ("vast row 22: GPU memory …"), the first
    #: few per catalog file; ``gpufit prices`` shows them.
    rejections: tuple[str, ...] = ()
    #: Set when the latest refresh failed and this is the last good copy.
    error: str | None = None
    bundled: bool = False
    #: The source's refreshes this last week or so, oldest first
    #: (:mod:`recommender.pricing.availability`); empty when none are recorded (the bundled
    #: snapshot, a file read directly).
    listings: tuple[Listing, ...] = ()

    def age_hours(self, now: datetime) -> float:
        return max(0.0, (now - self.as_of).total_seconds() / 3600)
