"""Fixtures every test package shares: one real Redis server for the whole session."""

from __future__ import annotations

from tests.redis_server import redis_server, redis_url

__all__ = ["redis_server", "redis_url"]
