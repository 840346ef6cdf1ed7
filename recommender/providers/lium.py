"""Lium: metering unknown, so billed per whole hour (the explicit unknown rule).

What its own material says (searched 2026-12-03: "<cloud> billing per second / per minute /
docs billing" in public docs and pages, and its public GitHub repos; third-party pages are
leads, not sources): docs.lium.io quotes hourly USD prices (providers are paid daily);
github.com/Datura-ai/lium lists "spot" (reclaimable) and "secure" tiers. No unit.
"""

from __future__ import annotations

from types import MappingProxyType

from recommender.pricing.billing_rules import unknown_rule
from recommender.providers.base import SKYPILOT, Provider

__all__ = ["PROVIDER"]

PROVIDER = Provider(
    id="lium",
    name="Lium",
    words=("lium",),
    catalogs=MappingProxyType({SKYPILOT: ("lium",)}),
    billing=unknown_rule("lium"),
)
