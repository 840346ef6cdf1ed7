"""Provider billing rules: how a cloud meters time and its minimum charge.

Prices in offers are per instance-hour; what a team pays depends on how the provider meters
time (per second, minute or hour) and its minimum charge. This module holds the rule's type
and the metering arithmetic; each cloud's rule, with its source and the date it was read, is
in its module of the provider registry (recommender/providers/). Spot economics built on
these rules live in recommender/pricing/billing.py.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import date

from recommender.pricing.spot import BAND_LIFETIME_HOURS, band_to_hourly

__all__ = [
    "BAND_SPOT_PER_HOUR",
    "DEFAULT_RULE",
    "HOURS_PER_MONTH",
    "HOUR_S",
    "MARKET_SPOT_PER_HOUR",
    "MINUTE_S",
    "BillingRule",
    "billed_hours",
    "unknown_rule",
]


@dataclass(frozen=True, slots=True)
class BillingRule:
    """How one provider meters and charges time."""

    provider: str
    granularity_s: int
    minimum_s: int
    spot_available: bool
    #: True when the provider quotes per GPU; offers are normalised to per instance anyway.
    per_gpu_pricing: bool
    #: Spot preemptions per instance-hour when the feed has no better figure.
    spot_interruptions_per_hour: float
    #: Sustained checkpoint write throughput to the provider's usual storage, GB/s per node.
    checkpoint_write_gb_per_s: float
    #: Checkpoint storage price, USD per GB-month (object or network storage).
    storage_usd_per_gb_month: float
    source: str
    as_of: date
    #: False when no source for the provider's metering was found: then it is billed per
    #: whole hour as a conservative assumption, and every option of it says so.
    known: bool = True

    def __post_init__(self) -> None:
        if self.granularity_s < 1 or self.minimum_s < 0:
            raise ValueError("granularity must be positive and minimum non-negative")


HOUR_S = 3600
MINUTE_S = 60
HOURS_PER_MONTH = 730  # 365 × 24 / 12, the convention every cloud price page uses

# Spot interruption rates per GPU class live in recommender/pricing/spot.py, as (optimistic,
# expected, pessimistic) ranges with their sources. A rule's own rate is the expected figure for a
# training-class GPU, used when an offer names no GPU; 0 means the provider sells no spot. A monthly
# band is read over a typical spot lifetime, not a 730-hour month (see spot.py).
BAND_SPOT_PER_HOUR = band_to_hourly(0.30, BAND_LIFETIME_HOURS[1])  # ">20 %" band, 1-day life
# Marketplace/community spot (RunPod interruptible, Vast interruptible bids) is outbid often.
MARKET_SPOT_PER_HOUR = 1 / 12  # ours: interruptible pods are reclaimed when outbid (spot.py)


def unknown_rule(provider: str) -> BillingRule:
    """The explicit rule of a cloud whose metering is not known: whole hours, 1 h minimum."""
    return BillingRule(
        provider=provider,
        granularity_s=HOUR_S,
        minimum_s=HOUR_S,
        spot_available=True,
        per_gpu_pricing=False,
        spot_interruptions_per_hour=MARKET_SPOT_PER_HOUR,
        checkpoint_write_gb_per_s=0.5,
        storage_usd_per_gb_month=0.10,
        source="unknown: billed per hour as a conservative assumption",
        as_of=date(2026, 12, 3),
        known=False,
    )


# Unknown providers are billed conservatively: whole hours with a one-hour minimum, so a
# 90-minute job costs two hours. Better to over-estimate than to surprise a budget.
DEFAULT_RULE = unknown_rule("*")


def billed_hours(rule: BillingRule, hours: float) -> float:
    """Hours charged for ``hours`` of use: rounded up to the granularity, at least the minimum."""
    if hours <= 0:
        return 0.0
    seconds = max(hours * HOUR_S, rule.minimum_s)
    # Subtract a hair before ceil so 2.0 h exactly on an hourly rule stays 2 h (float noise).
    units = math.ceil(seconds / rule.granularity_s - 1e-9)
    return units * rule.granularity_s / HOUR_S
