"""Hot Aisle: metering unknown, so billed per whole hour (the explicit unknown rule).

Its metering was not searched yet; gpuhunt lists its prices.
"""

from __future__ import annotations

from types import MappingProxyType

from recommender.pricing.billing_rules import unknown_rule
from recommender.providers.base import GPUHUNT, Provider

__all__ = ["PROVIDER"]

PROVIDER = Provider(
    id="hotaisle",
    name="Hot Aisle",
    words=("hot aisle", "hotaisle"),
    catalogs=MappingProxyType({GPUHUNT: ("hotaisle",)}),
    billing=unknown_rule("hotaisle"),
)
