"""FluidStack: metering unknown, so billed per whole hour (the explicit unknown rule).

What its own material says (searched 2026-12-03: "<cloud> billing per second / per minute /
docs billing" in public docs and pages, and its public GitHub repos; third-party pages are
leads, not sources): docs source (github.com/fluidstackio/fern-config) shows a credit balance
and a billing history; its API quotes hourly prices. No unit.
"""

from __future__ import annotations

from types import MappingProxyType

from recommender.pricing.billing_rules import unknown_rule
from recommender.providers.base import SKYPILOT, Provider

__all__ = ["PROVIDER"]

PROVIDER = Provider(
    id="fluidstack",
    name="FluidStack",
    words=("fluidstack",),
    catalogs=MappingProxyType({SKYPILOT: ("fluidstack",)}),
    billing=unknown_rule("fluidstack"),
    skypilot_cloud="fluidstack",
)
