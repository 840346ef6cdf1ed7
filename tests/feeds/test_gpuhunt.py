"""The gpuhunt catalog adapter: dstack's per-provider CSV."""

from __future__ import annotations

import pytest

from recommender.errors import CatalogError
from recommender.feeds.base import ParsedFeed
from recommender.feeds.gpuhunt import (
    GPUHUNT_COLUMNS,
    looks_like_gpuhunt,
    parse_gpuhunt,
    provider_from_location,
)
from recommender.pricing.offers import Fabric
from tests.factories import only
from tests.feeds.conftest import fixture_bytes

HEADER = ",".join(GPUHUNT_COLUMNS)


def row(
    *,
    name: str = "p5.48xlarge",
    location: str = "us-east-1",
    price: str = "55.04",
    count: str = "8",
    gpu: str = "H100",
    memory: str = "80.0",
    spot: str = "False",
    vendor: str = "nvidia",
) -> str:
    return f"{name},{location},{price},192,2048.0,{count},{gpu},{memory},{spot},,{vendor},,x86,"


def catalog(*rows: str, source: str = "aws.csv") -> ParsedFeed:
    return parse_gpuhunt("\n".join([HEADER, *rows]) + "\n", source=source)


class TestProvider:
    @pytest.mark.parametrize(
        ("location", "provider"),
        [
            ("aws.csv", "aws"),
            ("/tmp/catalogs/gcp.csv", "gcp"),
            ("https://bucket.example/v3/lambdalabs.csv", "lambda"),
            ("https://bucket.example/vastai.csv?x=1", "vast"),
            ("catalog.csv", None),
            ("prices", None),
        ],
    )
    def test_provider_comes_from_the_file_name(self, location: str, provider: str | None) -> None:
        """gpuhunt names each file after its provider; gpufit maps its names to billing ids."""
        assert provider_from_location(location) == provider

    def test_an_unnamed_file_needs_an_explicit_provider(self) -> None:
        """Without a provider file name or argument, the load fails with a hint."""
        text = fixture_bytes("aws.csv")
        with pytest.raises(CatalogError, match="which provider"):
            parse_gpuhunt(text, source="https://example.com/latest")
        feed = parse_gpuhunt(text, source="https://example.com/latest", provider="aws")
        assert {o.provider for o in feed.offers} == {"aws"}


class TestRows:
    def test_spot_and_on_demand_are_separate_rows(self) -> None:
        """Each row is one offer; spot is read from the spot column."""
        feed = parse_gpuhunt(fixture_bytes("aws.csv"), source="aws.csv")
        assert only(feed, instance_type="p5.48xlarge", spot=False).price_usd_per_hour == 55.04
        assert only(feed, instance_type="p5.48xlarge", spot=True).price_usd_per_hour == 18.5

    def test_memory_is_gb_per_gpu(self) -> None:
        """gpu_memory is the vendor's GB per GPU, stored as GiB; 40 GB picks the A100 40GB."""
        feed = parse_gpuhunt(fixture_bytes("aws.csv"), source="aws.csv")
        a100 = only(feed, instance_type="p4d.24xlarge")
        assert a100.gpu_id == "A100-SXM-40GB"
        assert a100.gpu_memory_gib == pytest.approx(40e9 / 2**30)
        lambda_feed = parse_gpuhunt(fixture_bytes("lambdalabs.csv"), source="lambdalabs.csv")
        assert only(lambda_feed, gpu_count=8).gpu_id == "A100-SXM-80GB"

    def test_known_instance_fabrics_apply(self) -> None:
        """A p5.48xlarge from gpuhunt gets the same EFA fact as from SkyPilot."""
        feed = parse_gpuhunt(fixture_bytes("aws.csv"), source="aws.csv")
        offer = only(feed, instance_type="p5.48xlarge", spot=False)
        assert (offer.fabric, offer.fabric_gbps) == (Fabric.EFA, 3200.0)

    def test_cpu_and_tpu_rows_are_skipped_and_not_counted(self) -> None:
        """gpu_count 0 and Google TPU rows are not GPU offers."""
        feed = parse_gpuhunt(fixture_bytes("gcp.csv"), source="gcp.csv")
        assert (feed.rows, feed.rejected, len(feed.offers)) == (1, 0, 1)

    def test_gcp_zones_are_split_into_region_and_zone(self) -> None:
        """gpuhunt's GCP location is a zone; the offer keeps both."""
        offer = parse_gpuhunt(fixture_bytes("gcp.csv"), source="gcp.csv").offers[0]
        assert (offer.region, offer.zone) == ("us-central1", "us-central1-a")

    @pytest.mark.parametrize(
        ("bad", "reason"),
        [
            (row(gpu="H900"), "unknown GPU"),
            (row(price=""), "price is empty or zero"),
            (row(price="0"), "price is empty or zero"),
            (row(spot="maybe"), "spot 'maybe'"),
            (row(count="2.5"), "whole number"),
            (row(location=""), "location is empty"),
            (row(), "duplicate"),
            ("p5.48xlarge,us-east-1,55.04", "fields"),
        ],
    )
    def test_bad_rows_are_counted_with_reasons(self, bad: str, reason: str) -> None:
        """One bad row is rejected and explained; the good row still loads."""
        feed = catalog(row(), bad)
        assert (feed.rows, feed.rejected, len(feed.offers)) == (2, 1, 1)
        assert reason in feed.errors[0]

    def test_no_readable_rows_is_an_error(self) -> None:
        """A catalog whose every row is bad does not load as an empty feed."""
        with pytest.raises(CatalogError, match="none of the 1"):
            catalog(row(gpu="H900"))

    def test_header_sniffer(self) -> None:
        """The sniffer knows the gpuhunt header and not SkyPilot's."""
        assert looks_like_gpuhunt(HEADER + "\n")
        assert not looks_like_gpuhunt(fixture_bytes("skypilot_aws.csv").decode())
