"""Price-drop alerts: watches, their parser, hysteresis, the Redis store and Slack delivery.

See ``docs/alerts.md`` for how watches, hysteresis, once-only delivery and pacing work.
"""

from bot.alerts.delivery import CHANNEL_ERRORS, TOKEN_ERRORS, ChannelPacer, Delivery, Outcome
from bot.alerts.evaluate import (
    MIN_REPEAT_DROP_FRAC,
    REARM_MARGIN_FRAC,
    PricePoint,
    Verdict,
    WatchState,
    check_watch,
    current_price,
    step,
)
from bot.alerts.model import (
    ImpossibleWatchError,
    OfferQuery,
    PriceBasis,
    Threshold,
    Watch,
    WatchError,
    WatchNotFoundError,
    WatchSpec,
    WatchSyntaxError,
)
from bot.alerts.parse import parse_watch
from bot.alerts.render import render_confirmation, render_watches
from bot.alerts.store import AlertQueue, WatchStore

__all__ = [
    "CHANNEL_ERRORS",
    "MIN_REPEAT_DROP_FRAC",
    "REARM_MARGIN_FRAC",
    "TOKEN_ERRORS",
    "AlertQueue",
    "ChannelPacer",
    "Delivery",
    "ImpossibleWatchError",
    "OfferQuery",
    "Outcome",
    "PriceBasis",
    "PricePoint",
    "Threshold",
    "Verdict",
    "Watch",
    "WatchError",
    "WatchNotFoundError",
    "WatchSpec",
    "WatchState",
    "WatchStore",
    "WatchSyntaxError",
    "check_watch",
    "current_price",
    "parse_watch",
    "render_confirmation",
    "render_watches",
    "step",
]
