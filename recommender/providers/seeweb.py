"""Seeweb: metering unknown, so billed per whole hour (the explicit unknown rule).

What its own material says (searched 2026-12-03: "<cloud> billing per second / per minute /
docs billing" in public docs and pages, and its public GitHub repos; third-party pages are
leads, not sources): nothing on metering in seeweb.it pages or github.com/Seeweb.
"""

from __future__ import annotations

from types import MappingProxyType

from recommender.pricing.billing_rules import unknown_rule
from recommender.providers.base import GPUHUNT, SKYPILOT, Provider

__all__ = ["PROVIDER"]

PROVIDER = Provider(
    id="seeweb",
    name="Seeweb",
    words=("seeweb",),
    catalogs=MappingProxyType({SKYPILOT: ("seeweb",), GPUHUNT: ("seeweb",)}),
    billing=unknown_rule("seeweb"),
)
