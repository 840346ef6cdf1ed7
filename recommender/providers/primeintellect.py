"""Prime Intellect: metering unknown, so billed per whole hour (the explicit unknown rule).

What its own material says (searched 2026-12-03: "<cloud> billing per second / per minute /
docs billing" in public docs and pages, and its public GitHub repos; third-party pages are
leads, not sources): a marketplace; docs.primeintellect.ai quotes each provider's hourly price.
"""

from __future__ import annotations

from types import MappingProxyType

from recommender.pricing.billing_rules import unknown_rule
from recommender.providers.base import SKYPILOT, Provider, SkyPilotMemory

__all__ = ["PROVIDER"]

#: What its SkyPilot catalog's ``MemoryInfo.SizeInMiB`` holds: MiB over all its GPUs; source:
#: SkyPilot catalog v8 ``primeintellect/vms.csv``: ``lambdalabs__8xA100_80GB__240__1800``
#: lists 655360 MiB (eight 80 GB cards).
_MEMORY = SkyPilotMemory.MIB_ALL_GPUS

PROVIDER = Provider(
    id="primeintellect",
    name="Prime Intellect",
    words=("prime intellect", "primeintellect"),
    catalogs=MappingProxyType({SKYPILOT: ("primeintellect",)}),
    billing=unknown_rule("primeintellect"),
    skypilot_memory=_MEMORY,
)
