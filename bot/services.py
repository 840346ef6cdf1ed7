"""The clients and sources the Slack app uses, built once by the composition root.

Tests build :class:`Services` themselves (a real Redis, the fake Slack's URL, a fixed clock);
production calls :func:`build_services` from ``gpufit serve``. Nothing here runs at import.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime

import redis.asyncio as aioredis
from slack_sdk.http_retry.builtin_async_handlers import (
    AsyncConnectionErrorRetryHandler,
    AsyncRateLimitErrorRetryHandler,
)
from slack_sdk.web.async_client import AsyncWebClient

from bot.answer_cache import Answer, AnswerCache
from bot.background import Background
from bot.metrics import Metrics
from bot.runtime import redis_url
from bot.settings import Settings
from recommender import Catalog
from recommender.feeds import PriceStore, redis_client, utc_now

__all__ = ["Services", "build_services", "build_web_client", "static_catalog"]

#: How often slack_sdk retries a call Slack answered with 429 (it sleeps ``Retry-After``).
RATE_LIMIT_RETRIES = 2  # as seratch/ChatGPT-in-Slack; more would hold a reply for minutes


@dataclass(frozen=True, slots=True)
class Services:
    """What the listeners need from the outside world."""

    redis: aioredis.Redis
    #: The current catalog (today the bundled snapshot; later the Redis price store).
    catalog: Callable[[], Awaitable[Catalog]]
    now: Callable[[], datetime]
    client: AsyncWebClient
    #: Prometheus metrics; ``None`` when metrics are switched off (and in most tests).
    metrics: Metrics | None = None
    #: The Redis price store behind ``catalog`` in production (closed by the owner).
    store: PriceStore | None = None
    #: Answers reused while the catalog is unchanged (see :mod:`bot.answer_cache`).
    answers: AnswerCache[Answer] = field(default_factory=AnswerCache)
    #: Work that runs after the ack (see :mod:`bot.background`); drained at shutdown.
    background: Background = field(default_factory=Background)
    #: The scan thread: passes over a large catalog run here, off the event loop
    #: (:func:`bot.listeners.answers.off_loop`). One thread, why: each pass holds the GIL, so
    #: with more threads the event loop gets an ever smaller share of it (six threads, the
    #: default pool on two cores, delayed a ``help`` as much as scanning on the loop did);
    #: further passes wait in its queue, not on the loop. Its thread starts on first use.
    scans: ThreadPoolExecutor = field(
        default_factory=lambda: ThreadPoolExecutor(max_workers=1, thread_name_prefix="gpufit-scan")
    )


def static_catalog(catalog: Catalog) -> Callable[[], Awaitable[Catalog]]:
    """A catalog source that always returns ``catalog``."""

    async def current() -> Catalog:
        return catalog

    return current


def build_web_client(settings: Settings) -> AsyncWebClient:
    """The Slack Web API client: ``SLACK_API_URL``, the bot token, 429 retries."""
    token = settings.slack_bot_token.get_secret_value() if settings.slack_bot_token else None
    return AsyncWebClient(
        token=token,
        base_url=settings.slack_api_url,
        retry_handlers=[
            AsyncConnectionErrorRetryHandler(),
            AsyncRateLimitErrorRetryHandler(max_retry_count=RATE_LIMIT_RETRIES),
        ],
    )


def build_services(settings: Settings) -> Services:
    """Production services: Redis from ``REDIS_URL`` (or the embedded one), the price store.

    Raises:
        StoreError: no ``REDIS_URL`` and the embedded Redis could not start.
    """
    url = redis_url(settings)
    store = PriceStore.from_url(url, recheck_s=settings.price_recheck_s)
    return Services(
        redis=redis_client(url),
        catalog=store.load_catalog,
        now=utc_now,
        client=build_web_client(settings),
        metrics=Metrics() if settings.metrics_enabled else None,
        store=store,
    )
