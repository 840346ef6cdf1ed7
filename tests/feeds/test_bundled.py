"""The bundled snapshot: valid against the published schema, broad, sourced and sanely priced.

The file is scripts/build_snapshot.py's output over data/catalogs/v8 (test_snapshot_build.py
holds it to that byte for byte); these tests hold the inputs to covering what offline answers
need: both price kinds, the instance shapes, NVLink and PCIe parts, cluster fabrics.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from recommender.feeds.base import ParsedFeed, looks_like_native
from recommender.feeds.bundled import BUNDLED_SOURCE, bundled_catalog, load_bundled
from recommender.feeds.detect import parse_any
from recommender.gpus import IntraNode, get_gpu, try_normalize
from recommender.pricing.offers import Fabric, Offer
from recommender.pricing.sanity import screen
from recommender.ranking.caveats import CaveatKind

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "docs" / "schema" / "feed-v1.schema.json"
#: The snapshot's inputs (real catalog rows), as scripts/build_snapshot.py reads them.
INPUTS = Path(__file__).resolve().parents[2] / "data" / "catalogs" / "v8"


def _input_gpus() -> set[str]:
    """The GPU ids the inputs price, through the same adapters and screen as the build."""
    offers = []
    for path in sorted(INPUTS.glob("*/vms.csv")):
        text = b"".join(
            line
            for line in path.read_bytes().splitlines(keepends=True)
            if not line.startswith(b"#")
        )
        offers.extend(parse_any(text, source="input", provider=path.parent.name).offers)
    return {o.gpu_id for o in screen(offers).offers}


INPUT_GPUS = _input_gpus()

#: Believable USD per GPU-hour by GPU family, spot low to hyperscaler on-demand high. The low
#: ends reach the real catalogs' cheapest spot rows (Verda's H100 spot at 0.80, AWS's L4 spot
#: in eu-south-2 at 0.17, SkyPilot catalog v8).
PRICE_BANDS_USD_PER_GPU_HOUR: dict[str, tuple[float, float]] = {
    "B200": (1.5, 20.0),
    "H200": (1.0, 15.0),
    "H100": (0.7, 15.0),
    "A100": (0.3, 8.0),
    "L40S": (0.2, 4.0),
    "L4": (0.1, 2.0),
    "A10G": (0.3, 3.0),
    "A10": (0.3, 4.0),
    "RTX-4090": (0.15, 1.5),
    "RTX-A6000": (0.2, 2.0),
    "GH200": (1.0, 8.0),
    "V100": (0.1, 4.0),
    "QUADRO-RTX-6000": (0.1, 1.5),
    "B300": (2.0, 25.0),
    "GB200": (5.0, 25.0),
    "GB300": (5.0, 30.0),
    "MI300X": (1.0, 10.0),
    "MI355X": (2.0, 12.0),
    "A800": (0.5, 8.0),
    "A40": (0.3, 2.0),
    "A30": (0.2, 2.0),
    "A16": (0.1, 1.5),
    "L40": (0.4, 4.0),
    "T4": (0.05, 2.0),
    "P100": (0.1, 3.0),
    "P4": (0.1, 2.0),
    "K80": (0.05, 1.5),
    "M60": (0.05, 1.5),
    "MI25": (0.05, 1.5),
    "RTX-PRO-6000": (0.4, 6.0),
    "RTX-6000-ADA": (0.2, 2.5),
    "RTX-5090": (0.2, 3.0),
    "RTX-4070": (0.05, 1.0),
    "RTX-4060": (0.05, 1.0),
    "RTX-3090": (0.05, 1.0),
    "RTX-3080": (0.05, 1.0),
    "RTX-3070": (0.05, 1.0),
    "RTX-3060": (0.05, 1.0),
    "RTX-A4000": (0.05, 1.5),
    "RTX-A2000": (0.05, 1.0),
}


def family(gpu_id: str) -> str:
    """The GPU family of a canonical id: 'H100-SXM-80GB' → 'H100', 'RTX-4090' → 'RTX-4090'."""
    for name in sorted(PRICE_BANDS_USD_PER_GPU_HOUR, key=len, reverse=True):
        if gpu_id == name or gpu_id.startswith(name + "-"):
            return name
    raise AssertionError(f"no price band for {gpu_id}; add one to PRICE_BANDS_USD_PER_GPU_HOUR")


@pytest.fixture(scope="module")
def raw() -> dict[str, Any]:
    text = resources.files("recommender").joinpath("data/snapshot.json").read_text("utf-8")
    document: dict[str, Any] = json.loads(text)
    return document


@pytest.fixture(scope="module")
def feed() -> ParsedFeed:
    return load_bundled()


def offers_where(feed: ParsedFeed, **attrs: object) -> Iterator[Offer]:
    return (o for o in feed.offers if all(getattr(o, k) == v for k, v in attrs.items()))


class TestSchemaConformance:
    def test_schema_is_valid_draft_2020_12(self) -> None:
        """The published schema is itself a valid JSON Schema 2020-12 document."""
        schema = json.loads(SCHEMA_PATH.read_text("utf-8"))
        assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
        jsonschema.Draft202012Validator.check_schema(schema)

    def test_snapshot_validates_against_schema(self, raw: dict[str, Any]) -> None:
        """Every key and value in the snapshot is allowed by feed-v1.schema.json."""
        schema = json.loads(SCHEMA_PATH.read_text("utf-8"))
        validator = jsonschema.Draft202012Validator(schema)
        problems = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(raw)]
        assert problems == []

    def test_schema_rejects_what_the_reader_rejects(self, raw: dict[str, Any]) -> None:
        """The schema is not a pass-everything: a zero price and a typo'd key both fail it."""
        schema = json.loads(SCHEMA_PATH.read_text("utf-8"))
        validator = jsonschema.Draft202012Validator(schema)
        zero_price = {**raw, "offers": [{**raw["offers"][0], "price_usd_per_hour": 0}]}
        typo = {**raw, "offers": [{**raw["offers"][0], "fabirc": "efa"}]}
        gbps_without_fabric = {
            **raw,
            "offers": [{**raw["offers"][0], "fabric": "none", "fabric_gbps": 100}],
        }
        for document in (zero_price, typo, gbps_without_fabric):
            assert not validator.is_valid(document)


class TestSnapshotLoads:
    def test_every_row_is_accepted(self, feed: ParsedFeed) -> None:
        """The shipped snapshot has no row the reader rejects."""
        assert (feed.rejected, feed.errors) == (0, ())
        assert feed.accepted == feed.rows

    def test_document_is_detected_as_native(self, raw: dict[str, Any]) -> None:
        """Content sniffing picks the native adapter for the snapshot."""
        text = resources.files("recommender").joinpath("data/snapshot.json").read_text("utf-8")
        assert looks_like_native(text[:4096])
        assert raw["format"] == "gpufit-feed"

    def test_as_of_is_the_snapshot_date(self, feed: ParsedFeed, raw: dict[str, Any]) -> None:
        """The document and every offer carry the snapshot's as-of date."""
        assert feed.as_of == datetime(2026, 11, 20, tzinfo=UTC)
        assert all(o.get("as_of") == raw["as_of"] for o in raw["offers"])

    def test_load_is_cached(self) -> None:
        """Loading twice returns the same immutable result without re-parsing."""
        assert load_bundled() is load_bundled()

    def test_bundled_source_name(self) -> None:
        """The bundled snapshot has a stable display name for footers and errors."""
        assert BUNDLED_SOURCE == "bundled snapshot"


class TestCoverage:
    def test_size(self, feed: ParsedFeed) -> None:
        """Each GPU type's cheapest few regions on every cloud: hundreds of offers, not the
        catalogs' tens of thousands (issue #39: "a few thousand offers is fine")."""
        assert 500 <= len(feed.offers) <= 3000

    def test_providers(self, feed: ParsedFeed) -> None:
        """Every cloud whose catalog rows are an input has offers in the snapshot."""
        providers = {o.provider for o in feed.offers}
        assert providers == {p.parent.name for p in INPUTS.glob("*/vms.csv")}
        assert {"aws", "gcp", "azure", "oci", "lambda", "runpod", "nebius", "vast"} <= providers

    @pytest.mark.parametrize(
        "gpu_id",
        [
            "A10G",
            "L4",
            "L40S",
            "A100-SXM-40GB",
            "A100-SXM-80GB",
            "H100-SXM-80GB",
            "H200-SXM-141GB",
            "B200-180GB",
            "RTX-4090",
            "RTX-5090",
            "RTX-3090",
            "RTX-PRO-6000",
        ],
    )
    def test_the_gpus_questions_ask_for(self, feed: ParsedFeed, gpu_id: str) -> None:
        """Issue #39's list (A10G, L4, L40S, A100, H100, H200, B200, consumer cards) is in."""
        assert any(offers_where(feed, gpu_id=gpu_id))

    def test_every_gpu_the_inputs_price_is_in(self, feed: ParsedFeed) -> None:
        """Every GPU type some input row prices (after the screen) keeps at least one offer:
        the region cut keeps regions, never whole GPU types."""
        assert {o.gpu_id for o in feed.offers} == INPUT_GPUS

    def test_a10g_and_l4_each_on_their_clouds(self, feed: ParsedFeed) -> None:
        """AWS g5 (A10G), g6 (L4) and GCP g2 (L4) are priced."""
        assert {o.provider for o in offers_where(feed, gpu_id="A10G")} == {"aws"}
        assert {"aws", "gcp"} <= {o.provider for o in offers_where(feed, gpu_id="L4")}

    def test_spot_and_on_demand(self, feed: ParsedFeed) -> None:
        """Both spot and on-demand prices are present, and Lambda (no spot market) has none."""
        assert any(o.spot for o in feed.offers)
        assert any(not o.spot for o in feed.offers)
        assert not any(offers_where(feed, provider="lambda", spot=True))

    @pytest.mark.parametrize("provider", ["aws", "gcp", "nebius"])
    def test_spot_sellers_have_spot_offers(self, feed: ParsedFeed, provider: str) -> None:
        """Providers whose spot prices the catalog carries have spot offers in the snapshot."""
        assert any(offers_where(feed, provider=provider, spot=True))

    @pytest.mark.parametrize("count", [1, 2, 4, 8])
    def test_instance_shapes(self, feed: ParsedFeed, count: int) -> None:
        """1-, 2-, 4- and 8-GPU shapes are all represented."""
        assert any(offers_where(feed, gpu_count=count))

    @pytest.mark.parametrize(
        "gpu_id",
        ["H100-SXM-80GB", "H200-SXM-141GB", "A100-SXM-80GB", "A100-SXM-40GB", "B200-180GB"],
    )
    def test_nvlink_parts(self, feed: ParsedFeed, gpu_id: str) -> None:
        """Each NVLink part is offered, and over NVLink, in a multi-GPU instance."""
        multi = [o for o in offers_where(feed, gpu_id=gpu_id) if o.gpu_count > 1]
        assert multi
        assert all(o.link is IntraNode.NVLINK for o in multi)

    @pytest.mark.parametrize(
        "gpu_id", ["L4", "L40S", "A10", "RTX-A6000", "RTX-4090", "A100-PCIE-80GB", "H100-PCIE-80GB"]
    )
    def test_pcie_parts(self, feed: ParsedFeed, gpu_id: str) -> None:
        """Each PCIe part is offered, and none of them claims a switched NVLink fabric."""
        offers = list(offers_where(feed, gpu_id=gpu_id))
        assert offers
        assert all(o.link is not IntraNode.NVLINK for o in offers)

    @pytest.mark.parametrize(
        ("provider", "instance_type", "fabric", "gbps"),
        [
            ("aws", "p4d.24xlarge", Fabric.EFA, 400),
            ("aws", "p5.48xlarge", Fabric.EFA, 3200),
            ("aws", "p5en.48xlarge", Fabric.EFA, 3200),
            ("gcp", "a3-megagpu-8g", Fabric.ROCE, 1600),
            ("gcp", "a3-ultragpu-8g", Fabric.ROCE, 3200),
            ("nebius", "gpu-h100-sxm_8gpu-128vcpu-1600gb", Fabric.INFINIBAND, 3200),
            ("nebius", "gpu-h200-sxm_8gpu-128vcpu-1600gb", Fabric.INFINIBAND, 3200),
        ],
    )
    def test_multi_node_fabric(
        self, feed: ParsedFeed, provider: str, instance_type: str, fabric: Fabric, gbps: float
    ) -> None:
        """Cluster-grade instances carry their inter-node fabric and bandwidth."""
        offers = list(offers_where(feed, provider=provider, instance_type=instance_type))
        assert offers
        assert {(o.fabric, o.fabric_gbps) for o in offers} == {(fabric, gbps)}

    def test_fast_fabric_only_on_full_nodes(self, feed: ParsedFeed) -> None:
        """A fast fabric is claimed only by whole 8-GPU nodes, the shapes clusters are built of."""
        fast = [o for o in feed.offers if o.fabric.fast]
        assert len(fast) >= 10
        assert all(o.gpu_count == 8 for o in fast)


class TestProvenance:
    def test_every_offer_has_a_source(self, raw: dict[str, Any], feed: ParsedFeed) -> None:
        """Every offer names where its price came from, in the file itself."""
        assert all(o.get("source") for o in raw["offers"])
        assert all(o.source and o.source != BUNDLED_SOURCE for o in feed.offers)

    def test_every_price_is_its_provider_s_catalog_row(self, feed: ParsedFeed) -> None:
        """Every offer cites its own cloud's SkyPilot catalog file, nothing vaguer."""
        for offer in feed.offers:
            assert offer.source == f"skypilot-catalog v8 {offer.provider}/vms.csv", offer

    def test_every_gpu_spelling_normalises(self, raw: dict[str, Any]) -> None:
        """Every GPU spelling in the file is known to the spec table."""
        unknown = [o["gpu"] for o in raw["offers"] if try_normalize(o["gpu"]) is None]
        assert unknown == []

    def test_stated_memory_matches_the_gpu(self, feed: ParsedFeed) -> None:
        """Where an offer states GPU memory, it is within 10% of the spec's GB or GiB figure."""
        for offer in feed.offers:
            if offer.gpu_memory_gib is None:
                continue
            spec = get_gpu(offer.gpu_id)
            assert (
                min(
                    abs(offer.gpu_memory_gib - spec.memory_gib) / spec.memory_gib,
                    abs(offer.gpu_memory_gib - spec.memory_gb) / spec.memory_gb,
                )
                <= 0.1
            ), offer


class TestPrices:
    def test_per_gpu_hour_in_family_band(self, feed: ParsedFeed) -> None:
        """Every offer's price per GPU-hour sits in its GPU family's believable band, or the
        sanity screen flags it as an outlier, so answers that use it say so (the catalog's
        p4d.24xlarge spot in use1-az1 is 2.4655 USD/h, 89 % under on-demand)."""
        caveats = bundled_catalog().screened.caveats
        outside = []
        for offer in feed.offers:
            low, high = PRICE_BANDS_USD_PER_GPU_HOUR[family(offer.gpu_id)]
            flagged = any(c.kind is CaveatKind.OUTLIER for c in caveats.get(offer.key, ()))
            if not low <= offer.price_usd_per_gpu_hour <= high and not flagged:
                outside.append(f"{offer.key}: {offer.price_usd_per_gpu_hour:.2f}")
        assert outside == []

    def test_spot_is_cheaper_than_on_demand(self, feed: ParsedFeed) -> None:
        """Each spot offer costs less than the same instance's on-demand price in its region."""
        on_demand = {
            (o.provider, o.instance_type, o.region): o.price_usd_per_hour
            for o in feed.offers
            if not o.spot
        }
        for offer in offers_where(feed, spot=True):
            reference = on_demand.get((offer.provider, offer.instance_type, offer.region))
            if reference is not None:
                assert offer.price_usd_per_hour < reference, offer.key

    def test_family_lookup_fails_loudly_for_unbanded_gpus(self) -> None:
        """A GPU with no band makes the band test fail instead of silently passing."""
        with pytest.raises(AssertionError, match="no price band"):
            family("X9000")
