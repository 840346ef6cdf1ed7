"""Fixtures for the Slack scenario tests: a real Redis, the fake Slack, the app itself."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
import redis.asyncio as aioredis
from slack_bolt.async_app import AsyncApp

from bot.app import build_app
from bot.catalog import bundled_catalog
from bot.services import Services, build_web_client, static_catalog
from bot.settings import Settings
from recommender import Catalog
from tests.bot.slack_requests import settings_for
from tests.factories import NOW
from tests.fake_slack import FakeSlack, clean_slack_env, fake_slack
from tests.redis_server import redis_server, redis_url

__all__ = ["clean_slack_env", "fake_slack", "redis_server", "redis_url"]


@pytest.fixture
async def redis(redis_url: str) -> AsyncIterator[aioredis.Redis]:
    client = aioredis.Redis.from_url(redis_url)
    yield client
    await client.aclose()


@pytest.fixture
def settings(fake_slack: FakeSlack, redis_url: str) -> Settings:
    return settings_for(fake_slack, redis_url)


@pytest.fixture
def catalog() -> Catalog:
    return bundled_catalog()


@pytest.fixture
def services(settings: Settings, redis: aioredis.Redis, catalog: Catalog) -> Services:
    return Services(
        redis=redis,
        catalog=static_catalog(catalog),
        now=lambda: NOW,
        client=build_web_client(settings),
    )


@pytest.fixture
async def app(settings: Settings, services: Services) -> AsyncIterator[AsyncApp]:
    """The app as ``gpufit serve`` builds it; work left running after the test is awaited."""
    yield build_app(settings, services)
    current = asyncio.current_task()
    pending = [t for t in asyncio.all_tasks() if t is not current and not t.done()]
    if pending:
        await asyncio.wait(pending, timeout=10)
