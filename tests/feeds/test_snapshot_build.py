"""scripts/build_snapshot.py: the bundled snapshot from local catalogs, through the live
adapters and sanity checks, deterministically."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

from recommender.feeds.native import parse_native
from recommender.feeds.snapshot_build import build_snapshot
from tests.feeds.conftest import CATALOGS, catalog_clouds

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


def test_prices_are_the_fixture_rows_as_listed() -> None:
    """Prices copied from the fixture rows (tests/feeds/data/catalogs/v8) come through as
    listed; the p4d spot row priced at its on-demand rate buys nothing, so it is left out."""
    feed = parse_native(build_snapshot(CATALOGS, as_of=AS_OF), source="snapshot")
    prices = {(o.provider, o.instance_type, o.region, o.zone, o.spot): o for o in feed.offers}
    lam = prices["lambda", "gpu_8x_h100_sxm5", "us-east-1", "", False]
    assert (lam.gpu_id, lam.gpu_count, lam.price_usd_per_hour) == ("H100-SXM-80GB", 8, 31.92)
    p5 = prices["aws", "p5.48xlarge", "us-east-1", "", False]
    assert (p5.gpu_count, p5.price_usd_per_hour) == (8, 55.04)
    assert prices["aws", "p5.48xlarge", "us-east-1", "use1-az2", True].price_usd_per_hour == 19.2531
    assert prices["aws", "p4d.24xlarge", "ap-south-1", "", False].price_usd_per_hour == 26.3444
    p4d_spot = [k for k in prices if k[:3] == ("aws", "p4d.24xlarge", "ap-south-1") and k[4]]
    assert p4d_spot == []


def test_only_named_clouds() -> None:
    feed = parse_native(build_snapshot(CATALOGS, as_of=AS_OF, clouds=["lambda"]), source="s")
    assert {o.provider for o in feed.offers} == {"lambda"}


def test_gpus_sharing_a_gcp_host_keep_its_instance_type() -> None:
    """The fixture's n1-highcpu-96 carries a P4 and a T4 in one zone: two offers with their
    own keys, each with the instance type SkyPilot knows (what `gpufit launch` writes)."""
    feed = parse_native(build_snapshot(CATALOGS, as_of=AS_OF, clouds=["gcp"]), source="s")
    assert feed.rejected == 0
    on_n1 = [o for o in feed.offers if o.instance_type.startswith("n1-")]
    assert {o.instance_type for o in on_n1} == {"n1-highcpu-96"}
    assert sorted((o.gpu_id, o.spot) for o in on_n1) == [
        ("P4", False),
        ("P4", True),
        ("T4", False),
        ("T4", True),
    ]
    assert len({o.key for o in on_n1}) == 4
