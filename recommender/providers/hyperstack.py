"""Hyperstack: metering unknown, so billed per whole hour (the explicit unknown rule).

What its own material says (searched 2026-12-03: "<cloud> billing per second / per minute /
docs billing" in public docs and pages, and its public GitHub repos; third-party pages are
leads, not sources): docs.hyperstack.cloud/docs/billing/billing-policies has a "Pricing and
billing intervals" section the stored copy does not reach; a stopped (SHUTOFF) VM bills like a
running one. Lead: per minute (a third-party transcript of hyperstack.cloud/gpu-pricing).
"""

from __future__ import annotations

from types import MappingProxyType

from recommender.pricing.billing_rules import unknown_rule
from recommender.providers.base import SKYPILOT, Provider

__all__ = ["PROVIDER"]

PROVIDER = Provider(
    id="hyperstack",
    name="Hyperstack",
    words=("hyperstack",),
    catalogs=MappingProxyType({SKYPILOT: ("hyperstack",)}),
    billing=unknown_rule("hyperstack"),
)
