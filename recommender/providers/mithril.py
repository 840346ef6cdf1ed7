"""Mithril: metering unknown, so billed per whole hour (the explicit unknown rule).

What its own material says (searched 2026-12-03: "<cloud> billing per second / per minute /
docs billing" in public docs and pages, and its public GitHub repos; third-party pages are
leads, not sources): docs.mithril.ai: spot capacity by auction; reservations of 3 h to 2 weeks
in 1-hour increments. No unit for spot or on-demand use.
"""

from __future__ import annotations

from types import MappingProxyType

from recommender.pricing.billing_rules import unknown_rule
from recommender.providers.base import SKYPILOT, Provider

__all__ = ["PROVIDER"]

PROVIDER = Provider(
    id="mithril",
    name="Mithril",
    words=("mithril",),
    catalogs=MappingProxyType({SKYPILOT: ("mithril",)}),
    billing=unknown_rule("mithril"),
)
