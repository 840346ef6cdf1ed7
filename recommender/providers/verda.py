"""Verda: metering unknown, so billed per whole hour (the explicit unknown rule).

What its own material says (searched 2026-12-03: "<cloud> billing per second / per minute /
docs billing" in public docs and pages, and its public GitHub repos; third-party pages are
leads, not sources): docs.verda.com "Pricing and Billing" names no unit; github.com/verda-
cloud/verda-cli prices per GPU and has a SPOT contract. Lead: per second. Verda was DataCrunch
until 2025: gpuhunt publishes both names, and a question may use either.
"""

from __future__ import annotations

from types import MappingProxyType

from recommender.pricing.billing_rules import unknown_rule
from recommender.providers.base import GPUHUNT, SKYPILOT, Provider

__all__ = ["PROVIDER"]

PROVIDER = Provider(
    id="verda",
    name="Verda",
    words=("verda", "datacrunch"),
    catalogs=MappingProxyType({SKYPILOT: ("verda",), GPUHUNT: ("verda", "datacrunch")}),
    billing=unknown_rule("verda"),
)
