"""TensorDock: metering unknown, so billed per whole hour (the explicit unknown rule).

Its metering was not searched yet; gpuhunt lists its prices.
"""

from __future__ import annotations

from types import MappingProxyType

from recommender.pricing.billing_rules import unknown_rule
from recommender.providers.base import GPUHUNT, Provider

__all__ = ["PROVIDER"]

PROVIDER = Provider(
    id="tensordock",
    name="TensorDock",
    words=("tensordock",),
    catalogs=MappingProxyType({GPUHUNT: ("tensordock",)}),
    billing=unknown_rule("tensordock"),
)
