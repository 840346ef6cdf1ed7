"""Every Redis client gpufit opens (the bot's, the worker's, the price store's) holds more
commands at once than redis-py's default pool (100 in redis-py 8, which refuses the 101st with
"Too many connections"); a real Redis."""

from __future__ import annotations

import asyncio

import pytest
import redis.asyncio as aioredis

from bot.services import build_services
from bot.settings import Settings
from recommender.feeds import REDIS_MAX_CONNECTIONS, REDIS_POOL_TIMEOUT_S, redis_client
from recommender.feeds.cache import RedisSnapshots
from tests.redis_server import redis_server

__all__ = ["redis_server"]  # fixture used by name below

#: Commands at once: past the default pool's 100 and past ours (the rest wait their turn).
CONCURRENT = 300


async def _hold_all(client: aioredis.Redis) -> list[object]:
    """``CONCURRENT`` commands that each hold a connection for 0.3 s (BLPOP on an empty list)."""
    return await asyncio.gather(
        *(client.blpop([f"gpufit-test:empty:{i}"], timeout=0.3) for i in range(CONCURRENT))
    )


async def test_the_bots_client_waits_for_a_connection_instead_of_failing(
    redis_server: str,
) -> None:
    services = build_services(Settings(redis_url=redis_server))
    try:
        assert await _hold_all(services.redis) == [None] * CONCURRENT
        assert await services.redis.ping()
    finally:
        await services.redis.aclose()
        if services.store is not None:
            await services.store.aclose()


async def test_the_workers_client_too(redis_server: str) -> None:
    client = redis_client(redis_server, decode_responses=True)
    try:
        assert await _hold_all(client) == [None] * CONCURRENT
        assert await client.set("gpufit-test:k", "v")
        assert await client.get("gpufit-test:k") == "v"  # decoded, as the worker expects
    finally:
        await client.aclose()


async def test_the_price_stores_client_too(redis_server: str) -> None:
    store = RedisSnapshots.from_url(redis_server)
    try:
        assert await _hold_all(store.client) == [None] * CONCURRENT
    finally:
        await store.aclose()


async def test_a_command_that_cannot_get_a_connection_fails_after_the_pool_timeout(
    redis_server: str,
) -> None:
    """With every connection held past the pool timeout, the next command fails (a clear
    error) after about REDIS_POOL_TIMEOUT_S, not at once and not never."""
    client = redis_client(redis_server)
    hold = REDIS_POOL_TIMEOUT_S + 1
    holders = [
        asyncio.create_task(client.blpop([f"gpufit-test:hold:{i}"], timeout=hold))
        for i in range(REDIS_MAX_CONNECTIONS)
    ]
    try:
        await asyncio.sleep(0.3)
        loop = asyncio.get_running_loop()
        started = loop.time()
        with pytest.raises(aioredis.ConnectionError):
            await client.ping()
        assert REDIS_POOL_TIMEOUT_S * 0.9 <= loop.time() - started < hold
    finally:
        await asyncio.gather(*holders, return_exceptions=True)
        await client.aclose()
