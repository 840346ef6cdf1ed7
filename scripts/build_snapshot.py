"""Regenerate the bundled price snapshot from local copies of the catalogs.

    python scripts/build_snapshot.py --as-of 2026-11-20 [--root DIR] [--out FILE] [CLOUD ...]

Reads ``DIR/<cloud>/vms.csv`` (SkyPilot's ``catalogs/v8`` layout; by default the repository's
real-row fixtures, tests/feeds/data/catalogs/v8) through the same adapters and sanity checks
as the live feeds, and writes a gpufit feed to FILE (by default stdout; the packaged snapshot
is recommender/data/snapshot.json). The same inputs and ``--as-of`` give the same bytes.
See docs/feed-format.md, "The bundled snapshot".
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from recommender.feeds.snapshot_build import build_snapshot  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("clouds", nargs="*", help="only these clouds (default: every folder)")
    parser.add_argument("--root", type=Path, default=ROOT / "tests/feeds/data/catalogs/v8")
    parser.add_argument("--out", type=Path, help="write here instead of stdout")
    parser.add_argument("--as-of", required=True, help="the catalogs' date, YYYY-MM-DD")
    args = parser.parse_args(argv)
    as_of = datetime.strptime(args.as_of, "%Y-%m-%d").replace(tzinfo=UTC)
    text = build_snapshot(args.root, as_of=as_of, clouds=args.clouds)
    if args.out is None:
        sys.stdout.write(text)
    else:
        args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
