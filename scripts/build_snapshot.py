"""Regenerate the bundled price snapshot from local copies of the catalogs.

    python scripts/build_snapshot.py --out recommender/data/snapshot.json

builds the shipped snapshot. In general:

    python scripts/build_snapshot.py [--as-of YYYY-MM-DD] [--root DIR] [--out FILE] [CLOUD ...]

reads ``DIR/<cloud>/vms.csv`` (SkyPilot's ``catalogs/v8`` layout; by default the snapshot's
inputs in data/catalogs/v8) through the same adapters and sanity checks as the live feeds, and
writes a gpufit feed to FILE (by default stdout). Without ``--as-of`` the feed is dated by
``DIR/manifest.csv``: the earliest day an input's rows were read. The feed records the command
(without ``--out``) in ``x_built_by`` and each input's first-line provenance in ``x_inputs``.
The same inputs and arguments give the same bytes; tests/feeds/test_snapshot_build.py checks
that the shipped file is this script's output. See docs/feed-format.md, "The bundled snapshot".
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from recommender.feeds.snapshot_build import build_snapshot  # noqa: E402

#: The snapshot's inputs: real catalog rows, each file naming its upstream commit.
DEFAULT_ROOT = ROOT / "data" / "catalogs" / "v8"


def built_by(as_of: str | None, root: Path, clouds: list[str]) -> str:
    """The command line that rebuilds the same bytes, with no machine path in it."""
    parts = ["python scripts/build_snapshot.py"] + (["--as-of", as_of] if as_of else [])
    resolved = root.resolve()
    if resolved != DEFAULT_ROOT:
        inside = resolved.is_relative_to(ROOT)
        parts += ["--root", resolved.relative_to(ROOT).as_posix() if inside else "DIR"]
    return " ".join(parts + sorted(set(clouds)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("clouds", nargs="*", help="only these clouds (default: every folder)")
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT)
    parser.add_argument("--out", type=Path, help="write here instead of stdout")
    parser.add_argument(
        "--as-of", help="the catalogs' date, YYYY-MM-DD (default: from DIR/manifest.csv)"
    )
    args = parser.parse_args(argv)
    as_of = None
    if args.as_of is not None:
        try:
            as_of = datetime.strptime(args.as_of, "%Y-%m-%d").replace(tzinfo=UTC)
        except ValueError:
            parser.error(f"--as-of {args.as_of!r} is not a date like 2026-11-20")
    date = as_of.strftime("%Y-%m-%d") if as_of else None
    try:
        text = build_snapshot(
            args.root,
            as_of=as_of,
            clouds=args.clouds,
            built_by=built_by(date, args.root, args.clouds),
        )
    except ValueError as exc:
        parser.error(str(exc))
    if args.out is None:
        sys.stdout.write(text)
    else:
        args.out.write_bytes(text.encode("utf-8"))  # the same bytes on every platform
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
