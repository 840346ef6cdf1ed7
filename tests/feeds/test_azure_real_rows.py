"""Azure's SkyPilot catalog, read from real rows of ``catalogs/v6/azure/vms.csv``.

No v8 Azure file was available; the v6 file has the same columns, and its ``GpuInfo`` is the
card's name alone (``V100``, ``A100-80GB``), not the dict literal other clouds write. The
fixture ``skypilot_azure_v6_rows.csv`` names its commit on its first line. Expected values were
read off the rows by hand.
"""

from __future__ import annotations

import pytest

from recommender.feeds.base import ParsedFeed
from recommender.feeds.detect import parse_any
from recommender.gpus import get_gpu
from tests.factories import only
from tests.feeds.conftest import fixture_bytes

URL = (
    "https://raw.githubusercontent.com/skypilot-org/skypilot-catalog/master/"
    "catalogs/v6/azure/vms.csv"
)


def body() -> bytes:
    return fixture_bytes("skypilot_azure_v6_rows.csv").split(b"\n", 1)[1]  # the source comment


def real_rows() -> ParsedFeed:
    return parse_any(body(), source=URL)


def test_the_cloud_is_taken_from_the_url_and_gpu_rows_are_counted() -> None:
    """19 rows: 2 CPU-only and 2 GPU rows with an empty AcceleratorName (NC16ads_A10_v4,
    NCC40ads_H100_v5) are skipped, leaving 15 GPU rows."""
    feed = real_rows()
    assert {o.provider for o in feed.offers} == {"azure"}
    assert feed.rows == 15
    assert {o.citation for o in feed.offers} == {"SkyPilot catalog azure/vms.csv"}


@pytest.mark.parametrize(
    ("instance", "gpu_id", "count", "price", "memory_gib"),
    [
        # V100 on NC v3 (16 GB); the ND v2 row names V100-32GB.
        ("Standard_NC12s_v3", "V100-SXM-16GB", 2, 6.12, 16.0),
        ("Standard_ND40rs_v2", "V100-SXM-32GB", 8, 22.032, 32.0),
        ("Standard_NC4as_T4_v3", "T4", 1, 0.526, 16.0),
        ("Standard_NC64as_T4_v3", "T4", 4, 4.352, 16.0),
        # NC A100 v4 carries A100 80GB PCIe cards; ND A100 v4 the SXM ones.
        ("Standard_NC24ads_A100_v4", "A100-PCIE-80GB", 1, 3.673, 80.0),
        ("Standard_NC96ads_A100_v4", "A100-PCIE-80GB", 4, 14.692, 80.0),
        ("Standard_ND96amsr_A100_v4", "A100-SXM-80GB", 8, 32.77, 80.0),
        ("Standard_ND96asr_v4", "A100-SXM-40GB", 8, 27.197, 40.0),
        # NC H100 v5's "H100" is the 94 GB H100 NVL.
        ("Standard_NC40ads_H100_v5", "H100-NVL-94GB", 1, 6.98, 94.0),
        ("Standard_NV36ads_A10_v5", "A10", 1, 3.2, 24.0),
        ("Standard_NV72ads_A10_v5", "A10", 2, 6.52, 24.0),
    ],
)
def test_gpu_rows_become_on_demand_offers(
    instance: str, gpu_id: str, count: int, price: float, memory_gib: float
) -> None:
    offer = only(real_rows(), instance_type=instance, spot=False)
    assert (offer.gpu_id, offer.gpu_count, offer.region) == (gpu_id, count, "eastus")
    assert offer.price_usd_per_hour == pytest.approx(price)
    # The rows give no memory: it comes from the card the name resolves to (GB as labelled).
    assert offer.gpu_memory_gib is None
    assert get_gpu(offer.gpu_id).memory_gb == pytest.approx(memory_gib)


def test_spot_offers_only_where_spot_price_is_set_and_below_price() -> None:
    """NC40ads_H100_v5 lists SpotPrice = Price (6.98): no spot offer; the K80 Promo row has
    no SpotPrice (and K80 is rejected anyway); the others are spot at their SpotPrice."""
    feed = real_rows()
    spot = {o.instance_type: o.price_usd_per_hour for o in feed.offers if o.spot}
    assert "Standard_NC40ads_H100_v5" not in spot
    assert spot == {
        "Standard_NC12s_v3": pytest.approx(0.7956),
        "Standard_NC24ads_A100_v4": pytest.approx(0.444433),
        "Standard_NC4as_T4_v3": pytest.approx(0.062699),
        "Standard_NC64as_T4_v3": pytest.approx(0.518758),
        "Standard_NC96ads_A100_v4": pytest.approx(1.777732),
        "Standard_ND40rs_v2": pytest.approx(2.42352),
        "Standard_ND96amsr_A100_v4": pytest.approx(3.6047),
        "Standard_ND96asr_v4": pytest.approx(2.99167),
        "Standard_NV36ads_A10_v5": pytest.approx(0.8),
        "Standard_NV72ads_A10_v5": pytest.approx(1.63),
    }


def test_rows_gpufit_cannot_read_are_rejected_with_reasons() -> None:
    """K80, M60 and Radeon MI25 are not in the GPU registry; the ND96isr_H100_v5 row lists 12
    H100s where Azure's ND H100 v5 has 8, so its price cannot be split per GPU."""
    feed = real_rows()
    assert feed.rejected == 4
    assert feed.errors == (
        "row 4: unknown GPU 'K80'",
        "row 15: AcceleratorCount 12 contradicts Azure's 8 GPUs for Standard_ND96isr_H100_v5",
        "row 16: unknown GPU 'M60'",
        "row 17: unknown GPU 'Radeon MI25'",
    )
    assert not [o for o in feed.offers if o.instance_type == "Standard_ND96isr_H100_v5"]


def test_a_fractional_gpu_partition_is_rejected_not_priced_as_a_whole_gpu() -> None:
    """Azure's smaller NVads A10 v5 sizes are a fraction of one A10; the fixture has none, so
    this row is the fixture's NV36ads_A10_v5 row with AcceleratorCount edited to 1/6 (an
    edited row, not a catalog one)."""
    header, rows = body().decode().split("\n", 1)
    real = next(r for r in rows.splitlines() if r.startswith("Standard_NV36ads_A10_v5,"))
    edited = real.replace("A10,1,", "A10,0.16666666666666666,", 1)
    feed = parse_any(f"{header}\n{real}\n{edited}\n", source=URL)
    assert feed.rejected == 1
    assert feed.errors == (
        "row 2: AcceleratorCount '0.16666666666666666' is not a whole number of GPUs",
    )
    assert {o.gpu_count for o in feed.offers} == {1}
