"""GCP's pairing of GPUs with host VMs, against every GPU row of the real catalog.

``skypilot_gcp_gpu_rows.csv`` holds every GPU accelerator row of SkyPilot's
``catalogs/v8/gcp/vms.csv``, every host row of the fixed-GPU families and the g2-standard and
n1-highmem host rows the attachable GPUs pair with (its first line names the commit and rows).
Issue #22 asks that fewer than 10 % of the GPU rows are rejected; the ones left are rows the
catalog gives no partner for (an accelerator count no host shape of that zone carries, or the
reverse), which no pairing can price.
"""

from __future__ import annotations

import pytest

from recommender.feeds.base import ParsedFeed
from recommender.feeds.skypilot import parse_skypilot
from tests.factories import only
from tests.feeds.conftest import catalog_bytes, fixture_bytes

#: Rows in the fixture: 307 fixed-family host rows + 747 accelerator rows (the attachable
#: GPUs' host rows are not GPU rows and are not counted).
GPU_ROWS = 1054
ACCELERATOR_ROWS = 747


def real_rows() -> ParsedFeed:
    body = fixture_bytes("skypilot_gcp_gpu_rows.csv").split(b"\n", 1)[1]  # the source comment
    return parse_skypilot(body, source="catalogs/v8/gcp/vms.csv")


def test_fewer_than_a_tenth_of_the_gpu_rows_are_rejected() -> None:
    """36 of 1,054 (3.4 %): 31 accelerator rows without a host shape in their zone (11
    A100x16 without a2-megagpu-16g, 15 H100x1/2/4 without a3-highgpu-1g/2g/4g, 5 H100-MEGAx8
    without a3-megagpu-8g) and 5 host rows without an accelerator row in their zone."""
    feed = real_rows()
    assert feed.rows == GPU_ROWS
    assert feed.rejected / feed.rows < 0.10
    assert feed.rejected == 36
    allowed = ("has no host VM row to price it with", "accelerator row in")
    assert all(any(a in e for a in allowed) for e in feed.errors), feed.errors


def test_every_gpu_of_the_file_becomes_offers() -> None:
    """Each accelerator GCP lists pairs with its hosts: n1 for T4/V100/P100/P4, g2 for L4,
    a2/a3/a4 (edge and nolssd included) for the rest."""
    feed = real_rows()
    hosts: dict[str, set[str]] = {o.gpu_id: set() for o in feed.offers}
    for offer in feed.offers:
        hosts[offer.gpu_id].add(offer.instance_type.rsplit("-", 1)[0])
    assert (
        hosts["T4"] == hosts["V100-SXM-16GB"] == hosts["P100-16GB"] == hosts["P4"] == {"n1-highmem"}
    )
    assert hosts["L4"] == {"g2-standard"}
    assert hosts["A100-SXM-40GB"] == {"a2-highgpu", "a2-megagpu"}
    assert hosts["A100-SXM-80GB"] == {"a2-ultragpu"}
    assert {"a3-highgpu", "a3-edgegpu", "a3-edgegpu-8g", "a3-megagpu"} <= hosts["H100-SXM-80GB"]
    assert hosts["H200-SXM-141GB"] == {"a3-ultragpu", "a3-ultragpu-8g"}
    assert hosts["B200-180GB"] == {"a4-highgpu"}


def test_attachable_gpus_take_the_cheapest_fitting_host() -> None:
    """us-central1-a: L4x1 on g2-standard-4 (0.14679 + 0.56004), L4x8 on g2-standard-96
    (3.52301 + 4.48032); V100x1 on n1-highmem-8 (0.47321 + 2.48); T4x4 needs 48 vCPUs:
    n1-highmem-64 (3.7857 + 1.4)."""
    feed = real_rows()

    def price(gpu: str, count: int) -> tuple[str, float]:
        offer = only(feed, gpu_id=gpu, gpu_count=count, spot=False, region="us-central1")
        return offer.instance_type, offer.price_usd_per_hour

    assert price("L4", 1) == ("g2-standard-4", pytest.approx(0.14679 + 0.56004))
    assert price("L4", 8) == ("g2-standard-96", pytest.approx(3.52301 + 4.48032))
    assert price("V100-SXM-16GB", 1) == ("n1-highmem-8", pytest.approx(0.47321 + 2.48))
    assert price("T4", 4) == ("n1-highmem-64", pytest.approx(3.7857 + 1.4))


def test_tpu_rows_and_their_sentinel_price_are_never_offers() -> None:
    """GCP's TPU rows (tpu-v6e-1 at 700.0, SkyPilot's price for a zone without it) are not GPU
    training offers: skipped and not counted, so the sentinel is never priced."""
    feed = parse_skypilot(catalog_bytes("gcp"), source="catalogs/v8/gcp/vms.csv")
    assert b"tpu-v6e-1,asia-east1,asia-east1-c,700.0,700.0" in catalog_bytes("gcp")
    assert not [o for o in feed.offers if "tpu" in f"{o.gpu_id} {o.instance_type}".lower()]
    assert all(o.price_usd_per_hour != 700.0 for o in feed.offers)
    assert feed.rows == 16  # the GPU rows only, as before the TPU rows were added
