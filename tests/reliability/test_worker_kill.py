"""A worker killed mid-pass (issue #34, item 6): a real process refreshing a feed that hangs is
SIGKILLed while it holds the refresh lock. Nothing is lost — the last good prices stay served
throughout — and nothing is duplicated — no other refresh runs while the dead one's lock
stands (the documented window: ``lock_ttl_s``, 300 s in production), and the next refresh
after it stores the new snapshot once.

A real Redis, a real loopback feed server, and the refresher in a child process (so the kill
is a kill: no ``finally`` releases the lock)."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from pathlib import Path

from recommender.feeds.cache import RedisSnapshots
from recommender.feeds.fetch import FetchTimeouts, RetryPolicy
from recommender.feeds.store import FeedSource, PriceStore, RefreshOutcome
from tests.feeds.conftest import FeedServer, Route
from tests.reliability.test_feed_limits import _feed

PREFIX = "test:kill"
#: The refresh lock's TTL in this test (production: DEFAULT_LOCK_TTL_S, 300 s).
LOCK_TTL_S = 2.0
ROOT = Path(__file__).resolve().parents[2]

#: The child: one refresh of the source under the short lock; it hangs on the feed.
CHILD = """
import asyncio, sys
from recommender.feeds.cache import RedisSnapshots
from recommender.feeds.fetch import FetchTimeouts
from recommender.feeds.store import FeedSource, PriceStore

async def main() -> None:
    store = PriceStore(RedisSnapshots.from_url(sys.argv[1], prefix=sys.argv[2]))
    source = FeedSource.parse(sys.argv[3])
    await store.refresh([source], lock_ttl_s=float(sys.argv[4]),
                        timeouts=FetchTimeouts(read_s=60, total_s=60, deadline_s=60))

asyncio.run(main())
"""


async def _offers(store: PriceStore) -> list[str]:
    catalog = await store.load_catalog()
    return sorted(o.instance_type for o in catalog.offers if o.source == "live")


async def test_a_worker_killed_mid_refresh_loses_nothing_and_duplicates_nothing(
    feed_server: FeedServer, redis_url: str
) -> None:
    route = Route(_feed(3))
    url = feed_server.serve("/live.json", route)
    source = FeedSource.parse(f"live={url}")
    store = PriceStore(RedisSnapshots.from_url(redis_url, prefix=PREFIX))
    quick = FetchTimeouts(read_s=2, total_s=3, deadline_s=5)
    try:
        first = await store.refresh([source], timeouts=quick, policy=RetryPolicy.no_wait(1))
        assert first.sources[0].outcome is RefreshOutcome.UPDATED
        before = await _offers(store)
        route.hang = True
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        child = await asyncio.create_subprocess_exec(
            sys.executable, "-c", CHILD, redis_url, PREFIX, f"live={url}", str(LOCK_TTL_S),
            env=env,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 20
            while feed_server.hits("/live.json") < 2:
                assert child.returncode is None, "the refresher exited before its fetch"
                assert time.monotonic() < deadline, "the refresher never fetched"
                await asyncio.sleep(0.05)
            killed_at = time.monotonic()
            child.send_signal(signal.SIGKILL)
            await asyncio.wait_for(child.wait(), 10)
        finally:
            if child.returncode is None:
                child.kill()
        # The dead refresher's lock stands: another refresh is locked out, the prices stay.
        locked = await store.refresh([source], timeouts=quick, policy=RetryPolicy.no_wait(1))
        during = await _offers(store)
        route.hang = False
        route.body = _feed(5)
        await asyncio.sleep(max(0.0, LOCK_TTL_S + 0.2 - (time.monotonic() - killed_at)))
        after_lock = await store.refresh([source], timeouts=quick, policy=RetryPolicy.no_wait(1))
        after = await _offers(store)
    finally:
        await store.aclose()
    assert child.returncode == -signal.SIGKILL
    assert locked.locked_out
    assert during == before  # nothing lost while the lock stands
    assert after_lock.sources[0].outcome is RefreshOutcome.UPDATED
    assert after == sorted(f"p5.{i}" for i in range(5))  # the new snapshot, once
    assert len(after) == len(set(after))
