"""Shadeform: metering unknown, so billed per whole hour (the explicit unknown rule).

What its own material says (searched 2026-12-03: "<cloud> billing per second / per minute /
docs billing" in public docs and pages, and its public GitHub repos; third-party pages are
leads, not sources): a marketplace over other clouds (docs.shadeform.ai/getting-
started/concepts); no unit of its own.
"""

from __future__ import annotations

from types import MappingProxyType

from recommender.pricing.billing_rules import unknown_rule
from recommender.providers.base import SKYPILOT, Provider, SkyPilotMemory

__all__ = ["PROVIDER"]

#: What its SkyPilot catalog's ``MemoryInfo.SizeInMiB`` holds: GB per GPU; source:
#: SkyPilot catalog v8 ``shadeform/vms.csv``: 48 for an A6000, 141 for an H200.
_MEMORY = SkyPilotMemory.GB_PER_GPU

PROVIDER = Provider(
    id="shadeform",
    name="Shadeform",
    words=("shadeform",),
    catalogs=MappingProxyType({SKYPILOT: ("shadeform",)}),
    billing=unknown_rule("shadeform"),
    skypilot_memory=_MEMORY,
)
