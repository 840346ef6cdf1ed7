"""Azure's SkyPilot catalog, read from real rows of ``catalogs/v8/azure/vms.csv`` and of the
older ``catalogs/v6/azure/vms.csv``.

Both files have the same columns, and their ``GpuInfo`` is the card's name alone (``V100``,
``A100-80GB``), not the dict literal other clouds write. The v8 rows
(``catalogs/v8/azure/vms.csv``, served as the live default feed reads it) come from a fork of
the catalog repository, the v6 rows (``skypilot_azure_v6_rows.csv``) from the catalog's own;
each fixture names its repository and commit on its first line. Expected values were read off
the rows by hand.
"""

from __future__ import annotations

import pytest

from recommender.feeds.base import ParsedFeed
from recommender.feeds.detect import parse_any
from recommender.gpus import get_gpu
from recommender.pricing.offers import Fabric
from tests.factories import only
from tests.feeds.conftest import catalog_bytes, fixture_bytes

VERSIONS = ("v6", "v8")


def url(version: str) -> str:
    return (
        "https://raw.githubusercontent.com/skypilot-org/skypilot-catalog/master/"
        f"catalogs/{version}/azure/vms.csv"
    )


def body(version: str) -> bytes:
    """The rows as the catalog serves them (each fixture's source comment removed)."""
    if version == "v8":
        return catalog_bytes("azure")
    return fixture_bytes("skypilot_azure_v6_rows.csv").split(b"\n", 1)[1]


def real_rows(version: str) -> ParsedFeed:
    return parse_any(body(version), source=url(version))


#: version → (GPU rows, the rejections). Rows are counted from 1 after the header.
#: v6: 19 rows, 2 CPU-only and 2 with an empty AcceleratorName (NC16ads_A10_v4,
#: NCC40ads_H100_v5) skipped. v8: 24 rows, 1 CPU-only (E8s_v5) and the same 2 empty ones.
#: ND96isr_H100_v5 lists 12 H100s where Azure's ND H100 v5 has 8, so its price cannot be split
#: per GPU; v6's Radeon MI25 row (NV16as_v4) has neither price.
READ: dict[str, tuple[int, tuple[str, ...]]] = {
    "v6": (
        15,
        (
            "row 15: AcceleratorCount 12 contradicts Azure's 8 GPUs for Standard_ND96isr_H100_v5",
            "row 17: no price (Price and SpotPrice empty or zero)",
        ),
    ),
    "v8": (
        21,
        ("row 21: AcceleratorCount 12 contradicts Azure's 8 GPUs for Standard_ND96isr_H100_v5",),
    ),
}

#: Every on-demand offer: (version, instance, region, GPU id, GPUs, USD/h).
#: V100 on NC v3 is the 16 GB card; the ND v2 row names V100-32GB. NC A100 v4 carries A100
#: 80GB PCIe cards, ND A100 v4 the SXM ones (asr 40 GB, amsr 80 GB). NC H100 v5's "H100" is
#: the 94 GB H100 NVL.
ON_DEMAND = [
    ("v6", "Standard_NC12_Promo", "southcentralus", "K80", 2, 0.432),
    ("v6", "Standard_NC12s_v3", "eastus", "V100-SXM-16GB", 2, 6.12),
    ("v6", "Standard_NC24ads_A100_v4", "eastus", "A100-PCIE-80GB", 1, 3.673),
    ("v6", "Standard_NC40ads_H100_v5", "eastus", "H100-NVL-94GB", 1, 6.98),
    ("v6", "Standard_NC4as_T4_v3", "eastus", "T4", 1, 0.526),
    ("v6", "Standard_NC64as_T4_v3", "eastus", "T4", 4, 4.352),
    ("v6", "Standard_NC96ads_A100_v4", "eastus", "A100-PCIE-80GB", 4, 14.692),
    ("v6", "Standard_ND40rs_v2", "eastus", "V100-SXM-32GB", 8, 22.032),
    ("v6", "Standard_ND96amsr_A100_v4", "eastus", "A100-SXM-80GB", 8, 32.77),
    ("v6", "Standard_ND96asr_v4", "eastus", "A100-SXM-40GB", 8, 27.197),
    ("v6", "Standard_NV36ads_A10_v5", "eastus", "A10", 1, 3.2),
    ("v6", "Standard_NV72ads_A10_v5", "eastus", "A10", 2, 6.52),
    ("v6", "Standard_NV12s_v3", "eastus", "M60", 1, 1.14),
    ("v8", "Standard_NC12s_v3", "eastus", "V100-SXM-16GB", 2, 6.12),
    ("v8", "Standard_NC16as_T4_v3", "eastus", "T4", 1, 1.204),
    ("v8", "Standard_NC24ads_A100_v4", "eastus", "A100-PCIE-80GB", 1, 3.673),
    ("v8", "Standard_NC24ads_A100_v4", "westus3", "A100-PCIE-80GB", 1, 3.673),
    ("v8", "Standard_NC24s_v3", "eastus", "V100-SXM-16GB", 4, 12.24),
    ("v8", "Standard_NC40ads_H100_v5", "eastus", "H100-NVL-94GB", 1, 6.98),
    ("v8", "Standard_NC48ads_A100_v4", "eastus", "A100-PCIE-80GB", 2, 7.346),
    ("v8", "Standard_NC4as_T4_v3", "eastus", "T4", 1, 0.526),
    ("v8", "Standard_NC64as_T4_v3", "eastus", "T4", 4, 4.352),
    ("v8", "Standard_NC6s_v3", "eastus", "V100-SXM-16GB", 1, 3.06),
    ("v8", "Standard_NC80adis_H100_v5", "eastus", "H100-NVL-94GB", 2, 13.96),
    ("v8", "Standard_NC96ads_A100_v4", "eastus", "A100-PCIE-80GB", 4, 14.692),
    ("v8", "Standard_ND40rs_v2", "eastus", "V100-SXM-32GB", 8, 22.032),
    ("v8", "Standard_ND96amsr_A100_v4", "eastus", "A100-SXM-80GB", 8, 32.77),
    ("v8", "Standard_ND96amsr_A100_v4", "southcentralus", "A100-SXM-80GB", 8, 39.324),
    ("v8", "Standard_ND96asr_v4", "eastus", "A100-SXM-40GB", 8, 27.197),
    ("v8", "Standard_NV36ads_A10_v5", "eastus", "A10", 1, 3.2),
    ("v8", "Standard_NC24", "westus2", "K80", 4, 3.6),
    ("v8", "Standard_NV12s_v3", "eastus", "M60", 1, 1.14),
    ("v8", "Standard_NV16as_v4", "eastus", "MI25", 1, 0.932),
]

#: Per-GPU memory (GB as labelled) of the cards Azure's rows resolve to.
MEMORY_GB = {
    "V100-SXM-16GB": 16.0,
    "V100-SXM-32GB": 32.0,
    "T4": 16.0,
    "A100-PCIE-80GB": 80.0,
    "A100-SXM-40GB": 40.0,
    "A100-SXM-80GB": 80.0,
    "H100-NVL-94GB": 94.0,
    "A10": 24.0,
    "K80": 12.0,  # per GPU: a K80 board is two 12 GB GPUs, and Azure counts GPUs
    "M60": 8.0,  # per GPU, likewise two per board
    "MI25": 16.0,
}

#: Every spot offer: version → {(instance, region): USD/h}. The NC H100 v5 rows list
#: SpotPrice = Price (6.98, 13.96) and get none; v6's K80 Promo row has no SpotPrice; the
#: others are spot at their SpotPrice.
SPOT: dict[str, dict[tuple[str, str], float]] = {
    "v6": {
        ("Standard_NC12s_v3", "eastus"): 0.7956,
        ("Standard_NC24ads_A100_v4", "eastus"): 0.444433,
        ("Standard_NC4as_T4_v3", "eastus"): 0.062699,
        ("Standard_NC64as_T4_v3", "eastus"): 0.518758,
        ("Standard_NC96ads_A100_v4", "eastus"): 1.777732,
        ("Standard_ND40rs_v2", "eastus"): 2.42352,
        ("Standard_ND96amsr_A100_v4", "eastus"): 3.6047,
        ("Standard_ND96asr_v4", "eastus"): 2.99167,
        ("Standard_NV36ads_A10_v5", "eastus"): 0.8,
        ("Standard_NV72ads_A10_v5", "eastus"): 1.63,
        ("Standard_NV12s_v3", "eastus"): 0.1254,
    },
    "v8": {
        ("Standard_NC12s_v3", "eastus"): 0.7956,
        ("Standard_NC16as_T4_v3", "eastus"): 0.143517,
        ("Standard_NC24ads_A100_v4", "eastus"): 0.444433,
        ("Standard_NC24ads_A100_v4", "westus3"): 0.40403,
        ("Standard_NC24s_v3", "eastus"): 1.5912,
        ("Standard_NC48ads_A100_v4", "eastus"): 0.888866,
        ("Standard_NC4as_T4_v3", "eastus"): 0.062699,
        ("Standard_NC64as_T4_v3", "eastus"): 0.518758,
        ("Standard_NC6s_v3", "eastus"): 0.3978,
        ("Standard_NC96ads_A100_v4", "eastus"): 1.777732,
        ("Standard_ND40rs_v2", "eastus"): 2.42352,
        ("Standard_ND96amsr_A100_v4", "eastus"): 3.6047,
        ("Standard_ND96amsr_A100_v4", "southcentralus"): 4.32564,
        ("Standard_ND96asr_v4", "eastus"): 2.99167,
        ("Standard_NV36ads_A10_v5", "eastus"): 0.8,
        ("Standard_NC24", "westus2"): 0.396,
        ("Standard_NV12s_v3", "eastus"): 0.1254,
        ("Standard_NV16as_v4", "eastus"): 0.10252,
    },
}


@pytest.mark.parametrize("version", VERSIONS)
def test_the_cloud_is_taken_from_the_url_and_gpu_rows_are_counted(version: str) -> None:
    feed = real_rows(version)
    assert {o.provider for o in feed.offers} == {"azure"}
    assert feed.rows == READ[version][0]
    assert {o.citation for o in feed.offers} == {"SkyPilot catalog azure/vms.csv"}


@pytest.mark.parametrize(("version", "instance", "region", "gpu_id", "count", "price"), ON_DEMAND)
def test_gpu_rows_become_on_demand_offers(
    version: str, instance: str, region: str, gpu_id: str, count: int, price: float
) -> None:
    offer = only(real_rows(version), instance_type=instance, region=region, spot=False)
    assert (offer.gpu_id, offer.gpu_count) == (gpu_id, count)
    assert offer.price_usd_per_hour == pytest.approx(price)
    # The rows give no memory: it comes from the card the name resolves to (GB as labelled).
    assert offer.gpu_memory_gib is None
    assert get_gpu(offer.gpu_id).memory_gb == pytest.approx(MEMORY_GB[gpu_id])


@pytest.mark.parametrize("version", VERSIONS)
def test_the_on_demand_offers_are_exactly_those(version: str) -> None:
    made = {(o.instance_type, o.region) for o in real_rows(version).offers if not o.spot}
    assert made == {(i, r) for v, i, r, *_ in ON_DEMAND if v == version}


@pytest.mark.parametrize("version", VERSIONS)
def test_spot_offers_only_where_spot_price_is_set_and_below_price(version: str) -> None:
    spot = {
        (o.instance_type, o.region): o.price_usd_per_hour
        for o in real_rows(version).offers
        if o.spot
    }
    assert spot == {key: pytest.approx(price) for key, price in SPOT[version].items()}


@pytest.mark.parametrize("version", VERSIONS)
def test_rows_gpufit_cannot_read_are_rejected_with_reasons(version: str) -> None:
    feed = real_rows(version)
    errors = READ[version][1]
    assert feed.rejected == len(errors)
    assert feed.errors == errors
    assert not [o for o in feed.offers if o.instance_type == "Standard_ND96isr_H100_v5"]


def test_a_fractional_gpu_partition_is_rejected_not_priced_as_a_whole_gpu() -> None:
    """Azure's smaller NVads A10 v5 sizes are a fraction of one A10; the fixtures have none, so
    this row is the v8 fixture's NV36ads_A10_v5 row with AcceleratorCount edited to 1/6 (an
    edited row, not a catalog one)."""
    header, rows = body("v8").decode().split("\n", 1)
    real = next(r for r in rows.splitlines() if r.startswith("Standard_NV36ads_A10_v5,"))
    edited = real.replace("A10,1,", "A10,0.16666666666666666,", 1)
    feed = parse_any(f"{header}\n{real}\n{edited}\n", source=url("v8"))
    assert feed.rejected == 1
    assert feed.errors == (
        "row 2: AcceleratorCount '0.16666666666666666' is not a whole number of GPUs",
    )
    assert {o.gpu_count for o in feed.offers} == {1}


@pytest.mark.parametrize("version", VERSIONS)
def test_nd_series_vms_are_networked_over_infiniband(version: str) -> None:
    """ND A100 v4 and NDm A100 v4: a 200 Gb/s HDR link per GPU (1.6 Tb/s a VM); NDv2: 100 Gb/s
    EDR (azure-docs ND-series summaries); NC VMs have no cluster fabric."""
    offers = {o.instance_type: o for o in real_rows(version).offers if not o.spot}
    for name, gbps in (("Standard_ND96asr_v4", 1600.0), ("Standard_ND96amsr_A100_v4", 1600.0)):
        assert (offers[name].fabric, offers[name].fabric_gbps) == (Fabric.INFINIBAND, gbps)
    if version == "v8":
        nd40 = offers["Standard_ND40rs_v2"]
        assert (nd40.fabric, nd40.fabric_gbps) == (Fabric.INFINIBAND, 100.0)
    assert offers["Standard_NC24ads_A100_v4"].fabric is Fabric.NONE
