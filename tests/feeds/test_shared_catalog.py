"""The SkyPilot adapter against real catalog rows, served as the catalog's host serves them.

The rows are verbatim copies from ``skypilot-org/skypilot-catalog`` (``catalogs/v8/<cloud>/
vms.csv``), or, for Azure, from a fork of it that has the file, kept in
``tests/feeds/data/catalogs/v8/``; each file's first line names its repository and commit.
A loopback HTTP server serves them at their published paths with ``Last-Modified`` and
``ETag``, and the cloud is taken from the URL where the header does not tell it.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import httpx
import pytest

from recommender.feeds.base import ParsedFeed, resolve_gpu
from recommender.feeds.detect import parse_any
from recommender.feeds.fetch import Validators, fetch_all
from recommender.feeds.skypilot import CLOUDS, cloud_from_location
from recommender.pricing.offers import Fabric
from tests.factories import only
from tests.feeds.conftest import CATALOGS, FeedServer, catalog_bytes, catalog_clouds

UPSTREAM = "https://raw.githubusercontent.com/skypilot-org/skypilot-catalog/master"
#: The repository a fixture's rows come from: the catalog's, or a fork of it named as one.
SOURCE_REPO = re.compile(
    r"# Rows copied verbatim from (skypilot-org/skypilot-catalog"
    r"|[\w.-]+/skypilot-catalog \(a fork of skypilot-org/skypilot-catalog\)) "
)
LAST_MODIFIED = "Tue, 18 Nov 2025 06:12:44 GMT"

#: cloud → (data rows, rows rejected, the reasons allowed for rejections)
EXPECTED: dict[str, tuple[int, int, tuple[str, ...]]] = {
    "aws": (20, 5, ("no price",)),  # p5e.48xlarge rows without a price
    # 3 rows with no AcceleratorName are skipped; ND96isr_H100_v5 lists 12 GPUs where Azure
    # has 8.
    "azure": (21, 1, ("contradicts Azure's 8 GPUs",)),
    "cudo": (5, 0, ()),
    "daytona": (6, 0, ()),  # and one CPU-only row, not a GPU row
    # L4x1 and L4x8 have no g2-standard row here, H100x1 no a3-highgpu-1g row; T4 and P4
    # pair with n1-highcpu-96, A100x1 with a2-highgpu-1g.
    "gcp": (16, 3, ("no host VM row (g2-standard)", "H100x1 in us-central1-a has no host")),
    "hyperbolic": (3, 0, ()),
    # GpuInfo cells with a JSON null ('Manufacturer': null).
    "hyperstack": (6, 0, ()),
    "jarvislabs": (5, 0, ()),
    "lambda": (4, 0, ()),
    "lium": (7, 0, ()),  # RTXPRO6000-WK: the RTX PRO 6000 Workstation Edition
    # The H200 row lists 153,600 MiB (150 GiB) per GPU: no H200 has that; rejected.
    "mithril": (4, 1, ("GPU memory 150 GiB does not match GPU 'H200'",)),
    "nebius": (5, 0, ()),
    "oci": (10, 0, ()),
    # JSON GpuInfo whose SizeInMiB is the instance's total (as Vast's).
    "primeintellect": (6, 0, ()),
    "runpod": (6, 0, ()),
    # Four rows have no Region: no place to launch them (SkyPilot matches none either).
    "seeweb": (10, 4, ("Region is empty",)),
    "shadeform": (10, 0, ()),  # an A16, a virtual-desktop card, among them
    # An "H100_NVL" listing 80 GiB per GPU: the H100 NVL has 94 GB; rejected, not relabelled.
    "spheron": (10, 1, ("GPU memory 80 GiB does not match GPU 'H100 NVL'",)),
    # One Hong Kong "RTX 4090" lists 48 GB: a modded card, not an RTX 4090 24GB.
    "vast": (9, 1, ("GPU memory 47.9883 GiB does not match GPU 'RTX4090'",)),
    "verda": (10, 0, ()),  # and one CPU-only row, not a GPU row
    "yotta": (3, 0, ()),
}


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as http:
        yield http


async def load(feed_server: FeedServer, client: httpx.AsyncClient, cloud: str) -> ParsedFeed:
    """Fetch one cloud's catalog over HTTP and parse it as the refresher does."""
    url = feed_server.serve_catalogs(LAST_MODIFIED)[cloud]
    [result] = await fetch_all([url], client=client)
    assert result.fetched is not None, result.error
    assert result.fetched.body is not None
    return parse_any(
        result.fetched.body,
        source=url,
        as_of=result.fetched.modified_at,
        provider=cloud_from_location(url),
    )


def local(cloud: str) -> ParsedFeed:
    return parse_any(catalog_bytes(cloud), source=f"catalogs/v8/{cloud}/vms.csv")


class TestFixtures:
    def test_every_fixture_names_its_source_and_is_covered(self) -> None:
        """Each fixture starts with a comment naming the repository, file and commit."""
        assert set(catalog_clouds()) == set(EXPECTED)
        for cloud in catalog_clouds():
            first = (CATALOGS / cloud / "vms.csv").read_text().splitlines()[0]
            assert SOURCE_REPO.match(first), first
            assert f"catalogs/v8/{cloud}/vms.csv @ " in first
            assert cloud in CLOUDS

    @pytest.mark.parametrize("cloud", sorted(EXPECTED))
    async def test_rows_over_http(
        self, feed_server: FeedServer, client: httpx.AsyncClient, cloud: str
    ) -> None:
        """Every data row is seen; rejections are few, for the documented reasons; the
        catalog's date is its Last-Modified, not the fetch time."""
        rows, rejected, reasons = EXPECTED[cloud]
        feed = await load(feed_server, client, cloud)
        assert (feed.rows, feed.rejected) == (rows, rejected), feed.errors
        assert all(any(r in e for r in reasons) for e in feed.errors), feed.errors
        assert {o.provider for o in feed.offers} == {cloud}
        assert feed.as_of == datetime(2025, 11, 18, 6, 12, 44, tzinfo=UTC)

    async def test_an_unchanged_catalog_costs_a_304(
        self, feed_server: FeedServer, client: httpx.AsyncClient
    ) -> None:
        """A refresh with the ETag or the Last-Modified of the last fetch gets no body."""
        url = feed_server.serve_catalogs(LAST_MODIFIED)["aws"]
        [first] = await fetch_all([url], client=client)
        assert first.fetched is not None
        by_etag = {url: first.fetched.validators}
        by_date = {url: Validators(last_modified=LAST_MODIFIED)}
        for validators in (by_etag, by_date):
            [again] = await fetch_all([url], client=client, validators=validators)
            assert again.fetched is not None
            assert again.fetched.not_modified
            assert again.fetched.body is None

    @pytest.mark.parametrize(
        ("location", "cloud"),
        [
            (f"{UPSTREAM}/catalogs/v8/vast/vms.csv", "vast"),
            ("/srv/catalogs/v7/do/vms.csv", "do"),
            ("gcp_gpu_host_vms.csv", "gcp"),
            ("https://example.com/prices.csv", None),
        ],
    )
    def test_the_cloud_comes_from_the_url_or_path(self, location: str, cloud: str | None) -> None:
        assert cloud_from_location(location) == cloud


class TestKnownPrices:
    def test_aws_p5_on_demand_and_per_zone_spot(self) -> None:
        """p5.48xlarge us-east-1: 55.04 on demand; spot 19.2531 in use1-az2, 10.2397 in Atlanta."""
        feed = local("aws")
        od = only(feed, instance_type="p5.48xlarge", region="us-east-1", spot=False)
        assert (od.zone, od.price_usd_per_hour) == ("", 55.04)
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
        feed = local("aws")
        od = only(feed, instance_type="p6-b300.48xlarge", spot=False)
        assert (od.gpu_id, od.price_usd_per_hour) == ("B300-288GB", 142.416)
        assert od.gpu_memory_gib == pytest.approx(275040 / 1024)
        assert only(feed, instance_type="p6-b300.48xlarge", spot=True).price_usd_per_hour == 33.4308

    def test_gcp_fixed_families_incl_edge_and_nolssd(self) -> None:
        """a3-highgpu-8g, a3-edgegpu-8g(-nolssd) = host 9.46006 + 8xH100 33.60609;
        a3-ultragpu-8g-nolssd = 12.266 + 8xH200 74.49392; a4 = 0.0 + 8xB200 90.216."""
        feed = local("gcp")
        for shape in ("a3-highgpu-8g", "a3-edgegpu-8g", "a3-edgegpu-8g-nolssd"):
            od = only(feed, instance_type=shape, spot=False)
            assert (od.gpu_id, od.gpu_count) == ("H100-SXM-80GB", 8)
            assert od.price_usd_per_hour == pytest.approx(9.46006 + 33.60609)
        h200 = only(feed, instance_type="a3-ultragpu-8g-nolssd", spot=False)
        assert (h200.gpu_id, h200.price_usd_per_hour) == (
            "H200-SXM-141GB",
            pytest.approx(12.266 + 74.49392),
        )
        b200 = only(feed, instance_type="a4-highgpu-8g", spot=False)
        assert b200.price_usd_per_hour == pytest.approx(90.216)

    def test_gcp_attachable_gpus_take_the_cheapest_fitting_n1_host(self) -> None:
        """T4x1 needs an n1 host with >= 4 vCPUs and 16 GiB: n1-highcpu-8 (7.2 GiB) does not
        fit, n1-highcpu-96 does: 3.40073 + 0.35 on demand, 0.94435 + 0.175 spot."""
        feed = local("gcp")
        od = only(feed, gpu_id="T4", spot=False)
        assert od.instance_type == "n1-highcpu-96"
        assert od.price_usd_per_hour == pytest.approx(3.40073 + 0.35)
        spot = only(feed, gpu_id="T4", spot=True)
        assert spot.price_usd_per_hour == pytest.approx(0.94435 + 0.175)
        assert only(feed, gpu_id="P4", spot=False).instance_type == "n1-highcpu-96"

    def test_lambda_nebius_runpod(self) -> None:
        """Lambda 8xH100 us-east-1 31.92; Nebius 8xH100 23.60/10.00 spot; RunPod A100 IN 1.39."""
        lam = only(local("lambda"), instance_type="gpu_8x_h100_sxm5", region="us-east-1")
        assert (lam.price_usd_per_hour, lam.gpu_memory_gib) == (31.92, 80.0)
        h100 = [o for o in local("nebius").offers if o.instance_type.startswith("gpu-h100-sxm_8")]
        assert sorted((o.spot, o.price_usd_per_hour) for o in h100) == [(False, 23.6), (True, 10.0)]
        assert all(o.fabric is Fabric.INFINIBAND for o in h100)
        runpod = only(local("runpod"), instance_type="1x_A100-80GB_SECURE", region="IN")
        assert (runpod.gpu_id, runpod.price_usd_per_hour) == ("A100-PCIE-80GB", 1.39)

    def test_seeweb_shadeform_spheron_verda_cards(self) -> None:
        """Shadeform's SizeInMiB holds GB (48 = an A6000, 40 = an A100 40GB); Spheron names
        carry form factor and bare-metal flags; Verda's B300 lists 262 GiB of its 288 GB;
        Seeweb's "RTX6000" with 24 GiB is the Quadro RTX 6000, its "RTX PRO 6000 96GB" (listed
        with 0 MiB and no region) a known name."""
        shade = local("shadeform")
        a6000 = only(shade, instance_type="massedcompute_A6000x8")
        assert (a6000.gpu_id, a6000.gpu_count) == ("RTX-A6000", 8)
        assert a6000.gpu_memory_gib == pytest.approx(48e9 / 2**30)
        assert only(shade, instance_type="denvr_A100-sxm4x8").gpu_id == "A100-SXM-40GB"
        assert only(shade, instance_type="excesssupply_H200x8").gpu_id == "H200-SXM-141GB"
        spheron = local("spheron")
        names = {o.instance_type: o.gpu_id for o in spheron.offers}
        assert names["A100_sxm4x8_66b9a4e034c5c91a4d6a625d_calgary-canada-1"] == "A100-SXM-80GB"
        assert names["L40Sx8_67884c00280fba46a71e23ed_raleigh-usa-1"] == "L40S"
        assert names["H100_668d6762247d03149a4c9468_dallas-usa-1"] == "H100-PCIE-80GB"
        assert names["RTX5090_6788f4c0280fba46a71eb46f_oslo-norway-3"] == "RTX-5090"
        spot_only = only(spheron, instance_type="n3-A100x1-spot__CANADA-1")
        assert (spot_only.spot, spot_only.price_usd_per_hour) == (True, 1.1476)
        b300 = only(local("verda"), instance_type="1B300.30V", spot=False)
        assert (b300.gpu_id, b300.gpu_memory_gib) == ("B300-288GB", pytest.approx(262.0))
        quadro = only(local("seeweb"), instance_type="ECS1GPU")
        assert (quadro.gpu_id, quadro.gpu_memory_gib) == ("QUADRO-RTX-6000", 24.0)
        assert resolve_gpu("RTX PRO 6000 96GB") == "RTX-PRO-6000"

    def test_vast_memory_is_per_gpu_whatever_the_file_lists(self) -> None:
        """Vast lists machine totals: 2x A100 with 81,920 MiB is two 40 GB cards, 8x RTX 4090
        with 196,512 MiB eight 24 GB cards; 1x A100 PCIe with 81,920 MiB is one 80 GB card."""
        feed = local("vast")
        two = only(feed, instance_type="2x-A100_SXM4-32-65536")
        assert (two.gpu_id, two.gpu_count, two.gpu_memory_gib) == ("A100-SXM-40GB", 2, 40.0)
        eight = only(feed, instance_type="8x-RTX_4090-32-65536")
        assert (eight.gpu_id, eight.gpu_memory_gib) == ("RTX-4090", pytest.approx(23.99, 0.01))
        assert only(feed, instance_type="1x-A100_PCIE-32-65536").gpu_id == "A100-PCIE-80GB"
        assert only(feed, instance_type="2x-RTX_5090-32-65536").gpu_id == "RTX-5090"
        assert not [o for o in feed.offers if o.spot]  # SpotPrice 0.00 is "no spot price"

    def test_oci_and_cudo_current_gpus(self) -> None:
        """OCI lists GB200, GB300, B300, MI300X, MI355X and RTX PRO 6000; Cudo A800 and H100."""
        oci = {o.instance_type: o.gpu_id for o in local("oci").offers}
        assert oci["BM.GPU.GB300.4"] == "GB300-288GB"
        assert oci["BM.GPU.MI355X.8"] == "MI355X"
        assert oci["BM.GPU.RTXPRO.8"] == "RTX-PRO-6000"
        assert oci["BM.GPU.A100-v2.8"] == "A100-SXM-80GB"
        cudo = {o.instance_type: o.gpu_id for o in local("cudo").offers}
        assert cudo["intel-ice-lake-a800-pci_1x2v4gb"] == "A800-80GB"
        assert cudo["sapphire-rapids-h100_1x2v4gb"] == "H100-SXM-80GB"

    def test_newer_clouds_per_gpu_memory(self) -> None:
        """Prime Intellect lists the instance's total in SizeInMiB (8x A100 80GB: 655,360 MiB)
        as Vast does; Hyperstack's cells carry a JSON null and its own GPU names; Daytona,
        Jarvislabs, Lium, Yotta and Hyperbolic list per-GPU memory."""
        prime = local("primeintellect")
        eight = only(prime, instance_type="lambdalabs__8xA100_80GB__240__1800")
        assert (eight.gpu_id, eight.gpu_count, eight.gpu_memory_gib) == ("A100-SXM-80GB", 8, 80.0)
        spot = only(prime, instance_type="datacrunch__2xA100_80GB__44__240__SPOT")
        assert (spot.spot, spot.price_usd_per_hour, spot.zone) == (True, 1.05, "FIN-01")
        hyper = {o.instance_type: (o.gpu_id, o.gpu_count) for o in local("hyperstack").offers}
        assert hyper["n3-A100x1"] == ("A100-PCIE-80GB", 1)
        assert hyper["n3-H100-SXM5x8"] == ("H100-SXM-80GB", 8)
        assert hyper["n3-H100x2"] == ("H100-PCIE-80GB", 2)
        day = only(local("daytona"), instance_type="4x-MI355X", spot=False)
        assert (day.gpu_id, day.gpu_count, day.gpu_memory_gib) == ("MI355X", 4, 288.0)
        lium = only(local("lium"), instance_type="B300_8x")
        assert (lium.gpu_id, lium.gpu_memory_gib) == ("B300-288GB", 269.0)
        yotta = only(local("yotta"), instance_type="8x112v952g_NVIDIA_GeForce_RTX_5090_32G_SECURE")
        assert (yotta.gpu_id, yotta.gpu_count) == ("RTX-5090", 8)
        assert yotta.gpu_memory_gib == pytest.approx(31.84, abs=0.01)
        jarvis = only(local("jarvislabs"), instance_type="8x_H100_192V_1600G")
        assert (jarvis.gpu_id, jarvis.gpu_memory_gib, jarvis.provider) == (
            "H100-SXM-80GB",
            80.0,
            "jarvislabs",
        )


class TestRealAge:
    async def test_the_stale_caveat_counts_from_last_modified_not_the_fetch(
        self, feed_server: FeedServer
    ) -> None:
        """A catalog fetched just now but last modified in November 2025 is stale by its own
        date: the answer's caveat says so, however fresh the fetch."""
        from bot.catalog import load_sources
        from recommender import CaveatKind, parse_workload, recommend
        from recommender.feeds import utc_now

        url = feed_server.serve_catalogs(LAST_MODIFIED)["aws"]
        catalog = await load_sources([f"aws={url}"])
        [source] = catalog.sources
        assert source.fetched_at is not None
        assert source.as_of == datetime(2025, 11, 18, 6, 12, 44, tzinfo=UTC)
        now = utc_now()
        rec = recommend(parse_workload("7b lora on 1B tokens"), catalog, now=now)
        stale = [c for o in rec.options for c in o.caveats if c.kind is CaveatKind.STALE_PRICES]
        assert stale
        assert "as of 2025-11-18" in stale[0].text
        assert (now - source.fetched_at).total_seconds() < 600  # the fetch itself is fresh
