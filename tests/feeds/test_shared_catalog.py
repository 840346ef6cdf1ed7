"""The SkyPilot adapter against real catalog rows (../shared/data/skypilot-catalog).

The folder sits next to the repository in the team workspace; elsewhere these tests skip.
Expected counts come from the folder's README ("Row counts") and from reading the rows.
"""

from __future__ import annotations

import pytest

from recommender.errors import CatalogError
from recommender.feeds.base import ParsedFeed
from recommender.feeds.detect import parse_any
from recommender.offers import Fabric, Offer
from tests.feeds.conftest import SHARED_CATALOG

pytestmark = pytest.mark.skipif(
    not SHARED_CATALOG.is_dir(), reason="../shared/data/skypilot-catalog is not present"
)

#: file(s) → (data rows per README, rows rejected, the reasons allowed for rejections)
SOURCES: dict[tuple[str, ...], tuple[int, int, tuple[str, ...]]] = {
    ("aws_gpu_vms.csv",): (223, 5, ("no price",)),
    ("gcp_gpu_host_vms.csv", "gcp_gpu_vms.csv"): (
        307 + 747,
        560,
        ("no host VM row", "unknown GPU 'P4'", "machine-family map", "accelerator row in"),
    ),
    ("lambda_gpu_vms.csv",): (374, 17, ("unknown GPU 'RTX6000'",)),
    ("nebius_gpu_vms.csv",): (21, 0, ()),
    ("runpod_gpu_vms.sample.csv",): (79, 0, ()),
}


def load(*names: str) -> ParsedFeed:
    return parse_any([(SHARED_CATALOG / n).read_bytes() for n in names], source=names[0])


def only(feed: ParsedFeed, **attrs: object) -> Offer:
    matches = [o for o in feed.offers if all(getattr(o, k) == v for k, v in attrs.items())]
    assert len(matches) == 1, (attrs, matches)
    return matches[0]


class TestEveryFile:
    def test_every_file_in_the_folder_is_covered(self) -> None:
        """Each vms file there is loaded by a case below (a new file needs a new case)."""
        covered = {name for names in SOURCES for name in names}
        present = {p.name for p in SHARED_CATALOG.glob("*vms*.csv")}
        assert present == covered

    @pytest.mark.parametrize("names", list(SOURCES), ids=lambda n: n[0])
    def test_row_counts_and_rejections(self, names: tuple[str, ...]) -> None:
        """Every data row is seen; rejections are few and only for the documented reasons."""
        rows, rejected, reasons = SOURCES[names]
        feed = load(*names)
        assert (feed.rows, feed.rejected) == (rows, rejected)
        assert all(any(r in e for r in reasons) for e in feed.errors), feed.errors
        assert feed.offers

    def test_the_accelerator_index_is_not_a_price_feed(self) -> None:
        """common_accelerators.csv is refused cleanly, not parsed into nonsense."""
        with pytest.raises(CatalogError, match="not a price feed"):
            load("common_accelerators.csv")


class TestKnownPrices:
    def test_aws_p5_on_demand_and_per_zone_spot(self) -> None:
        """p5.48xlarge us-east-1: 55.04 on demand; spot 19.2531 in use1-az2, 10.2397 in Atlanta."""
        feed = load("aws_gpu_vms.csv")
        assert only(feed, instance_type="p5.48xlarge", region="us-east-1", spot=False).zone == ""
        od = only(feed, instance_type="p5.48xlarge", region="us-east-1", spot=False)
        assert od.price_usd_per_hour == 55.04
        assert (od.fabric, od.fabric_gbps) == (Fabric.EFA, 3200.0)
        spot = {
            o.zone: o.price_usd_per_hour
            for o in feed.offers
            if o.instance_type == "p5.48xlarge" and o.region == "us-east-1" and o.spot
        }
        assert spot["use1-az2"] == 19.2531
        assert spot["use1-atl2-az1"] == 10.2397
        assert "use1-az1" not in spot  # its SpotPrice equals Price

    def test_aws_b300(self) -> None:
        """The one p6-b300.48xlarge row: 142.416 on demand, 33.4308 spot, 268.6 GiB per GPU."""
        feed = load("aws_gpu_vms.csv")
        od = only(feed, instance_type="p6-b300.48xlarge", spot=False)
        assert (od.gpu_id, od.price_usd_per_hour) == ("B300-288GB", 142.416)
        assert od.gpu_memory_gib == pytest.approx(275040 / 1024)
        assert only(feed, instance_type="p6-b300.48xlarge", spot=True).price_usd_per_hour == 33.4308

    def test_gcp_a3_highgpu_is_host_plus_gpus(self) -> None:
        """a3-highgpu-8g us-central1-a: host 9.46006 + 8xH100 33.60609 on demand."""
        feed = load("gcp_gpu_host_vms.csv", "gcp_gpu_vms.csv")
        spot = only(feed, instance_type="a3-highgpu-8g", zone="us-central1-a", spot=True)
        assert spot.price_usd_per_hour == pytest.approx(2.88933 + 23.9408)
        od = [
            o
            for o in feed.offers
            if o.instance_type == "a3-highgpu-8g" and o.region == "us-central1" and not o.spot
        ]
        assert [o.price_usd_per_hour for o in od] == [pytest.approx(9.46006 + 33.60609)]

    def test_lambda_and_nebius_and_runpod(self) -> None:
        """Lambda 8xH100 us-east-1 31.92; Nebius 8xH100 23.60/10.00 spot; RunPod A100 IN 1.39."""
        lam = only(load("lambda_gpu_vms.csv"), instance_type="gpu_8x_h100_sxm5", region="us-east-1")
        assert (lam.price_usd_per_hour, lam.gpu_memory_gib) == (31.92, 80.0)
        nebius = load("nebius_gpu_vms.csv")
        h100 = [o for o in nebius.offers if o.instance_type == "gpu-h100-sxm_8gpu-128vcpu-1600gb"]
        assert sorted((o.spot, o.price_usd_per_hour) for o in h100) == [(False, 23.6), (True, 10.0)]
        assert all(o.fabric is Fabric.INFINIBAND for o in h100)
        runpod = only(
            load("runpod_gpu_vms.sample.csv"), instance_type="1x_A100-80GB_SECURE", region="IN"
        )
        assert (runpod.gpu_id, runpod.price_usd_per_hour) == ("A100-PCIE-80GB", 1.39)
