"""The SkyPilot builder's inline row path, compared with the long per-row path it skips.

``Builder.add_table`` adds a common row (readable shape, plain positive prices, a region)
without calling the per-row methods; every other row takes ``Builder._add_row``'s path (the
one GCP's self-contained rows take). Both must add the same offers and log the same rows,
rejections and reasons, in the same order.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recommender.feeds._rows import RowLog
from recommender.feeds.native import MAX_USD_PER_GPU_HOUR, MIN_USD_PER_GPU_HOUR
from recommender.feeds.skypilot_builder import Builder, getters, price_bounds
from recommender.offers import MAX_OFFER_USD_PER_HOUR, Offer

HEADER = [
    "InstanceType",
    "AcceleratorName",
    "AcceleratorCount",
    "vCPUs",
    "MemoryGiB",
    "GpuInfo",
    "Price",
    "SpotPrice",
    "Region",
    "AvailabilityZone",
]
#: The same columns without AvailabilityZone: rows are padded with an empty zone.
NO_ZONE_HEADER = HEADER[:-1]
INFO = "{'Gpus': [{'Name': 'H100', 'MemoryInfo': {'SizeInMiB': 81920}}]}"

#: Cells chosen to hit every check: blank, zero, negative, non-finite, unreadable, padded,
#: just inside and outside the per-GPU-hour and per-offer bounds, equal and lower spot.
PRICES = [
    "",
    " ",
    "0",
    "0.0",
    "-1",
    "nan",
    "inf",
    "-inf",
    "abc",
    " 2.5 ",
    "2.5",
    "2.50",
    "3",
    "1e-9",
    "0.01",
    "0.049",
    "0.05",
    "100",
    "100.0001",
    "800",
    "800.01",
    "9999.99",
    "10000",
    "1e400",
    "55.04",
    "12.4",
]
COUNTS = ["1", "8", "8.0", "2", "0", "1.5", "", "x", "101"]
SHAPE_CELLS = ["", "16", "bad", "-4", "inf", "0"]
REGIONS = ["us-east-1", " us-east-1 ", "", "  ", "eu-west-1", "a/b"]
ZONES = ["", "us-east-1a", " us-east-1a", "us-east-1b", "b/c", "x"]
INSTANCES = ["p5.48xlarge", "p4d.24xlarge", "", " g5.xlarge ", "a", "a/b"]
GPUS = ["H100", "A100", "", "TPU-v4", "NoSuchGPU"]

row_cells = st.tuples(
    st.sampled_from(INSTANCES),
    st.sampled_from(GPUS),
    st.sampled_from(COUNTS),
    st.sampled_from(SHAPE_CELLS),
    st.sampled_from(SHAPE_CELLS),
    st.sampled_from([INFO, "", "not a literal"]),
    st.sampled_from(PRICES),
    st.sampled_from(PRICES),
    st.sampled_from(REGIONS),
    st.sampled_from(ZONES),
).map(list)


def _fast(header: list[str], rows: list[list[str]]) -> tuple[list[Offer], RowLog]:
    log = RowLog()
    builder = Builder("aws", "test", log)
    builder.add_table("row", header, ((n, list(cells)) for n, cells in enumerate(rows, 1)))
    return builder.offers(), log


def _reference(header: list[str], rows: list[list[str]]) -> tuple[list[Offer], RowLog]:
    """Every row through the long path (``_add_row``), as ``add_table`` read them before."""
    log = RowLog()
    builder = Builder("aws", "test", log)
    shape_of, prices_of, padded = getters(header)
    for number, cells in enumerate(rows, 1):
        cells = list(cells)
        if padded:
            cells.append("")
        builder._add_row(f"row {number}", shape_of(cells), prices_of(cells))
    return builder.offers(), log


def _same(header: list[str], rows: list[list[str]]) -> None:
    fast_offers, fast_log = _fast(header, rows)
    reference_offers, reference_log = _reference(header, rows)
    assert fast_offers == reference_offers
    # Equal floats may differ in type (8 and 8.0): compare the field types too.
    assert [[type(getattr(o, f)) for f in Offer.__slots__] for o in fast_offers] == [
        [type(getattr(o, f)) for f in Offer.__slots__] for o in reference_offers
    ]
    assert fast_log == reference_log


@settings(max_examples=400, deadline=None)
@given(st.lists(row_cells, max_size=30))
def test_inline_rows_add_what_the_long_path_adds(rows: list[list[str]]) -> None:
    _same(HEADER, rows)


@settings(max_examples=100, deadline=None)
@given(st.lists(row_cells, max_size=20))
def test_inline_rows_of_a_padded_table_add_what_the_long_path_adds(
    rows: list[list[str]],
) -> None:
    _same(NO_ZONE_HEADER, [cells[:-1] for cells in rows])


def test_edge_rows_take_the_long_path_with_its_reasons() -> None:
    good = ["p5.48xlarge", "H100", "8", "192", "2048", INFO]
    rows = [
        [*good, "55.04", "12.4", "us-east-1", "us-east-1a"],
        [*good, "55.04", "12.4", "us-east-1", "us-east-1a"],  # the same spot offer again
        [*good, "", "12.4", "us-east-1", "us-east-1b"],  # spot only
        [*good, "55.04", "55.04", "us-east-1", "us-east-1c"],  # spot not below on-demand
        [*good, "55.04", "0", "us-east-1", "us-east-1d"],  # zero spot: none
        [*good, "0.1", "", "us-east-1", ""],  # under the per-GPU-hour floor
        [*good, "10000", "", "eu-west-1", ""],  # the per-offer ceiling
        [*good, "55.04", "nan", "eu-west-1", ""],
        [*good, "55.04", "12.4", " ", "z"],  # no region
        [*good, " 55.04 ", "", " eu-west-1 ", " z "],  # padded cells
        ["p5.48xlarge", "H100", "8", "bad", "2048", INFO, "55.04", "", "eu-west-1", ""],
    ]
    _same(HEADER, rows)
    offers, log = _fast(HEADER, rows)
    assert log.rows == len(rows)
    assert log.rejected == 4
    assert [o.spot for o in offers].count(True) == 2


def _believable(price: float, count: int) -> bool:
    """The exact checks a row's price passes in the long path."""
    return (
        0 < price < MAX_OFFER_USD_PER_HOUR
        and MIN_USD_PER_GPU_HOUR <= price / count <= MAX_USD_PER_GPU_HOUR
    )


@given(
    st.integers(min_value=1, max_value=10**6),
    st.floats(min_value=0, max_value=1e6, allow_nan=False),
)
def test_price_bounds_let_through_only_believable_prices(count: int, price: float) -> None:
    low, high = price_bounds(count)
    if low <= price <= high:
        assert _believable(price, count)


@pytest.mark.parametrize("count", [1, 2, 3, 7, 8, 16, 99, 100, 101, 1000, 10**6])
def test_price_bounds_edges_are_believable(count: int) -> None:
    low, high = price_bounds(count)
    # No price is believable for a million GPUs (0.01 USD each is the per-offer ceiling).
    assert low < high or count >= MAX_OFFER_USD_PER_HOUR / MIN_USD_PER_GPU_HOUR
    for price in (low, high, math.nextafter(low, math.inf), math.nextafter(high, 0)):
        if low <= price <= high:
            assert _believable(price, count)
    # Just outside the exact range is outside the bounds too.
    assert not low <= MIN_USD_PER_GPU_HOUR * count <= high
    assert not low <= min(MAX_USD_PER_GPU_HOUR * count, MAX_OFFER_USD_PER_HOUR) <= high


def test_on_demand_rows_of_a_region_become_one_offer_or_one_per_zone() -> None:
    good = ["p5.48xlarge", "H100", "8", "192", "2048", INFO]
    other = ["p5.48xlarge", "H100", "8", "96", "2048", INFO]  # same type, another shape
    rows = [
        # One regional price repeated per zone (equal after rounding to 1e-6): one offer.
        [*good, "55.0400001", "", "us-east-1", "a"],
        [*good, "55.0400002", "", "us-east-1", "b"],
        # Zones priced apart: one offer per zone; a repeated zone's last row wins, in
        # first-seen order, with that row's shape.
        [*good, "50", "", "eu-west-1", "x"],
        [*good, "51", "", "eu-west-1", "y"],
        [*other, "52", "", "eu-west-1", "x"],
        [*good, "60", "", "ap-south-1", "z"],
    ]
    _same(HEADER, rows)
    offers, _ = _fast(HEADER, rows)
    assert [(o.region, o.zone, o.price_usd_per_hour, o.vcpus) for o in offers] == [
        ("us-east-1", "", 55.0400001, 192.0),
        ("eu-west-1", "x", 52.0, 96.0),
        ("eu-west-1", "y", 51.0, 192.0),
        ("ap-south-1", "", 60.0, 192.0),
    ]
