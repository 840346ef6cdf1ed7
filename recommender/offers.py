"""Price offers and the catalog they form.

An :class:`Offer` is one rentable shape at one price: a provider's instance type with its GPUs,
in one region (and zone, where priced per zone), on-demand or spot. Prices are for the whole
instance per hour; :attr:`Offer.price_usd_per_gpu_hour` divides by the GPU count.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from enum import StrEnum
from typing import Any

from recommender.catalog_index import CatalogIndex, build_index
from recommender.gpus import IntraNode, get_gpu

__all__ = [
    "MAX_OFFER_USD_PER_HOUR",
    "Catalog",
    "Fabric",
    "Offer",
    "SourceInfo",
]


#: Highest believable whole-instance price, USD/h; why: far above any real GPU instance (the
#: 8-GPU flagships are ~100 USD/h), low enough to catch unit errors and sentinel values.
MAX_OFFER_USD_PER_HOUR = 10_000


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
        if not 0 < self.price_usd_per_hour < MAX_OFFER_USD_PER_HOUR:
            raise ValueError(f"implausible price {self.price_usd_per_hour!r} USD/h")
        if not self.provider or not self.instance_type:
            raise ValueError("an offer names its provider and instance type")

    def priced(self, price_usd_per_hour: float, spot: bool, region: str, zone: str) -> Offer:
        """This offer's instance shape at another price, kind (spot or not) and place.

        Equal to ``dataclasses.replace(self, price_usd_per_hour=..., spot=..., region=...,
        zone=...)``, price check included, in about a sixth of the time: for feed adapters
        that build thousands of offers of a few dozen instance shapes.
        """
        if type(self) is not Offer:  # a subclass may add fields or checks: the general way
            return replace(
                self, price_usd_per_hour=price_usd_per_hour, spot=spot, region=region, zone=zone
            )
        if not 0 < price_usd_per_hour < MAX_OFFER_USD_PER_HOUR:
            raise ValueError(f"implausible price {price_usd_per_hour!r} USD/h")
        # Any: mypy sees the frozen Offer's fields as read-only; the draft's are not.
        offer: Any = object.__new__(_OfferDraft)
        offer.provider = self.provider
        offer.instance_type = self.instance_type
        offer.gpu_id = self.gpu_id
        offer.gpu_count = self.gpu_count
        offer.price_usd_per_hour = price_usd_per_hour
        offer.spot = spot
        offer.region = region
        offer.zone = zone
        offer.gpu_memory_gib = self.gpu_memory_gib
        offer.vcpus = self.vcpus
        offer.ram_gib = self.ram_gib
        offer.intra_node = self.intra_node
        offer.fabric = self.fabric
        offer.fabric_gbps = self.fabric_gbps
        offer.source = self.source
        offer.citation = self.citation
        offer.__class__ = Offer  # now frozen (see _OfferDraft)
        done: Offer = offer  # (typing.cast would cost a call per offer)
        return done

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
        """Stable identity of the offer (for history, watches and dedupe)."""
        kind = "spot" if self.spot else "od"
        return f"{self.provider}/{self.instance_type}/{self.region}/{self.zone}/{kind}"


class _OfferDraft(Offer):
    """An :class:`Offer` while :meth:`Offer.priced` fills it in; it never leaves that method.

    A frozen dataclass blocks attribute writes with a Python ``__setattr__``, so its
    ``__init__`` stores each of the 16 fields through ``object.__setattr__`` (~2.4 µs an
    offer in CPython 3.11). This subclass adds no slots and restores object's own setters,
    so plain slot stores apply (~0.3 µs in all); the finished object then becomes an
    ``Offer`` by ``__class__`` assignment, which Python allows between classes of the same
    layout. Equality, hashing and ``repr`` see an ordinary ``Offer``.
    """

    __slots__ = ()
    __setattr__ = object.__setattr__
    __delattr__ = object.__delattr__


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
    #: Set when the latest refresh failed and this is the last good copy.
    error: str | None = None
    bundled: bool = False

    def age_hours(self, now: datetime) -> float:
        return max(0.0, (now - self.as_of).total_seconds() / 3600)


@dataclass(frozen=True, slots=True)
class Catalog:
    """All offers gpufit knows of, with their provenance."""

    offers: tuple[Offer, ...]
    sources: tuple[SourceInfo, ...] = field(default=())
    #: The offers grouped for pricing, built on first use (see :attr:`index`).
    _index: CatalogIndex | None = field(default=None, init=False, repr=False, compare=False)

    @classmethod
    def of(cls, offers: Iterable[Offer], sources: Sequence[SourceInfo] = ()) -> Catalog:
        return cls(tuple(offers), tuple(sources))

    def __len__(self) -> int:
        return len(self.offers)

    def merged(self, other: Catalog) -> Catalog:
        return Catalog(self.offers + other.offers, self.sources + other.sources)

    @property
    def oldest_as_of(self) -> datetime | None:
        return min((s.as_of for s in self.sources), default=None)

    @property
    def indexed(self) -> bool:
        """Whether :attr:`index` is built already and groups the offers: then a question's
        work no longer grows with the number of offers (milliseconds at most), where the
        first question builds the index (seconds at 200k offers) and an ungroupable catalog
        is scanned offer by offer."""
        index = self._index
        return index is not None and index.groups is not None

    @property
    def index(self) -> CatalogIndex:
        """The offers grouped for pricing and the GPU types sold
        (:mod:`recommender.catalog_index`): built on the first question about this catalog
        and kept as long as the catalog is, since it depends on no workload."""
        index = self._index
        if index is None:
            index = build_index(self.offers)
            # A memo of a value derived from immutable fields, not a change of the catalog:
            # the dataclass is frozen, so set the slot directly.
            object.__setattr__(self, "_index", index)
        return index
