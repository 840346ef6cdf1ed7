"""gpuhunt's published catalog archive (a zip of <provider>.csv files), detected by its magic
bytes and read member by member, also over loopback HTTP.

The members are built here from the gpuhunt fixtures tests/feeds/data/{aws,gcp,lambdalabs}.csv:
rows in gpuhunt's catalog v3 columns (src/gpuhunt/_internal/catalog.py), as dstack's catalog
publishes them; lambdalabs.csv carries the GH200 row gpuhunt flags ``lambda-arm``.
"""

from __future__ import annotations

import io
import zipfile

import pytest

from bot.catalog import load_sources
from recommender.errors import CatalogError
from recommender.feeds.detect import FeedFormat, detect_format, parse_any
from recommender.feeds.gpuhunt import GPUHUNT_COLUMNS
from tests.factories import NOW
from tests.feeds.conftest import FeedServer, Route, fixture_bytes

#: Where gpuhunt downloads it (CATALOG_URL in gpuhunt's catalog.py); never fetched in tests.
PUBLISHED = "https://dstack-gpu-pricing.s3.eu-west-1.amazonaws.com/v2/20251120/catalog.zip"


def archive(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as out:
        for name, data in members.items():
            out.writestr(name, data)
    return buffer.getvalue()


def published() -> bytes:
    return archive({n: fixture_bytes(n) for n in ("aws.csv", "gcp.csv", "lambdalabs.csv")})


class TestArchive:
    def test_told_by_its_magic_bytes_not_its_name(self) -> None:
        assert detect_format(published(), source="feed.bin") is FeedFormat.GPUHUNT_ZIP

    def test_every_member_is_read_with_its_provider(self) -> None:
        feed = parse_any(published(), source=PUBLISHED, as_of=NOW)
        assert {o.provider for o in feed.offers} == {"aws", "gcp", "lambda"}
        assert feed.as_of == NOW
        p5 = [o for o in feed.offers if o.instance_type == "p5.48xlarge"]
        assert {(o.spot, o.price_usd_per_hour) for o in p5} >= {(False, 55.04), (True, 18.5)}
        gcp = next(o for o in feed.offers if o.instance_type == "a3-highgpu-8g")
        assert (gcp.region, gcp.zone) == ("us-central1", "us-central1-a")

    def test_flagged_rows_are_skipped(self) -> None:
        """The GH200 row carries gpuhunt's ``lambda-arm`` flag: gpuhunt hides it from clients
        that do not allow the flag, and so does gpufit."""
        assert b"lambda-arm" in fixture_bytes("lambdalabs.csv")
        feed = parse_any(published(), source=PUBLISHED, as_of=NOW)
        assert not any(o.instance_type == "gpu_1x_gh200" for o in feed.offers)
        assert any(o.instance_type == "gpu_8x_a100_80gb_sxm4" for o in feed.offers)

    def test_a_per_provider_archive_takes_the_provider_from_the_url(self) -> None:
        data = archive({"catalog.csv": fixture_bytes("lambdalabs.csv")})
        url = "https://dstack-gpu-pricing.s3.eu-west-1.amazonaws.com/v3/lambdalabs/1/catalog.zip"
        feed = parse_any(data, source=url, as_of=NOW)
        assert {o.provider for o in feed.offers} == {"lambda"}

    def test_a_member_of_no_known_provider_is_reported_and_skipped(self) -> None:
        data = archive({"aws.csv": fixture_bytes("aws.csv"), "notes.csv": fixture_bytes("gcp.csv")})
        feed = parse_any(data, source="archive.zip", as_of=NOW)
        assert {o.provider for o in feed.offers} == {"aws"}
        assert any(e.startswith("notes.csv:") for e in feed.errors)

    @pytest.mark.parametrize(
        ("data", "message"),
        [
            (b"PK\x03\x04" + b"\x00" * 40, "broken zip"),
            (archive({"README.md": b"# hi\n"}), "no .csv"),
            (archive({"aws.csv": (",".join(GPUHUNT_COLUMNS) + "\n").encode()}), "could be read"),
        ],
    )
    def test_bad_archives_are_catalog_errors(self, data: bytes, message: str) -> None:
        with pytest.raises(CatalogError, match=message):
            parse_any(data, source="archive.zip", as_of=NOW)


async def test_served_over_loopback(feed_server: FeedServer) -> None:
    url = feed_server.serve(
        "/v2/20251120/catalog.zip",
        Route(
            published(),
            content_type="application/zip",
            last_modified="Thu, 20 Nov 2025 00:00:00 GMT",
        ),
    )
    catalog = await load_sources([f"gpuhunt={url}"])
    assert {o.provider for o in catalog.offers} == {"aws", "gcp", "lambda"}
    (info,) = catalog.sources
    assert info.name == "gpuhunt"
    assert info.as_of.year == 2025
