"""Yotta Labs: metering unknown, so billed per whole hour (the explicit unknown rule).

What its own material says (searched 2026-12-03: "<cloud> billing per second / per minute /
docs billing" in public docs and pages, and its public GitHub repos; third-party pages are
leads, not sources): docs.yottalabs.ai "GPU Pods" names no unit. Lead: per second.
"""

from __future__ import annotations

from types import MappingProxyType

from recommender.pricing.billing_rules import unknown_rule
from recommender.providers.base import SKYPILOT, Provider

__all__ = ["PROVIDER"]

PROVIDER = Provider(
    id="yotta",
    name="Yotta Labs",
    words=("yotta labs", "yotta"),
    catalogs=MappingProxyType({SKYPILOT: ("yotta",)}),
    billing=unknown_rule("yotta"),
)
