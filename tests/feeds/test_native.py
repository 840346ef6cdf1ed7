"""gpufit's own feed format: reading good documents, rejecting bad rows, refusing bad documents."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from recommender.errors import CatalogError
from recommender.feeds.base import (
    MAX_REPORTED_ERRORS,
    MAX_USD_PER_GPU_HOUR,
    MIN_USD_PER_GPU_HOUR,
    ParsedFeed,
    looks_like_native,
)
from recommender.feeds.native import parse_native
from recommender.gpus import IntraNode
from recommender.pricing.offers import Fabric

AS_OF = "2026-11-20T00:00:00Z"
AS_OF_DT = datetime(2026, 11, 20, tzinfo=UTC)


def offer_row(**overrides: Any) -> dict[str, Any]:
    """A valid offer row; pass a key with value ``...`` to drop it."""
    row: dict[str, Any] = {
        "provider": "aws",
        "instance_type": "p5.48xlarge",
        "gpu": "H100",
        "gpu_count": 8,
        "price_usd_per_hour": 55.04,
        "spot": False,
        "region": "us-east-1",
    }
    row.update(overrides)
    return {k: v for k, v in row.items() if v is not ...}


def feed_doc(*offers: dict[str, Any], **overrides: Any) -> dict[str, Any]:
    """A valid feed document around the given offers (one default offer if none)."""
    doc: dict[str, Any] = {
        "format": "gpufit-feed",
        "version": 1,
        "source": "test publisher",
        "as_of": AS_OF,
        "offers": list(offers) if offers else [offer_row()],
    }
    doc.update(overrides)
    return {k: v for k, v in doc.items() if v is not ...}


def parse(doc: dict[str, Any]) -> ParsedFeed:
    return parse_native(json.dumps(doc), source="test-feed")


def good_and(bad: object) -> ParsedFeed:
    """Parse a document with one good row followed by ``bad``."""
    return parse(feed_doc(offer_row(instance_type="good"), bad))  # type: ignore[arg-type]


class TestGoodDocument:
    def test_reads_every_field_into_the_offer(self) -> None:
        """All documented offer keys land in the Offer with their units."""
        row = offer_row(
            gpu="NVIDIA H100 80GB HBM3",
            gpu_memory_gib=80,
            spot=True,
            zone="use1-az6",
            vcpus=192,
            ram_gib=2048,
            intra_node="nvlink",
            fabric="efa",
            fabric_gbps=3200,
            source="skypilot-catalog v8 aws/vms.csv",
        )
        feed = parse(feed_doc(row))
        (offer,) = feed.offers
        assert offer.provider == "aws"
        assert offer.instance_type == "p5.48xlarge"
        assert offer.gpu_id == "H100-SXM-80GB"
        assert offer.gpu_count == 8
        assert offer.gpu_memory_gib == 80
        assert offer.price_usd_per_hour == pytest.approx(55.04)
        assert offer.price_usd_per_gpu_hour == pytest.approx(6.88)
        assert offer.spot is True
        assert offer.region == "us-east-1"
        assert offer.zone == "use1-az6"
        assert offer.vcpus == 192
        assert offer.ram_gib == 2048
        assert offer.intra_node is IntraNode.NVLINK
        assert offer.fabric is Fabric.EFA
        assert offer.fabric_gbps == 3200
        assert offer.source == "skypilot-catalog v8 aws/vms.csv"

    def test_reports_counts_and_as_of(self) -> None:
        """A clean document reports every row accepted and the document's as-of time."""
        feed = parse(feed_doc(offer_row(), offer_row(spot=True, zone="use1-az6")))
        assert (feed.rows, feed.rejected, feed.accepted, feed.errors) == (2, 0, 2, ())
        assert feed.as_of == AS_OF_DT

    def test_optional_fields_take_defaults(self) -> None:
        """Without the optional keys an offer has no zone, no fabric and the GPU's own link."""
        (offer,) = parse(feed_doc(offer_row())).offers
        assert offer.zone == ""
        assert offer.fabric is Fabric.NONE
        assert offer.fabric_gbps is None
        assert offer.intra_node is None
        assert offer.link is IntraNode.NVLINK

    def test_bytes_with_byte_order_mark_are_read(self) -> None:
        """UTF-8 bytes, even with a BOM, parse the same as text."""
        text = json.dumps(feed_doc())
        feed = parse_native(b"\xef\xbb\xbf" + text.encode(), source="bom")
        assert len(feed.offers) == 1

    @pytest.mark.parametrize(
        ("spelling", "memory_gib", "expected"),
        [
            ("H100", None, "H100-SXM-80GB"),
            ("h100-80gb", None, "H100-SXM-80GB"),
            ("A100-SXM4-80GB", None, "A100-SXM-80GB"),
            ("A100", None, "A100-SXM-40GB"),
            ("A100", 80, "A100-SXM-80GB"),
            ("A100 PCIe", 80, "A100-PCIE-80GB"),
            ("GeForce RTX 4090", 24, "RTX-4090"),
            ("NVIDIA L40S", 48, "L40S"),
            ("H200", 141, "H200-SXM-141GB"),
        ],
    )
    def test_gpu_spellings_normalise(
        self, spelling: str, memory_gib: float | None, expected: str
    ) -> None:
        """Any common GPU spelling maps to one canonical id; stated memory picks the variant."""
        row = offer_row(gpu=spelling, gpu_memory_gib=memory_gib if memory_gib else ...)
        (offer,) = parse(feed_doc(row)).offers
        assert offer.gpu_id == expected

    def test_offer_source_falls_back_to_document_then_feed_name(self) -> None:
        """An offer without its own source takes the document's, else the feed's name."""
        (with_doc,) = parse(feed_doc(offer_row())).offers
        assert with_doc.source == "test publisher"
        (bare,) = parse(feed_doc(offer_row(), source=...)).offers
        assert bare.source == "test-feed"

    def test_as_of_is_the_oldest_price(self) -> None:
        """An offer collected before the document's as_of makes the whole feed that old."""
        old = offer_row(instance_type="old", as_of="2026-11-01T12:00:00+02:00")
        feed = parse(feed_doc(offer_row(), old))
        assert feed.as_of == datetime(2026, 11, 1, 10, tzinfo=UTC)

    def test_as_of_keeps_its_offset(self) -> None:
        """A document as_of with a non-UTC offset is read as that instant."""
        feed = parse(feed_doc(as_of="2026-11-20T09:00:00+09:00"))
        assert feed.as_of == datetime(2026, 11, 20, 9, tzinfo=timezone(timedelta(hours=9)))
        assert feed.as_of == AS_OF_DT

    def test_unknown_keys_are_ignored(self) -> None:
        """Keys from a later revision or x_ extensions neither break nor reject a row."""
        feed = parse(feed_doc(offer_row(x_capacity="high", new_field=1), x_publisher="me"))
        assert (feed.rows, feed.rejected) == (1, 0)

    def test_provider_is_lower_cased(self) -> None:
        """Provider ids are compared lower-case, however the publisher wrote them."""
        (offer,) = parse(feed_doc(offer_row(provider=" AWS "))).offers
        assert offer.provider == "aws"

    def test_integral_float_gpu_count_is_accepted(self) -> None:
        """A gpu_count of 8.0 (as some generators write it) means 8."""
        (offer,) = parse(feed_doc(offer_row(gpu_count=8.0))).offers
        assert offer.gpu_count == 8


class TestBadRows:
    def test_unknown_gpu_is_rejected_with_its_row_number(self) -> None:
        """A GPU spelling gpufit does not know rejects that row only, naming it."""
        feed = good_and(offer_row(gpu="H900"))
        assert [o.instance_type for o in feed.offers] == ["good"]
        assert (feed.rows, feed.rejected) == (2, 1)
        assert feed.errors == ("row 2: unknown GPU 'H900'",)

    @pytest.mark.parametrize(
        ("price", "gpus"),
        [
            (0, 1),
            (-3.5, 8),
            (0.001, 1),  # a tenth of a cent per GPU-hour
            (1_000_000, 8),  # absurd
            (900, 1),  # per-month or cents mixed up
            (700.0, 1),  # SkyPilot's sentinel for unavailable TPU zones
            (float("nan"), 1),
            (float("inf"), 1),
            ("55.04", 8),
            (True, 1),
        ],
    )
    def test_implausible_prices_are_rejected_per_row(self, price: object, gpus: int) -> None:
        """Zero, negative, absurd, non-finite and non-numeric prices reject only their row."""
        feed = good_and(offer_row(price_usd_per_hour=price, gpu_count=gpus))
        assert (len(feed.offers), feed.rejected) == (1, 1)
        assert feed.errors[0].startswith("row 2: price_usd_per_hour")

    @pytest.mark.parametrize(
        ("per_gpu_hour", "accepted"),
        [
            (MIN_USD_PER_GPU_HOUR, True),
            (MIN_USD_PER_GPU_HOUR * 0.99, False),
            (MAX_USD_PER_GPU_HOUR, True),
            (MAX_USD_PER_GPU_HOUR * 1.01, False),
        ],
    )
    def test_price_band_edges_are_per_gpu_hour(self, per_gpu_hour: float, accepted: bool) -> None:
        """The believable band applies to the price per GPU-hour, inclusive at both ends."""
        feed = good_and(offer_row(price_usd_per_hour=per_gpu_hour * 4, gpu_count=4))
        assert (feed.rejected == 0) is accepted

    @pytest.mark.parametrize(
        ("overrides", "reason"),
        [
            ({"provider": ...}, "provider is missing"),
            ({"instance_type": "  "}, "instance_type is missing"),
            ({"region": ...}, "region is missing"),
            ({"gpu": ...}, "gpu is missing"),
            ({"gpu": 100}, "gpu must be a string"),
            ({"gpu_count": ...}, "gpu_count is missing"),
            ({"gpu_count": 0}, "gpu_count 0 is outside"),
            ({"gpu_count": 2.5}, "gpu_count must be a whole number"),
            ({"gpu_count": "8"}, "gpu_count must be a whole number"),
            ({"gpu_count": 1000}, "gpu_count 1000 is outside"),
            ({"price_usd_per_hour": ...}, "price_usd_per_hour is missing"),
            ({"spot": ...}, "spot must be true or false"),
            ({"spot": "yes"}, "spot must be true or false"),
            ({"gpu_memory_gib": -80}, "gpu_memory_gib must be a positive number"),
            ({"gpu": "A100 40GB", "gpu_memory_gib": 80}, "GPU memory 80 GiB does not match"),
            ({"intra_node": "nvswitch"}, "intra_node 'nvswitch' is not one of"),
            ({"fabric": "omnipath"}, "fabric 'omnipath' is not one of"),
            ({"fabric_gbps": 400}, "fabric_gbps is set but fabric is 'none'"),
            ({"vcpus": 0}, "vcpus must be a positive number"),
            ({"as_of": "yesterday"}, "as_of 'yesterday' is not an ISO 8601"),
            ({"as_of": "2026-11-20T00:00:00"}, "has no UTC offset"),
        ],
    )
    def test_invalid_fields_reject_the_row_with_a_reason(
        self, overrides: dict[str, Any], reason: str
    ) -> None:
        """Each malformed field rejects its row and says which field and why."""
        feed = good_and(offer_row(**overrides))
        assert (len(feed.offers), feed.rejected) == (1, 1)
        assert feed.errors[0].startswith("row 2: ")
        assert reason in feed.errors[0]

    def test_non_object_row_is_rejected(self) -> None:
        """A row that is not a JSON object is counted, not fatal."""
        feed = good_and("p5.48xlarge")
        assert feed.errors == ("row 2: an offer must be an object; got a string",)

    def test_duplicate_offer_is_rejected(self) -> None:
        """The same provider/instance/GPUs/region/zone/spot twice keeps the first row only."""
        feed = parse(feed_doc(offer_row(), offer_row(price_usd_per_hour=40.0)))
        assert [o.price_usd_per_hour for o in feed.offers] == [55.04]
        assert feed.errors == (
            "row 2: duplicate of row 1 (same provider, instance_type, gpu, gpu_count, region, "
            "zone, spot)",
        )

    def test_one_instance_type_with_two_gpu_models_is_two_offers(self) -> None:
        """A GCP N1 host type carries T4s or P4s (real rows: tests/feeds/test_offer_keys.py):
        the same provider/instance/region/zone/spot with another GPU is no duplicate."""
        n1 = {"provider": "gcp", "instance_type": "n1-highmem-8", "region": "us-central1"}
        feed = parse(
            feed_doc(
                offer_row(**n1, gpu="T4", gpu_count=1, price_usd_per_hour=0.82),
                offer_row(**n1, gpu="P4", gpu_count=1, price_usd_per_hour=1.07),
            )
        )
        assert feed.rejected == 0
        assert len({o.key for o in feed.offers}) == 2

    def test_spot_and_on_demand_of_one_shape_are_distinct(self) -> None:
        """On-demand and spot prices for the same instance are two offers, not duplicates."""
        feed = parse(feed_doc(offer_row(), offer_row(spot=True, price_usd_per_hour=17.6)))
        assert feed.rejected == 0

    def test_error_list_is_capped_but_count_is_not(self) -> None:
        """Only the first reasons are kept; every bad row is still counted."""
        bad = [offer_row(instance_type=f"bad-{i}", gpu="H900") for i in range(50)]
        feed = parse(feed_doc(offer_row(), *bad))
        assert feed.rejected == 50
        assert len(feed.errors) == MAX_REPORTED_ERRORS
        assert feed.errors[0] == "row 2: unknown GPU 'H900'"

    @given(st.lists(st.booleans(), min_size=1, max_size=30))
    def test_rows_always_add_up(self, goodness: list[bool]) -> None:
        """Accepted plus rejected always equals the rows in the document."""
        rows = [
            offer_row(instance_type=f"i{n}", gpu="H100" if good else "H900")
            for n, good in enumerate(goodness)
        ]
        doc = feed_doc(offer_row(instance_type="anchor"), *rows)
        feed = parse(doc)
        assert feed.rows == len(rows) + 1
        assert len(feed.offers) == feed.accepted == 1 + sum(goodness)
        assert feed.rejected == len(goodness) - sum(goodness)


class TestBadDocument:
    @pytest.mark.parametrize(
        ("text", "message"),
        [
            ("", "invalid JSON"),
            ("instance,price\np5,55", "invalid JSON"),
            ('{"format": "gpufit-feed", ', "invalid JSON"),
            ("[1, 2]", "the document is a list, not an object"),
            ('"gpufit-feed"', "the document is a string, not an object"),
        ],
    )
    def test_not_json_or_not_an_object(self, text: str, message: str) -> None:
        """Text that is not a JSON object raises CatalogError naming the feed."""
        with pytest.raises(CatalogError, match=message) as caught:
            parse_native(text, source="test-feed")
        assert caught.value.source == "test-feed"
        assert caught.value.message.startswith("test-feed: ")
        assert caught.value.hint is not None

    def test_not_utf8(self) -> None:
        """Bytes that are not UTF-8 raise CatalogError, not UnicodeDecodeError."""
        with pytest.raises(CatalogError, match="not UTF-8"):
            parse_native(b'{"format": "\xff"}', source="test-feed")

    @pytest.mark.parametrize(
        ("marker", "message"),
        [
            ("gpuhunt", "format 'gpuhunt', expected format 'gpufit-feed'"),
            (..., "no format key"),
            ("GPUFIT-FEED", "format 'GPUFIT-FEED'"),
        ],
    )
    def test_wrong_format_marker(self, marker: object, message: str) -> None:
        """A JSON object without the gpufit-feed marker is refused."""
        with pytest.raises(CatalogError, match=message):
            parse(feed_doc(format=marker))

    @pytest.mark.parametrize(
        ("version", "message"),
        [
            (2, "version 2 is newer than"),
            (0, "version 0 is not the version"),
            ("1", "must be an integer"),
            (1.5, "must be an integer"),
            (True, "must be an integer"),
            (..., "must be an integer"),
        ],
    )
    def test_unsupported_version(self, version: object, message: str) -> None:
        """Only version 1 is read; anything else says what was found."""
        with pytest.raises(CatalogError, match=message):
            parse(feed_doc(version=version))

    @pytest.mark.parametrize(
        ("as_of", "message"),
        [
            (..., "as_of is missing"),
            ("20 Nov 2026", "is not an ISO 8601"),
            ("2026-11-20T00:00:00", "has no UTC offset"),
            (1_795_000_000, "must be an ISO 8601"),
        ],
    )
    def test_document_as_of_is_required_and_zoned(self, as_of: object, message: str) -> None:
        """Without a zoned as_of a feed's age is unknown, so it is refused."""
        with pytest.raises(CatalogError, match=message):
            parse(feed_doc(as_of=as_of))

    @pytest.mark.parametrize("offers", [[], ..., {"a": 1}, None])
    def test_missing_or_empty_offers(self, offers: object) -> None:
        """A feed must carry a non-empty offers list."""
        with pytest.raises(CatalogError, match="offers"):
            parse(feed_doc(offers=offers))

    def test_no_good_offers(self) -> None:
        """When every row is bad the load fails, quoting the first reasons."""
        doc = feed_doc(offer_row(gpu="H900"), offer_row(price_usd_per_hour=-1))
        with pytest.raises(CatalogError, match="none of the 2 offers") as caught:
            parse(doc)
        assert "row 1: unknown GPU 'H900'" in caught.value.message
        assert "row 2: price_usd_per_hour" in caught.value.message


class TestLooksLikeNative:
    @pytest.mark.parametrize(
        "head",
        [
            '{"format": "gpufit-feed", "version": 1',
            '\ufeff  \n{\n  "format" :  "gpufit-feed"',
            '{"version": 1, "as_of": "2026-11-20T00:00:00Z", "format":"gpufit-feed"',
        ],
    )
    def test_recognises_a_feed_head(self, head: str) -> None:
        """The start of a gpufit feed is recognised in any key order and spacing."""
        assert looks_like_native(head)

    @pytest.mark.parametrize(
        "head",
        [
            "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,GpuInfo,Price",
            "instance_name,location,price,cpu,memory,gpu_count,gpu_name,gpu_memory,spot",
            '[{"gpuModel": "A100", "price": "$0.44", "provider": "azure"}]',
            '{"format": "gpuhunt", "version": 1}',
            '{"Items": [], "NextPageLink": null}',
            "",
        ],
    )
    def test_rejects_other_formats(self, head: str) -> None:
        """CSV catalogs, other JSON and empty text are not taken for a gpufit feed."""
        assert not looks_like_native(head)

    def test_detects_a_whole_valid_document(self) -> None:
        """A document that parses as a feed is also detected as one."""
        text = json.dumps(feed_doc())
        assert looks_like_native(text[:4096])
        assert parse_native(text, source="detect").rows == 1


class TestDocumentedExample:
    DOC = Path(__file__).resolve().parents[2] / "docs" / "feed-format.md"
    SCHEMA = Path(__file__).resolve().parents[2] / "docs" / "schema" / "feed-v1.schema.json"

    def example(self) -> str:
        match = re.search(r"```json\n(.*?)```", self.DOC.read_text("utf-8"), re.DOTALL)
        assert match is not None, "docs/feed-format.md lost its JSON example"
        return match.group(1)

    def test_example_is_valid_against_the_schema(self) -> None:
        """The example in docs/feed-format.md passes the published JSON Schema."""
        schema = json.loads(self.SCHEMA.read_text("utf-8"))
        jsonschema.Draft202012Validator(schema).validate(json.loads(self.example()))

    def test_example_parses_cleanly(self) -> None:
        """The example in docs/feed-format.md loads with every offer accepted."""
        feed = parse_native(self.example(), source="docs")
        assert (feed.rows, feed.rejected) == (2, 0)
        assert {o.gpu_id for o in feed.offers} == {"H100-SXM-80GB", "RTX-4090"}
        assert feed.offers[1].source == "Example Corp negotiated rates"
