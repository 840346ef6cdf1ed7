"""Price feeds: adapters, fetching, the Redis cache and the bundled snapshot.

``bot/`` imports only the names exported here (tests/test_layers.py enforces it), so the
modules behind them can be split or renamed without touching the faces.

Most names load on first use (PEP 562 module ``__getattr__``): the price store and the
fetcher pull in httpx, redis and tenacity (~0.2 s), which ``gpufit ask`` on the bundled
snapshot never needs (the CLI's cold-start budget, docs/benchmarks.md).
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

from recommender.feeds.clock import utc_now

if TYPE_CHECKING:
    from recommender.feeds.base import ParsedFeed, owned_by
    from recommender.feeds.bundled import BUNDLED_SOURCE, bundled_catalog, load_bundled
    from recommender.feeds.detect import parse_any
    from recommender.feeds.fetch import FetchTimeouts, fetch_all
    from recommender.feeds.redis_conn import (
        EMBEDDED_DB_FILE,
        REDIS_MAX_CONNECTIONS,
        REDIS_POOL_TIMEOUT_S,
        redis_client,
        start_embedded_redis,
    )
    from recommender.feeds.store import (
        FeedSource,
        PriceChange,
        PriceStore,
        RefreshOutcome,
        RefreshReport,
        SourceRefresh,
        SourceStatus,
    )

__all__ = [
    "BUNDLED_SOURCE",
    "EMBEDDED_DB_FILE",
    "REDIS_MAX_CONNECTIONS",
    "REDIS_POOL_TIMEOUT_S",
    "FeedSource",
    "FetchTimeouts",
    "ParsedFeed",
    "PriceChange",
    "PriceStore",
    "RefreshOutcome",
    "RefreshReport",
    "SourceRefresh",
    "SourceStatus",
    "bundled_catalog",
    "fetch_all",
    "load_bundled",
    "owned_by",
    "parse_any",
    "redis_client",
    "start_embedded_redis",
    "utc_now",
]

#: Exported name → the module that defines it (imported when the name is first used).
_LAZY = {
    "ParsedFeed": "recommender.feeds.base",
    "owned_by": "recommender.feeds.base",
    "BUNDLED_SOURCE": "recommender.feeds.bundled",
    "bundled_catalog": "recommender.feeds.bundled",
    "load_bundled": "recommender.feeds.bundled",
    "EMBEDDED_DB_FILE": "recommender.feeds.redis_conn",
    "REDIS_MAX_CONNECTIONS": "recommender.feeds.redis_conn",
    "REDIS_POOL_TIMEOUT_S": "recommender.feeds.redis_conn",
    "redis_client": "recommender.feeds.redis_conn",
    "start_embedded_redis": "recommender.feeds.redis_conn",
    "parse_any": "recommender.feeds.detect",
    "FetchTimeouts": "recommender.feeds.fetch",
    "fetch_all": "recommender.feeds.fetch",
    "FeedSource": "recommender.feeds.store",
    "PriceChange": "recommender.feeds.store",
    "PriceStore": "recommender.feeds.store",
    "RefreshOutcome": "recommender.feeds.store",
    "RefreshReport": "recommender.feeds.store",
    "SourceRefresh": "recommender.feeds.store",
    "SourceStatus": "recommender.feeds.store",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(import_module(module), name)
    globals()[name] = value  # later look-ups skip this function
    return value
