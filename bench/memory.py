"""Bot RSS with a 20k-offer catalog loaded (and answering a question); with ``--offers``,
the peak RSS of the worker and the bot for feeds of that size.

Run: ``.venv/bin/python bench/memory.py``. Each figure is measured in a fresh child process
(``ru_maxrss`` and /proc VmRSS): the interpreter alone, the bot's modules imported, then a
20k-offer synthetic SkyPilot catalog parsed and one question answered.

``--offers 50000 100000 200000``: for each size, synthetic SkyPilot CSV files of that many
rows are written first; then one child runs the worker's path (``PriceStore.refresh`` of the
files into an embedded Redis, then ``load_catalog``) and another the bot's (``load_catalog``
from that Redis, then one question answered). Each prints its peak RSS (``ru_maxrss``), the
figure a pod's memory limit must hold. These set ``GPUFIT_FEED_MAX_OFFERS`` and the pods'
limits (docs/operations.md).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import REPO, machine

_RSS = (
    "import re;"
    "print(int(re.search(r'VmRSS:\\s+(\\d+)', open('/proc/self/status').read()).group(1)))"
)
STEPS = {
    "python alone": "pass",
    "bot modules imported": "import bot.app, bot.cli, bot.server",
    "20k-offer catalog loaded": (
        "import sys; sys.path.insert(0, '.'); import bot.app, bot.cli, bot.server;"
        "from bench.synth import synthetic_catalog; c = synthetic_catalog(20000)"
    ),
    "+ one question answered": (
        "import sys; sys.path.insert(0, '.'); import bot.app, bot.cli, bot.server;"
        "from bench.synth import synthetic_catalog, NOW; c = synthetic_catalog(20000);"
        "from recommender import parse_workload, recommend;"
        "recommend(parse_workload('13B full finetune 2 days'), c, now=NOW)"
    ),
}


_PEAK = "import resource; print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
_WORKER = """
import asyncio, sys
sys.path.insert(0, '.')
from recommender.feeds import FeedSource, PriceStore
async def main(url, specs):
    store = PriceStore.from_url(url)
    report = await store.refresh([FeedSource.parse(s) for s in specs], max_bytes=2**31)
    assert not report.failed, report.failed
    print(len((await store.load_catalog()).offers))
    await store.aclose()
asyncio.run(main(sys.argv[1], sys.argv[2:]))
"""
_BOT = """
import asyncio, sys
sys.path.insert(0, '.')
import bot.app, bot.server
from recommender import parse_workload, recommend
from recommender.feeds import PriceStore
from bench.synth import NOW
async def main(url):
    store = PriceStore.from_url(url)
    catalog = await store.load_catalog()
    recommend(parse_workload('13B full finetune 2 days'), catalog, now=NOW)
    print(len(catalog.offers))
    await store.aclose()
asyncio.run(main(sys.argv[1]))
"""


def feed_peaks(python: str, sizes: list[int]) -> None:
    """Peak RSS of the worker's refresh and the bot's load for feeds of ``sizes`` rows."""
    from bench.synth import synthetic_documents
    from recommender.feeds import start_embedded_redis

    for rows in sizes:
        with tempfile.TemporaryDirectory() as tmp:
            url = start_embedded_redis(Path(tmp) / "redis")
            specs = []
            size = 0
            for cloud, text in synthetic_documents(rows).items():
                path = Path(tmp) / f"{cloud}.csv"
                path.write_text(text)
                size += len(text)
                specs.append(f"{cloud}={path}")
            peaks = []
            for code, args in ((_WORKER, [url, *specs]), (_BOT, [url])):
                out = subprocess.run(
                    [python, "-c", f"{code}\n{_PEAK}", *args],
                    cwd=REPO,
                    capture_output=True,
                    text=True,
                    check=True,
                ).stdout.split()
                peaks.append((int(out[0]), int(out[1]) / 1024))
            (offers, worker), (_, bot) = peaks
            print(
                f"  {rows:>7} rows ({size / 2**20:5.1f} MiB CSV) -> {offers:>7} offers: "
                f"worker peak {worker:6.1f} MiB, bot peak {bot:6.1f} MiB"
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--offers", type=int, nargs="*", default=None)
    sizes = parser.parse_args().offers
    print(f"machine: {machine()}")
    python = str(REPO / ".venv" / "bin" / "python")
    if sizes:
        feed_peaks(python, sizes)
        return 0
    for label, code in STEPS.items():
        out = subprocess.run(
            [python, "-c", f"{code}\n{_RSS}"], cwd=REPO, capture_output=True, text=True, check=True
        )
        print(f"  {label:<26} RSS {int(out.stdout.split()[-1]) / 1024:7.1f} MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
