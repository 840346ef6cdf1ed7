"""Spot interruption rates and capacity waits, per provider and GPU class, as ranges.

Every figure is a :class:`SpotRange` (optimistic, expected, pessimistic) with the source it
came from. Nothing here reads the network: a feed that carries live Spot Advisor or Azure
eviction-rate data should override these defaults.

**Conversion of a monthly band (AWS, Azure).** The AWS Spot Instance Advisor says its
"frequency of interruption represents the rate at which Spot has reclaimed capacity during the
trailing month", in bands <5 %, 5-10 %, 10-15 %, 15-20 %, >20 %
(aws.amazon.com/ec2/spot/instance-advisor). Azure publishes the same bands as an "eviction
rate" over the last 28 days (learn.microsoft.com/azure/virtual-machines/spot-vms). Neither is
a per-hour hazard: it is the share of the spot instances that ran that month which were
reclaimed. If a spot instance typically lives ``L`` hours, a constant hazard λ gives that share
as p = 1 − e^(−λL), so λ = −ln(1 − p) / L. Reading L as the whole 730-hour month (what gpufit
did before) makes p4d/p5 spot look like a 60-day MTBF; spot fleets are short-lived batch and
CI capacity, so gpufit reads L as a day (expected), three days (optimistic) and six hours
(pessimistic). The lifetimes are ours: AWS publishes no typical spot lifetime; GCP's
preemptible VMs were capped at 24 h ("can only run for up to 24 hours at a time",
cloud.google.com/compute/docs/instances/create-use-preemptible), and the SkyPilot V100 spot
preemption traces (Wu et al., "Can't Be Late", NSDI '24; github.com/skypilot-org/spot-traces)
show mean uninterrupted spells of 1.4-3.1 h per AZ for one V100 and 2.7-21 h for 4-node
groups, so even the pessimistic end is kinder than the worst measured AZs.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType

__all__ = [
    "BAND_LIFETIME_HOURS",
    "GpuClass",
    "SpotModel",
    "SpotRange",
    "SpotTerms",
    "band_to_hourly",
    "capacity_wait",
    "gpu_class",
    "interruption_range",
]


@dataclass(frozen=True, slots=True)
class SpotRange:
    """An optimistic, expected and pessimistic figure, and where it comes from."""

    optimistic: float
    expected: float
    pessimistic: float
    source: str

    def __post_init__(self) -> None:
        if not 0 <= self.optimistic <= self.expected <= self.pessimistic:
            raise ValueError("a range runs 0 ≤ optimistic ≤ expected ≤ pessimistic")

    def scaled(self, factor: float) -> SpotRange:
        return SpotRange(
            self.optimistic * factor,
            self.expected * factor,
            self.pessimistic * factor,
            self.source,
        )


class GpuClass(StrEnum):
    """How contended a GPU's spot capacity is."""

    SCARCE = "scarce"  # current training parts: H100/H200/B200/A100/MI300X
    MID = "mid"  # inference and previous-generation training parts
    COMMON = "common"  # small or old parts with plenty of spare capacity


_SCARCE = frozenset(
    {
        "H200-SXM-141GB",
        "H200-NVL-141GB",
        "H100-SXM-80GB",
        "H100-PCIE-80GB",
        "H100-NVL-94GB",
        "GH200-96GB",
        "GH200-144GB",
        "B200-180GB",
        "B300-288GB",
        "GB200-186GB",
        "A100-SXM-80GB",
        "A100-SXM-40GB",
        "A100-PCIE-80GB",
        "MI300X",
        "MI325X",
    }
)
_COMMON = frozenset({"T4", "P100-16GB", "RTX-3090", "RTX-4090"})


def gpu_class(gpu_id: str | None) -> GpuClass:
    """The contention class of a canonical GPU id; unknown parts count as mid."""
    if gpu_id in _SCARCE:
        return GpuClass.SCARCE
    if gpu_id in _COMMON:
        return GpuClass.COMMON
    return GpuClass.MID


# ----------------------------------------------------------------- monthly bands (AWS, Azure)

#: Typical spot lifetime L over which a monthly band is read: (optimistic, expected,
#: pessimistic) hours. Ours; see the module docstring.
BAND_LIFETIME_HOURS = (72.0, 24.0, 6.0)

#: Band → (optimistic, expected, pessimistic) share reclaimed per month. Each band's floor,
#: middle and ceiling; the open top band ">20 %" runs 20 % / 30 % / 50 % (ours: AWS gives no
#: ceiling, and the lower bands are each 5 points wide).
_BANDS: Mapping[str, tuple[float, float, float]] = MappingProxyType(
    {
        "<5%": (0.01, 0.025, 0.05),  # floor 1 % (ours): a 0 % floor would mean "never"
        "5-10%": (0.05, 0.075, 0.10),
        "10-15%": (0.10, 0.125, 0.15),
        "15-20%": (0.15, 0.175, 0.20),
        ">20%": (0.20, 0.30, 0.50),
    }
)

#: Band assumed by GPU class where a provider publishes no per-GPU figure (ours).
_BAND_BY_CLASS: Mapping[GpuClass, str] = MappingProxyType(
    {GpuClass.SCARCE: ">20%", GpuClass.MID: "5-10%", GpuClass.COMMON: "<5%"}
)


def band_to_hourly(p: float, lifetime_hours: float) -> float:
    """Interruptions per instance-hour from the share ``p`` of instances reclaimed over a
    typical lifetime: λ = −ln(1 − p) / L (constant hazard)."""
    if not 0 <= p < 1 or lifetime_hours <= 0:
        raise ValueError("p must be in [0, 1) and the lifetime positive")
    return -math.log1p(-p) / lifetime_hours


def _band_range(band: str, source: str) -> SpotRange:
    lo, mid, hi = _BANDS[band]
    l_opt, l_exp, l_pess = BAND_LIFETIME_HOURS
    return SpotRange(
        band_to_hourly(lo, l_opt),
        band_to_hourly(mid, l_exp),
        band_to_hourly(hi, l_pess),
        f"{source} band {band} per month, read over a {l_pess:.0f}-{l_opt:.0f} h spot lifetime",
    )


# ----------------------------------------------------------------- each provider's terms


class SpotModel(StrEnum):
    """How a provider's spot interruptions are estimated."""

    #: A monthly band per instance family, as the AWS Spot Instance Advisor publishes it.
    BAND = "band"
    #: A bid-priced marketplace: a higher bid or an on-demand renter takes the machine.
    MARKET = "market"
    #: No published figure: the provider rule's own rate, widened into a market-shaped range.
    DEFAULT = "default"


@dataclass(frozen=True, slots=True)
class SpotTerms:
    """A provider's spot terms: how its interruptions are estimated, and its notice."""

    model: SpotModel = SpotModel.DEFAULT
    #: How a band figure is labelled (its source).
    label: str = ""
    #: Published band per canonical GPU id (AWS); other GPUs take their class's band.
    band_by_gpu: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    #: The label of a class band where ``band_by_gpu`` is published but lacks the GPU.
    class_label: str = ""
    #: Seconds of warning before a spot node is reclaimed; ``None`` when none is published.
    notice_s: int | None = None
    #: Where the notice figure comes from.
    notice_source: str = ""


# RunPod interruptible pods and Vast.ai interruptible instances are bid-priced: an on-demand
# renter or a higher bid takes the machine ("Lower priority instances are paused until they
# become the highest priority", vast.ai/docs/instance-rental/rental-types; RunPod --bid,
# docs.runpod.io/runpodctl/reference/runpodctl-start-pod). Neither publishes a rate. Ours: one
# interruption per 12 h expected, per 2 days at best and per 4 h at worst (the SkyPilot V100
# traces' mean spells of a few hours in contended zones bound the pessimistic end).
_MARKET = SpotRange(
    1 / 48,
    1 / 12,
    1 / 4,
    "ours: bid-priced marketplace (RunPod/Vast publish no rate); 1 per 48 h / 12 h / 4 h",
)


def interruption_range(terms: SpotTerms, gpu_id: str | None, default_per_hour: float) -> SpotRange:
    """Interruptions per instance-hour of one spot node, as a range with its source.

    ``default_per_hour`` is the provider rule's own figure: 0 means the provider sells no
    spot; a provider without a published figure gets a marketplace-shaped range around it.
    """
    if default_per_hour <= 0:
        return SpotRange(0.0, 0.0, 0.0, "provider sells no spot capacity")
    if terms.model is SpotModel.BAND:
        band = terms.band_by_gpu.get(gpu_id or "")
        label = terms.label
        if band is None:
            band = _BAND_BY_CLASS[gpu_class(gpu_id)]
            label = terms.class_label or label
        return _band_range(band, label)
    if terms.model is SpotModel.MARKET:
        return _MARKET
    return SpotRange(
        default_per_hour / 4,
        default_per_hour,
        default_per_hour * 3,
        "ours: provider default rate, market-shaped range (÷4 … ×3)",
    )


# ----------------------------------------------------------------- waiting for capacity

# After a preemption a job waits for capacity of the same type to come back ("There's no way to
# predict when compute capacity will be available", learn.microsoft.com Azure spot eviction
# guide; AWS restarts a stopped spot instance only "when capacity is available",
# docs.aws.amazon.com/AWSEC2/latest/UserGuide/interruption-behavior.html). Measured in the
# SkyPilot AWS V100 spot traces (NSDI '24; derived by us per AZ): median outage 0.17-0.75 h,
# mean 0.8-7.7 h, longest 86 h. Scarce parts take the per-AZ median (0.5 h), the median of
# per-AZ means (2 h) and the worst per-AZ mean (8 h); today's H100/H200/B200/A100 spot is at
# least as contended as V100 was in 2023 (ours). Less contended classes wait half and an
# eighth as long (ours).
_WAIT_BY_CLASS: Mapping[GpuClass, SpotRange] = MappingProxyType(
    {
        GpuClass.SCARCE: SpotRange(
            0.5, 2.0, 8.0, "SkyPilot spot traces (NSDI '24), V100 outages per AZ; ours"
        ),
        GpuClass.MID: SpotRange(0.25, 1.0, 4.0, "ours: half the scarce-GPU wait"),
        GpuClass.COMMON: SpotRange(0.1, 0.25, 1.0, "ours: plentiful capacity"),
    }
)


def capacity_wait(gpu_id: str | None) -> SpotRange:
    """Hours a preempted job waits for capacity of its GPU type to return."""
    return _WAIT_BY_CLASS[gpu_class(gpu_id)]
