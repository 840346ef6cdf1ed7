"""scripts/build_snapshot.py: the bundled snapshot from local catalogs, through the live
adapters and sanity checks, deterministically."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from recommender.feeds.detect import parse_any
from recommender.feeds.native import parse_native
from recommender.feeds.snapshot_build import build_snapshot
from recommender.sanity import screen
from tests.feeds.conftest import CATALOGS, catalog_bytes, catalog_clouds

ROOT = Path(__file__).resolve().parents[2]
AS_OF = datetime(2026, 11, 20, tzinfo=UTC)


def test_the_script_is_deterministic_and_its_output_a_valid_feed(tmp_path: Path) -> None:
    outs = []
    for name in ("a.json", "b.json"):
        out = tmp_path / name
        subprocess.run(
            [sys.executable, "scripts/build_snapshot.py", "--as-of", "2026-11-20", "--out", out],
            cwd=ROOT,
            check=True,
            timeout=120,
        )
        outs.append(out.read_bytes())
    assert outs[0] == outs[1]
    feed = parse_native(outs[0], source="snapshot")
    assert feed.rejected == 0
    assert feed.as_of == AS_OF
    assert {o.provider for o in feed.offers} == set(catalog_clouds())


def test_every_offer_is_one_the_live_pipeline_prices() -> None:
    feed = parse_native(build_snapshot(CATALOGS, as_of=AS_OF), source="snapshot")
    live = []
    for cloud in catalog_clouds():
        url = f"https://example.test/catalogs/v8/{cloud}/vms.csv"
        live.extend(parse_any(catalog_bytes(cloud), source=url, as_of=AS_OF).offers)
    kept = screen(live).offers
    assert len(feed.offers) == len(kept)
    prices = {(o.provider, o.region, o.zone, o.spot, o.gpu_id, o.price_usd_per_hour) for o in kept}
    for o in feed.offers:
        assert (o.provider, o.region, o.zone, o.spot, o.gpu_id, o.price_usd_per_hour) in prices


def test_only_named_clouds() -> None:
    feed = parse_native(build_snapshot(CATALOGS, as_of=AS_OF, clouds=["lambda"]), source="s")
    assert {o.provider for o in feed.offers} == {"lambda"}
