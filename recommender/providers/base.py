"""What gpufit knows about one cloud, as one record: :class:`Provider`.

Each cloud has its own module in this package holding its record: its names in price
catalogs and in questions, its billing rule (with sources), its spot terms, the fabric of its
instance types, and how SkyPilot launches on it. The registry (``recommender.providers``)
gathers them; the rest of gpufit reads the registry and keeps no per-cloud table of its own.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType

from recommender.pricing.billing_rules import BillingRule, unknown_rule
from recommender.pricing.offers import Fabric
from recommender.pricing.spot import SpotTerms

__all__ = [
    "GPUHUNT",
    "SKYPILOT",
    "FabricPattern",
    "Provider",
    "QuotaFamily",
    "SkyPilotMemory",
    "ZoneKind",
    "unknown_provider",
]

#: The price catalogs gpufit reads, by the name :attr:`Provider.catalogs` keys them with.
SKYPILOT = "skypilot"  # github.com/skypilot-org/skypilot-catalog, catalogs/v<N>/<cloud>/vms.csv
GPUHUNT = "gpuhunt"  # github.com/dstackai/gpuhunt, one <provider>.csv per provider


class SkyPilotMemory(StrEnum):
    """What ``MemoryInfo.SizeInMiB`` in a cloud's SkyPilot ``vms.csv`` holds."""

    MIB_PER_GPU = "MiB per GPU"  # what the column's name says; most clouds
    GB_PER_GPU = "GB per GPU"
    MIB_ALL_GPUS = "MiB over all the machine's GPUs"


@dataclass(frozen=True, slots=True)
class FabricPattern:
    """Instance types whose name matches ``pattern`` (with at least ``min_gpus`` GPUs) are
    networked over ``fabric`` at ``gbps`` Gbit/s per instance (``None``: not published)."""

    pattern: re.Pattern[str]
    fabric: Fabric
    gbps: float | None
    min_gpus: int = 1


@dataclass(frozen=True, slots=True)
class ZoneKind:
    """Zones whose name or zone ID matches ``pattern`` are opt-in zones of this kind (an
    account must opt in before launching there)."""

    pattern: re.Pattern[str]
    kind: str  # "Local", "Wavelength"


@dataclass(frozen=True, slots=True)
class QuotaFamily:
    """On-demand instance types matching ``pattern`` need what ``needs`` says first (a quota
    raise, a capacity reservation)."""

    pattern: re.Pattern[str]
    needs: str


@dataclass(frozen=True, slots=True)
class Provider:
    """One cloud: everything gpufit knows about it."""

    #: gpufit's id: what offers, billing and the filters say (``do`` for DigitalOcean).
    id: str
    #: How answers and the launch README name it.
    name: str
    #: Spellings that name it in a question, lower case ("digital ocean", "vast.ai"); a
    #: spelling that is also a common word ("do") is left out.
    words: tuple[str, ...]
    #: Each catalog's names for it (:data:`SKYPILOT`, :data:`GPUHUNT`); absent: not listed.
    catalogs: Mapping[str, tuple[str, ...]]
    #: How it meters time, its minimum charge and storage, with sources.
    billing: BillingRule
    #: How its spot is reclaimed, and with what notice.
    spot: SpotTerms = field(default_factory=SpotTerms)
    #: Inter-node fabric per instance type (total Gbit/s per instance): the CSV catalogs do
    #: not say how instances are networked.
    fabrics: Mapping[str, tuple[Fabric, float | None]] = field(
        default_factory=lambda: MappingProxyType({})
    )
    #: Fabrics of instance-type families, tried after :attr:`fabrics`.
    fabric_patterns: tuple[FabricPattern, ...] = ()
    #: What its SkyPilot catalog's ``MemoryInfo.SizeInMiB`` holds.
    skypilot_memory: SkyPilotMemory = SkyPilotMemory.MIB_PER_GPU
    #: Opt-in zone kinds, tried in order (the price sanity checks' ``zone`` caveat).
    opt_in_zones: tuple[ZoneKind, ...] = ()
    #: On-demand instance families that need a quota or a reservation first.
    quota_families: tuple[QuotaFamily, ...] = ()
    #: SkyPilot's name for it (``sky/clouds``); ``None`` when SkyPilot cannot launch there.
    skypilot_cloud: str | None = None
    #: What SkyPilot's ``resources.network_tier: best`` provisions there; ``None`` when
    #: SkyPilot documents no such setting for it.
    network_tier: str | None = None
    #: The launch README's sentence on that fabric (after "... with which SkyPilot
    #: provisions it").
    network_note: str = ""

    def __post_init__(self) -> None:
        if self.billing.provider != self.id:
            raise ValueError(f"{self.id}: its billing rule is {self.billing.provider}'s")

    def fabric(self, instance_type: str, gpu_count: int) -> tuple[Fabric, float | None]:
        """The inter-node fabric (and Gbit/s) of one of its instance types; ``NONE`` when
        it is not known."""
        known = self.fabrics.get(instance_type)
        if known is not None:
            return known
        for family in self.fabric_patterns:
            if family.pattern.match(instance_type) and gpu_count >= family.min_gpus:
                return family.fabric, family.gbps
        return Fabric.NONE, None

    def opt_in_zone(self, zone: str) -> str | None:
        """The kind of opt-in zone ``zone`` (a zone name or zone ID) is; ``None`` when it is
        not one."""
        zone = zone.strip().lower()
        if not zone:
            return None
        return next((z.kind for z in self.opt_in_zones if z.pattern.search(zone)), None)

    def quota_needed(self, instance_type: str) -> str | None:
        """What an on-demand ``instance_type`` needs before it can launch; ``None``."""
        return next((q.needs for q in self.quota_families if q.pattern.match(instance_type)), None)


def unknown_provider(provider_id: str) -> Provider:
    """A cloud gpufit has no record of (an offer from a feed it does not know): billed by the
    conservative unknown rule, with no fabric and no launch target."""
    return Provider(
        id=provider_id,
        name=provider_id,
        words=(),
        catalogs=MappingProxyType({}),
        billing=unknown_rule(provider_id),
    )
