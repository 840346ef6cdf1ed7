"""Hyperbolic: metering unknown, so billed per whole hour (the explicit unknown rule).

What its own material says (searched 2026-12-03: "<cloud> billing per second / per minute /
docs billing" in public docs and pages, and its public GitHub repos; third-party pages are
leads, not sources): docs.hyperbolic.xyz/docs/gpu-marketplace-pricing gives hourly prices only.
"""

from __future__ import annotations

from types import MappingProxyType

from recommender.pricing.billing_rules import unknown_rule
from recommender.providers.base import SKYPILOT, Provider

__all__ = ["PROVIDER"]

PROVIDER = Provider(
    id="hyperbolic",
    name="Hyperbolic",
    words=("hyperbolic",),
    catalogs=MappingProxyType({SKYPILOT: ("hyperbolic",)}),
    billing=unknown_rule("hyperbolic"),
    skypilot_cloud="hyperbolic",
)
