"""scripts/build_snapshot.py: the bundled snapshot from local catalogs, through the live
adapters and sanity checks, deterministically; the shipped file is its output, byte for byte."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path

import pytest

from recommender.feeds.bundled import bundled_catalog, load_bundled
from recommender.feeds.native import parse_native
from recommender.feeds.skypilot import CLOUDS
from recommender.feeds.snapshot_build import build_snapshot, cheapest_regions
from recommender.pricing.offers import Offer
from tests.feeds.conftest import CATALOGS, catalog_clouds

ROOT = Path(__file__).resolve().parents[2]
AS_OF = datetime(2026, 11, 20, tzinfo=UTC)
#: The snapshot's inputs, the script's default --root.
INPUTS = ROOT / "data" / "catalogs" / "v8"
#: The command that writes the shipped file, as docs/feed-format.md gives it.
SHIPPED_ARGS = ("--as-of", "2026-11-20", "--out", "recommender/data/snapshot.json")
SHIPPED_COMMAND = "python scripts/build_snapshot.py " + " ".join(SHIPPED_ARGS)


def run_script(*args: str | Path) -> None:
    subprocess.run(
        [sys.executable, "scripts/build_snapshot.py", *args], cwd=ROOT, check=True, timeout=120
    )


class TestTheShippedSnapshot:
    def test_is_the_documented_command_s_output(self, tmp_path: Path) -> None:
        """The packaged snapshot is exactly what the documented command writes; a change to
        the inputs, the adapters or the screen that moves a price fails here until the file
        is regenerated with that command (and the golden answers reviewed)."""
        out = tmp_path / "snapshot.json"
        run_script(*SHIPPED_ARGS[:-1], out)
        shipped = resources.files("recommender").joinpath("data/snapshot.json").read_bytes()
        assert out.read_bytes() == shipped, f"regenerate it: {SHIPPED_COMMAND}"

    def test_names_its_command_and_the_docs_give_it(self) -> None:
        """The file's header and the docs both carry the command; the header's version has
        no --out, which does not change the bytes."""
        text = resources.files("recommender").joinpath("data/snapshot.json").read_text("utf-8")
        header = json.loads(text)
        assert SHIPPED_COMMAND.startswith(header["x_built_by"] + " --out ")
        assert SHIPPED_COMMAND in (ROOT / "docs" / "feed-format.md").read_text("utf-8")

    def test_the_docs_count_its_offers_right(self) -> None:
        """docs/feed-format.md's total and per-cloud table match the shipped file."""
        doc = (ROOT / "docs" / "feed-format.md").read_text("utf-8")
        section = doc[doc.index("## The bundled snapshot") :]
        offers = load_bundled().offers
        by_cloud = Counter(o.provider for o in offers)
        total = re.search(r"it holds (\d+) offers from (\d+) clouds", section)
        assert total is not None
        assert (int(total[1]), int(total[2])) == (len(offers), len(by_cloud))
        table = dict(re.findall(r"^\| (\w+) \| (\d+) ", section, flags=re.MULTILINE))
        assert {c: int(n) for c, n in table.items()} == dict(by_cloud)

    def test_x_inputs_are_the_inputs_first_lines(self) -> None:
        """Each input's provenance line travels into the file, one per cloud read."""
        text = resources.files("recommender").joinpath("data/snapshot.json").read_text("utf-8")
        inputs = json.loads(text)["x_inputs"]
        assert sorted(inputs) == sorted(p.parent.name for p in INPUTS.glob("*/vms.csv"))
        for cloud, line in inputs.items():
            first = (INPUTS / cloud / "vms.csv").read_text("utf-8").splitlines()[0]
            assert first == f"# {line}"


class TestInputs:
    @pytest.mark.parametrize("path", sorted(INPUTS.glob("*/vms.csv")), ids=lambda p: p.parent.name)
    def test_each_names_its_upstream_file_and_commit(self, path: Path) -> None:
        """Every input is real catalog rows: its first line names the upstream file and the
        commit the rows were taken at, and the cloud is one the SkyPilot adapter reads."""
        cloud = path.parent.name
        first = path.read_text("utf-8").splitlines()[0]
        assert first.startswith("# Rows ")
        assert re.search(rf"catalogs/v8/{cloud}/vms\.csv @ [0-9a-f]{{40}}\b", first), first
        assert cloud in CLOUDS


class TestTheScript:
    def test_is_deterministic_and_writes_a_valid_feed(self, tmp_path: Path) -> None:
        """Two runs over the real-row fixtures give the same bytes; every cloud comes through."""
        outs = []
        for name in ("a.json", "b.json"):
            out = tmp_path / name
            run_script("--as-of", "2026-11-20", "--root", CATALOGS, "--out", out)
            outs.append(out.read_bytes())
        assert outs[0] == outs[1]
        feed = parse_native(outs[0], source="snapshot")
        assert feed.rejected == 0
        assert feed.as_of == AS_OF
        assert {o.provider for o in feed.offers} == set(catalog_clouds())
        header = json.loads(outs[0])
        assert header["x_built_by"] == (
            "python scripts/build_snapshot.py --as-of 2026-11-20"
            " --root tests/feeds/data/catalogs/v8"
        )

    def test_an_unknown_cloud_is_a_clear_error(self) -> None:
        result = subprocess.run(
            [sys.executable, "scripts/build_snapshot.py", "--as-of", "2026-11-20", "ibm"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert result.returncode == 2
        assert "no <cloud>/vms.csv under" in result.stderr
        assert "for: ibm" in result.stderr
        assert "Traceback" not in result.stderr


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


class TestRegionCut:
    """Each (cloud, GPU, GPU count, market) keeps its REGIONS_KEPT cheapest regions."""

    @staticmethod
    def _offer(region: str, price: float, *, spot: bool = False, zone: str = "") -> Offer:
        return Offer(
            provider="aws",
            instance_type="g6.xlarge",
            gpu_id="L4",
            gpu_count=1,
            price_usd_per_hour=price,
            spot=spot,
            region=region,
            zone=zone,
            source="s",
        )

    def test_the_cheapest_regions_with_every_zone(self) -> None:
        offers = [
            self._offer("r1", 1.0),
            self._offer("r2", 0.9),
            self._offer("r3", 0.8),
            self._offer("r4", 0.7),
            self._offer("r5", 0.95),
        ]
        kept = cheapest_regions(offers, keep=3)
        assert [o.region for o in kept] == ["r2", "r3", "r4"]
        zones = [self._offer("r1", 0.5, spot=True, zone=z) for z in ("a", "b")]
        assert cheapest_regions(zones, keep=1) == zones

    def test_a_spot_region_keeps_its_on_demand_offers(self) -> None:
        """So the spot discount stays measurable (the real eu-south-2 g6.xlarge spot, 89 %
        under its own on-demand, is kept with its on-demand row though us-east-1 is cheaper on
        demand)."""
        offers = [
            self._offer("us-east-1", 0.8048),
            self._offer("eu-south-2", 0.848),
            self._offer("eu-south-2", 0.0913, spot=True, zone="eus2-az3"),
        ]
        kept = cheapest_regions(offers, keep=1)
        assert [(o.region, o.spot) for o in kept] == [
            ("us-east-1", False),
            ("eu-south-2", False),
            ("eu-south-2", True),
        ]


def test_rejected_rows_and_their_reasons_travel_with_the_snapshot() -> None:
    """The fixtures' rejected rows (Vast's 48 GB "RTX 4090", Seeweb's rows with no region)
    are in ``x_rejected``, and the bundled catalog's source carries them for `prices`."""
    document = json.loads(build_snapshot(CATALOGS, as_of=AS_OF))
    assert document["x_rejected"]["vast"]["rows"] == 1
    assert "does not match GPU 'RTX4090'" in document["x_rejected"]["vast"]["reasons"][0]
    assert document["x_rejected"]["seeweb"]["rows"] == 4
    [source] = bundled_catalog().sources
    shipped = json.loads(resources.files("recommender").joinpath("data/snapshot.json").read_text())
    assert source.rejected == sum(e["rows"] for e in shipped["x_rejected"].values())
    assert any(r.startswith("vast row ") for r in source.rejections)
