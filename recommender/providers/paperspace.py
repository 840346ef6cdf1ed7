"""Paperspace: metering unknown, so billed per whole hour (the explicit unknown rule).

What its own material says (searched 2026-12-03: "<cloud> billing per second / per minute /
docs billing" in public docs and pages, and its public GitHub repos; third-party pages are
leads, not sources): github.com/Paperspace/Docs (2021) prorates a destroyed machine "to the
hour"; too old and too narrow for today's meter (now billed through DigitalOcean). Lead: per
second (third party).
"""

from __future__ import annotations

from types import MappingProxyType

from recommender.pricing.billing_rules import unknown_rule
from recommender.providers.base import SKYPILOT, Provider

__all__ = ["PROVIDER"]

PROVIDER = Provider(
    id="paperspace",
    name="Paperspace",
    words=("paperspace",),
    catalogs=MappingProxyType({SKYPILOT: ("paperspace",)}),
    billing=unknown_rule("paperspace"),
    skypilot_cloud="paperspace",
)
