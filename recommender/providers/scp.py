"""Samsung SDS Cloud: metering unknown, so billed per whole hour (the explicit unknown rule).

What its own material says (searched 2026-12-03: "<cloud> billing per second / per minute /
docs billing" in public docs and pages, and its public GitHub repos; third-party pages are
leads, not sources): docs.e.samsungsdscloud.com cost management names no unit.
"""

from __future__ import annotations

from types import MappingProxyType

from recommender.pricing.billing_rules import unknown_rule
from recommender.providers.base import SKYPILOT, Provider

__all__ = ["PROVIDER"]

PROVIDER = Provider(
    id="scp",
    name="Samsung SDS Cloud",
    words=("samsung sds", "samsung cloud platform"),
    catalogs=MappingProxyType({SKYPILOT: ("scp",)}),
    billing=unknown_rule("scp"),
    skypilot_cloud="scp",
)
