"""The SkyPilot catalog adapter, specified on small vms.csv fixtures of every cloud's layout."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from recommender.errors import CatalogError
from recommender.feeds.base import ParsedFeed
from recommender.feeds.skypilot import looks_like_skypilot, parse_skypilot
from recommender.pricing.offers import Fabric
from tests.factories import only
from tests.feeds.conftest import fixture_bytes

AWS_HEADER = (
    "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price,SpotPrice,"
    "Region,AvailabilityZone,Arch"
)
LAMBDA_HEADER = (
    "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,Region,GpuInfo,SpotPrice"
)
H100_INFO = "\"{'Gpus': [{'Name': 'H100', 'Count': 8, 'MemoryInfo': {'SizeInMiB': 81920}}]}\""


def parse(*names: str, **kwargs: object) -> ParsedFeed:
    texts = [fixture_bytes(name) for name in names]
    return parse_skypilot(texts, source="test", **kwargs)  # type: ignore[arg-type]


def aws_row(
    *,
    instance: str = "p5.48xlarge",
    gpu: str = "H100",
    count: str = "8.0",
    info: str = H100_INFO,
    price: str = "55.04",
    spot: str = "",
    region: str = "us-west-2",
    zone: str = "usw2-az1",
) -> str:
    return f"{instance},{gpu},{count},192.0,2048.0,{info},{price},{spot},{region},{zone},x86_64"


def aws(*rows: str) -> ParsedFeed:
    return parse_skypilot("\n".join([AWS_HEADER, *rows]) + "\n", source="test")


class TestCloudDetection:
    @pytest.mark.parametrize(
        ("names", "provider"),
        [
            (("skypilot_aws.csv",), "aws"),
            (("skypilot_gcp_hosts.csv", "skypilot_gcp_accelerators.csv"), "gcp"),
            (("skypilot_lambda.csv",), "lambda"),
            (("skypilot_nebius.csv",), "nebius"),
            (("skypilot_runpod.csv",), "runpod"),
        ],
    )
    def test_provider_is_read_from_the_header_order_and_instance_names(
        self, names: tuple[str, ...], provider: str
    ) -> None:
        """Each cloud's header order (and Lambda/Nebius instance names) tells the provider."""
        feed = parse(*names)
        assert {o.provider for o in feed.offers} == {provider}

    def test_an_explicit_provider_wins(self) -> None:
        """A caller-named provider is used when instance names do not give the cloud away."""
        text = f"{LAMBDA_HEADER}\nh100x8,H100,8,100,1000,20.0,r1,{H100_INFO},\n"
        with pytest.raises(CatalogError, match="which cloud"):
            parse_skypilot(text, source="t")
        feed = parse_skypilot(text, source="t", provider="Nebius")
        assert feed.offers[0].provider == "nebius"

    def test_header_sniffer(self) -> None:
        """The sniffer accepts SkyPilot headers and rejects other CSVs."""
        assert looks_like_skypilot(fixture_bytes("skypilot_runpod.csv").decode())
        assert looks_like_skypilot("\ufeff" + LAMBDA_HEADER + "\r\n")
        assert not looks_like_skypilot(fixture_bytes("aws.csv").decode())


class TestAws:
    def test_on_demand_is_one_offer_per_region_and_spot_one_per_zone(self) -> None:
        """Repeated regional on-demand rows merge; each AZ's spot price is its own offer."""
        feed = parse("skypilot_aws.csv")
        od = only(feed, instance_type="p4d.24xlarge", spot=False)
        assert (od.zone, od.price_usd_per_hour) == ("", 21.96)
        spots = {o.zone: o.price_usd_per_hour for o in feed.offers if o.spot and o.gpu_count == 8}
        assert spots["use1-az1"] == 8.1234
        assert spots["use1-az2"] == 9.5

    def test_a_spot_price_without_discount_gives_no_spot_offer(self) -> None:
        """SpotPrice equal to Price (use1-az3) buys only preemption risk, so it is dropped."""
        feed = parse("skypilot_aws.csv")
        assert not [o for o in feed.offers if o.zone == "use1-az3"]

    def test_missing_on_demand_price_still_yields_the_spot_offer(self) -> None:
        """p5e.48xlarge has no on-demand price; its spot row is still an offer."""
        feed = parse("skypilot_aws.csv")
        offers = [o for o in feed.offers if o.instance_type == "p5e.48xlarge"]
        assert [(o.spot, o.zone, o.price_usd_per_hour) for o in offers] == [
            (True, "use2-az1", 18.25)
        ]

    def test_rows_without_any_price_are_counted_as_rejected(self) -> None:
        """Empty and zero prices are "no price"; a row with neither is rejected and explained."""
        feed = parse("skypilot_aws.csv")
        assert (feed.rows, feed.rejected) == (7, 2)  # the CPU-only m6i row is not counted
        assert all("no price" in e for e in feed.errors)

    def test_gpu_memory_fabric_and_host_shape_come_from_the_row(self) -> None:
        """Per-GPU memory from SizeInMiB, EFA bandwidth from the instance table, vCPUs and RAM."""
        od = only(parse("skypilot_aws.csv"), instance_type="p4d.24xlarge", spot=False)
        assert od.gpu_id == "A100-SXM-40GB"
        assert od.gpu_memory_gib == 40.0
        assert (od.fabric, od.fabric_gbps) == (Fabric.EFA, 400.0)
        assert (od.vcpus, od.ram_gib) == (96.0, 1152.0)

    def test_differing_on_demand_prices_across_zones_stay_per_zone(self) -> None:
        """When zones of one region disagree on on-demand price, each zone keeps its offer."""
        feed = aws(aws_row(zone="usw2-az1", price="55.0"), aws_row(zone="usw2-az2", price="56.0"))
        assert sorted(o.zone for o in feed.offers) == ["usw2-az1", "usw2-az2"]


class TestGcp:
    def test_host_and_accelerator_rows_are_summed_per_zone_and_count(self) -> None:
        """a3-highgpu-8g = host 10.5 + 8xH100 78.0 on demand; spot sums per zone too."""
        feed = parse("skypilot_gcp_hosts.csv", "skypilot_gcp_accelerators.csv")
        od = only(feed, instance_type="a3-highgpu-8g", spot=False)
        assert od.price_usd_per_hour == pytest.approx(88.5)
        assert (od.gpu_id, od.gpu_count, od.vcpus) == ("H100-SXM-80GB", 8, 208.0)
        spot = {
            o.zone: o.price_usd_per_hour
            for o in feed.offers
            if o.spot and o.instance_type == "a3-highgpu-8g"
        }
        assert spot["us-central1-a"] == pytest.approx(25.2)
        assert spot["us-central1-b"] == pytest.approx(26.4)
        assert (od.fabric, od.fabric_gbps) == (Fabric.ROCE, 800.0)

    def test_a_zero_host_price_is_real_for_a4(self) -> None:
        """a4-highgpu-8g hosts cost 0.0: the whole B200 price sits in the accelerator row."""
        feed = parse("skypilot_gcp_hosts.csv", "skypilot_gcp_accelerators.csv")
        od = only(feed, instance_type="a4-highgpu-8g", spot=False)
        assert od.price_usd_per_hour == 90.0
        assert od.gpu_id == "B200-180GB"
        assert not [o for o in feed.offers if o.instance_type == "a4-highgpu-8g" and o.spot]

    def test_unpaired_rows_are_rejected_with_reasons(self) -> None:
        """Attachable GPUs without a host row and hosts without GPUs are counted; A3 Edge
        hosts carry H100s like a3-highgpu (cloud.google.com/compute/docs/gpus#a3-series)."""
        feed = parse("skypilot_gcp_hosts.csv", "skypilot_gcp_accelerators.csv")
        assert (feed.rows, feed.rejected) == (9, 2)
        edge = only(feed, instance_type="a3-edgegpu-8g", spot=False)
        assert (edge.gpu_id, edge.price_usd_per_hour) == ("H100-SXM-80GB", pytest.approx(89.0))
        text = " | ".join(feed.errors)
        assert "T4x1 in us-central1-a has no host VM row (n1 with >= 4 vCPUs)" in text
        assert "no A100-80GBx1 accelerator row in europe-west4-a" in text

    def test_one_combined_file_equals_two_separate_files(self) -> None:
        """Host and accelerator rows may arrive in one vms.csv (as upstream ships it)."""
        hosts = fixture_bytes("skypilot_gcp_hosts.csv").decode()
        accels = fixture_bytes("skypilot_gcp_accelerators.csv").decode().split("\n", 1)[1]
        combined = parse_skypilot(hosts + accels, source="test")
        separate = parse("skypilot_gcp_hosts.csv", "skypilot_gcp_accelerators.csv")
        assert set(combined.offers) == set(separate.offers)

    def test_accelerator_rows_alone_cannot_be_priced(self) -> None:
        """Without host rows, no GCP offer can be priced honestly: the load fails clearly."""
        with pytest.raises(CatalogError, match="has no host VM row") as info:
            parse("skypilot_gcp_accelerators.csv")
        assert info.value.hint is not None
        assert "host VM rows" in info.value.hint


class TestLambdaNebiusRunPod:
    def test_lambda_per_gpu_memory_ignores_the_mislabelled_total(self) -> None:
        """Lambda's TotalGpuMemoryInMiB is per GPU; per-GPU memory comes from SizeInMiB."""
        od = only(
            parse("skypilot_lambda.csv"), instance_type="gpu_8x_h100_sxm5", region="us-east-1"
        )
        assert od.gpu_memory_gib == 80.0
        assert od.price_usd_per_hour == 23.92
        assert od.fabric is Fabric.ETHERNET

    def test_lambda_pcie_instances_get_the_pcie_gpu(self) -> None:
        """gpu_1x_h100_pcie says PCIe only in its name; the offer is the H100 PCIe."""
        assert only(parse("skypilot_lambda.csv"), instance_type="gpu_1x_h100_pcie").gpu_id == (
            "H100-PCIE-80GB"
        )

    def test_unknown_gpus_are_counted_not_fatal(self) -> None:
        """A GPU not in the spec table rejects its row; the rest loads. (Lambda's RTX6000 is
        the Turing Quadro RTX 6000, which the table now knows.)"""
        text = fixture_bytes("skypilot_lambda.csv").decode().replace(",RTX6000,", ",H900,")
        feed = parse_skypilot(text, source="skypilot_lambda.csv")
        assert (feed.rows, feed.rejected, len(feed.offers)) == (4, 1, 3)
        assert feed.errors == ("row 4: unknown GPU 'H900'",)
        known = parse("skypilot_lambda.csv")
        assert (known.rejected, only(known, gpu_id="QUADRO-RTX-6000").gpu_count) == (0, 1)

    def test_nebius_eight_gpu_vms_have_infiniband_and_spot(self) -> None:
        """Nebius 8-GPU H200 VMs: InfiniBand 3.2 Tb/s, and a spot offer from SpotPrice."""
        feed = parse("skypilot_nebius.csv")
        od = only(feed, gpu_count=8, spot=False)
        assert (od.fabric, od.fabric_gbps) == (Fabric.INFINIBAND, 3200.0)
        assert only(feed, gpu_count=8, spot=True).price_usd_per_hour == 12.0
        assert only(feed, gpu_id="L40S").fabric is Fabric.NONE
        assert feed.rows == 2  # the CPU preset is skipped

    def test_runpod_gb_in_size_in_mib_and_pcie_card_name(self) -> None:
        """RunPod's SizeInMiB of 80 means 80 GB; its card name 'A100 PCIe' picks the PCIe part."""
        feed = parse("skypilot_runpod.csv")
        od = only(feed, instance_type="1x_A100-80GB_SECURE")
        assert od.gpu_id == "A100-PCIE-80GB"
        assert od.gpu_memory_gib == pytest.approx(80e9 / 2**30)
        assert od.region == "US"
        assert od.zone == ""  # two datacenters at one price merge into the region
        assert not [o for o in feed.offers if o.spot]  # SpotPrice == Price: no discount


class TestBadInput:
    def test_a_truncated_last_row_is_rejected_and_the_rest_loads(self) -> None:
        """A download cut mid-row loses that row only."""
        text = fixture_bytes("skypilot_aws.csv").decode()
        cut = text[: text.rindex("p5.48xlarge") + 40]
        feed = parse_skypilot(cut, source="t")
        assert feed.rejected == 3
        assert any("truncated" in e for e in feed.errors)
        assert not [o for o in feed.offers if o.instance_type == "p5.48xlarge"]

    @pytest.mark.parametrize(
        ("row", "reason"),
        [
            (aws_row(info="\"{'Gpus': [\""), "not a Python literal"),
            (aws_row(count="0.5"), "not a whole number"),
            (aws_row(price="7000.0"), "believable"),
            (aws_row(price="-1"), "negative"),
            (aws_row(price="abc"), "not a number"),
            (aws_row(gpu="H900"), "unknown GPU"),
            (aws_row(region=""), "Region is empty"),
            (aws_row(instance=""), "InstanceType is empty"),
        ],
    )
    def test_bad_rows_are_explained(self, row: str, reason: str) -> None:
        """Each kind of bad row is rejected with a reason naming the problem."""
        feed = aws(aws_row(), row)
        assert (feed.rows, feed.rejected, len(feed.offers)) == (2, 1, 1)
        assert reason in feed.errors[0]
        assert feed.errors[0].startswith("row 2: ")

    def test_not_a_skypilot_header(self) -> None:
        """A CSV without the SkyPilot columns is refused with the expected header as the hint."""
        with pytest.raises(CatalogError, match="lacks") as info:
            parse_skypilot("a,b,c\n1,2,3\n", source="t")
        assert info.value.hint is not None
        assert "InstanceType" in info.value.hint

    def test_as_of_is_passed_through(self) -> None:
        """The catalog states no time; the caller's as-of (e.g. Last-Modified) is kept."""
        moment = datetime(2026, 11, 30, tzinfo=UTC)
        assert parse("skypilot_nebius.csv", as_of=moment).as_of == moment
        assert parse("skypilot_nebius.csv").as_of is None


class TestHugeInstances:
    def test_an_instance_price_beyond_any_offer_is_a_rejected_row(self) -> None:
        """A 128-GPU row at $11,520/h is rejected with a reason, not raised out of the parse."""
        header = (
            "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,Region,"
            "GpuInfo,SpotPrice\n"
        )
        info = (
            "\"{'Gpus': [{'Name': 'H100', 'Manufacturer': 'NVIDIA', 'Count': %d.0, "
            "'MemoryInfo': {'SizeInMiB': 81920}}], 'TotalGpuMemoryInMiB': 81920}\""
        )
        huge = f"gpu_128x_h100,H100,128.0,88.0,448.0,11520.0,us-east-1,{info % 128},\n"
        fine = f"gpu_8x_h100,H100,8.0,88.0,448.0,23.92,us-east-1,{info % 8},\n"
        feed = parse_skypilot(header + huge + fine, source="lambda", provider="lambda")
        assert (feed.rows, feed.rejected, len(feed.offers)) == (2, 1, 1)
        assert "implausible" in feed.errors[0]

    def test_a_spot_price_beyond_any_offer_is_a_rejected_row(self) -> None:
        """A 128-GPU spot-only row at $11,520/h is rejected too (it used to raise ValueError)."""
        huge = aws_row(instance="p9.huge", count="128.0", price="", spot="11520.0")
        fine = aws_row(spot="20.5")
        feed = aws(huge, fine)
        assert (feed.rows, feed.rejected, len(feed.offers)) == (2, 1, 2)
        assert feed.errors == ("row 1: price 11520 USD/h for the instance is implausible",)


def test_on_demand_rows_of_a_region_become_one_offer_or_one_per_zone() -> None:
    """Equal prices (to 1e-6) across a region's zones are one regional offer; differing ones
    stay per zone, a repeated zone's last row winning, in first-seen order, with its shape."""
    rows = [
        aws_row(price="55.0400001", region="us-east-1", zone="a"),
        aws_row(price="55.0400002", region="us-east-1", zone="b"),
        aws_row(price="50", region="eu-west-1", zone="x"),
        aws_row(price="51", region="eu-west-1", zone="y"),
        aws_row(price="52", region="eu-west-1", zone="x").replace(",192.0,", ",96.0,"),
        aws_row(price="60", region="ap-south-1", zone="z"),
    ]
    feed = aws(*rows)
    assert [(o.region, o.zone, o.price_usd_per_hour, o.vcpus) for o in feed.offers] == [
        ("us-east-1", "", 55.0400001, 192.0),
        ("eu-west-1", "x", 52.0, 96.0),
        ("eu-west-1", "y", 51.0, 192.0),
        ("ap-south-1", "", 60.0, 192.0),
    ]


def test_a_gpu_name_stating_its_memory_is_not_overridden_by_gpu_info() -> None:
    """ "A100-40GB" with 80 GiB in GpuInfo contradicts itself: rejected, not made an 80 GB."""
    info = "\"{'Gpus': [{'Name': 'A100', 'MemoryInfo': {'SizeInMiB': 81920}}]}\""
    feed = aws(aws_row(), aws_row(instance="p4de.24xlarge", gpu="A100-40GB", info=info))
    assert feed.rejected == 1
    assert "GPU memory 80 GiB does not match GPU 'A100-40GB'" in feed.errors[0]
