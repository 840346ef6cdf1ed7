"""SkyPilot catalog rows → offers, for every cloud: shapes, ``GpuInfo`` cells, the builder.

A catalog repeats each instance type's cells on every region and zone row; :class:`Builder`
reads them once per distinct cells (a :class:`Shape`) and merges each region's repeated
on-demand rows into one offer. :mod:`recommender.feeds.skypilot` drives it;
:mod:`recommender.feeds.skypilot_gcp` extends it for GCP's host + accelerator pricing.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from recommender.feeds._rows import (
    RowError,
    RowLog,
    check_price,
    optional_float,
    price_cell,
    resolve_gpu,
    whole_count,
)
from recommender.feeds.fabrics import fabric_for
from recommender.feeds.fast_parse import python_literal
from recommender.feeds.native import MAX_USD_PER_GPU_HOUR, MIN_USD_PER_GPU_HOUR
from recommender.offers import MAX_OFFER_USD_PER_HOUR, Fabric, Offer

__all__ = ["Builder", "PriceCells", "Shape", "ShapeKey", "column_index", "getters"]

#: Longest ``GpuInfo`` cell parsed; why: the largest real cell is ~300 characters, and
#: ``ast.literal_eval`` on attacker-sized input is needlessly slow.
_MAX_GPU_INFO_CHARS = 4096


def column_index(header: list[str]) -> dict[str, int]:
    """Column name → index; a repeated name means its last column (as a dict of the row)."""
    return {name: index for index, name in enumerate(header)}


def _gpu_info(cell: str | None) -> dict[str, Any] | None:
    if cell is None or not cell.strip():
        return None
    if len(cell) > _MAX_GPU_INFO_CHARS:
        raise RowError("GpuInfo is implausibly long")
    try:
        value = python_literal(cell.strip())
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        raise RowError(f"GpuInfo {cell[:60]!r} is not a Python literal") from None
    if not isinstance(value, dict):
        raise RowError("GpuInfo is not a dict")
    return value


def _first_gpu(info: dict[str, Any] | None) -> dict[str, Any]:
    gpus = info.get("Gpus") if info else None
    if isinstance(gpus, list) and gpus and isinstance(gpus[0], dict):
        return gpus[0]
    return {}


def _memory_gib(cloud: str, gpu: dict[str, Any]) -> float | None:
    memory = gpu.get("MemoryInfo")
    size = memory.get("SizeInMiB") if isinstance(memory, dict) else None
    if isinstance(size, bool) or not isinstance(size, int | float) or size <= 0:
        return None
    if cloud == "runpod":
        return float(size) * 1e9 / 2**30  # RunPod's SizeInMiB holds GB (80 = A100-80GB)
    return float(size) / 1024


#: Columns an adapter reads per row: the ones that describe the instance shape (repeated on
#: every region/zone row of an instance type) and the ones that price it.
_SHAPE_COLUMNS: tuple[str, ...] = ("AcceleratorName", "GpuInfo", "AcceleratorCount")
_SHAPE_COLUMNS += ("InstanceType", "vCPUs", "MemoryGiB")
_PRICE_COLUMNS = ("Price", "SpotPrice", "Region", "AvailabilityZone")

#: A row's shape cells: accelerator, GpuInfo, count, instance type, vCPUs, RAM.
ShapeKey = tuple[str, str | None, str, str, str | None, str | None]
#: A row's price cells: Price, SpotPrice, Region, AvailabilityZone.
PriceCells = tuple[str, str, str, str]


def getters(
    header: list[str],
) -> tuple[Callable[[list[str]], ShapeKey], Callable[[list[str]], PriceCells], bool]:
    """A document's shape-cell and price-cell getters, and whether rows need padding.

    A missing optional column reads as an empty cell appended to the row (``padded``).
    """
    column = column_index(header)
    pad = len(header)
    padded = any(name not in column for name in _SHAPE_COLUMNS + _PRICE_COLUMNS)
    shape_of = itemgetter(*(column.get(name, pad) for name in _SHAPE_COLUMNS))
    prices_of = itemgetter(*(column.get(name, pad) for name in _PRICE_COLUMNS))
    return shape_of, prices_of, padded


@dataclass(slots=True, eq=False)
class Shape:
    """What every region/zone row of one instance type shares (read once per distinct cells).

    ``template`` is the shape's first offer; the others are built from it
    (:meth:`Offer.priced`) instead of checking and storing all 16 fields again.
    """

    instance_type: str
    gpu_id: str
    count: int
    memory_gib: float | None
    fabric: Fabric
    fabric_gbps: float | None
    vcpus: float | None
    ram_gib: float | None
    #: Why the vCPUs or MemoryGiB cell is unreadable; reported after the row's price checks.
    late_error: str = ""
    template: Offer | None = None
    #: Whole-instance prices from ``low`` to ``high`` pass every price check of a row
    #: (:func:`price_bounds`); the defaults let none through, so every price is checked.
    low: float = math.inf
    high: float = -math.inf


#: Relative margin by which :func:`price_bounds` narrows the believable range; why: far
#: above the rounding error of ``price / count`` (~1e-16), far below any real price step.
_BOUNDS_MARGIN = 1e-9


def price_bounds(count: int) -> tuple[float, float]:
    """Whole-instance prices that surely pass the per-GPU-hour and per-offer checks.

    Narrowed by :data:`_BOUNDS_MARGIN`, so a price inside never fails the exact checks of
    :meth:`Builder._add_prices`; a price outside (or near an edge) takes those checks.
    """
    low = MIN_USD_PER_GPU_HOUR * count * (1 + _BOUNDS_MARGIN)
    high = min(MAX_USD_PER_GPU_HOUR * count, MAX_OFFER_USD_PER_HOUR) * (1 - _BOUNDS_MARGIN)
    return low, high


#: Marks a CPU-only or TPU row (not a GPU offer, not counted).
_SKIP = "skip"

#: The on-demand rows of one instance type in one region: each row's shape, zone and USD/h
#: in turn, in one flat list (``Shape``, ``str``, ``float``, ``Shape``…); why: no tuple per
#: row, so ~20k fewer objects for the cyclic GC to count and scan in a 20k-row catalog.
_Zoned = list[Any]

#: A price cell ``float()`` could not read; why: NaN fails every range check, so such a cell
#: takes the slow path that tells blank from zero from garbage.
_NAN = math.nan
#: Local name for ``math.inf``; why: read once per price cell, a module global is cheaper.
_INF = math.inf


class Builder:
    """Collects offers; merges each region's repeated on-demand rows into one offer.

    A catalog repeats each instance type's cells (GPU, count, ``GpuInfo``, vCPUs, RAM) on every
    region and zone row, so what they yield (or why they are rejected) is read once per
    distinct cells; offers are built once, at the end, with their final price and zone.
    """

    def __init__(self, cloud: str, source: str, log: RowLog) -> None:
        self.cloud = cloud
        self.source = source
        self.log = log
        self._citation = f"SkyPilot catalog {cloud}/vms.csv"
        self._on_demand: dict[tuple[str, str], _Zoned] = {}
        self._spot: dict[str, Offer] = {}
        self._shapes: dict[ShapeKey, Shape | str] = {}
        self._gpus: dict[str | None, tuple[str, float | None] | str] = {}

    def add_table(
        self, where: str, header: list[str], rows: Iterable[tuple[int, list[str]]]
    ) -> None:
        """Add the rows of one document (cells in ``header`` order), labelled ``where N``.

        A row of a readable shape whose prices ``float()`` reads as positive and believable,
        with a region, is added here inline; any other row goes through :meth:`_add_cells`,
        which reads it the long way and rejects it with the reason. Both add the same.
        """
        shape_of, prices_of, padded = getters(header)
        shapes = self._shapes
        add = self._add_cells
        log = self.log
        on_demand = self._on_demand
        spots = self._spot
        for number, cells in rows:
            if padded:
                cells.append("")
            key: ShapeKey = shape_of(cells)
            shape = shapes.get(key)
            if shape is None:
                shape = shapes[key] = self._read_shape(key)
            if shape is _SKIP:
                continue
            log.rows += 1
            price_text, spot_text, region_text, zone = prices_of(cells)
            try:
                if isinstance(shape, str):
                    raise RowError(shape)
                # The common row, inline (no call per row): every check below is one that
                # _add_cells and _add_prices make; a row failing any of them takes that path.
                try:
                    price = float(price_text)
                    spot = float(spot_text) if spot_text else None
                except ValueError:
                    price, spot = _NAN, None
                region = region_text.strip()
                low, high = shape.low, shape.high
                if low <= price <= high and region and (spot is None or low <= spot <= high):
                    zone = zone.strip()
                    instance_type = shape.instance_type
                    zoned = on_demand.get((instance_type, region))
                    if zoned is None:
                        on_demand[instance_type, region] = [shape, zone, price]
                    else:
                        zoned += shape, zone, price
                    if spot is not None and spot < price:
                        spot_key = f"{instance_type}/{region}/{zone}"
                        if spot_key not in spots:
                            spots[spot_key] = self._offer(shape, spot, True, region, zone)
                else:
                    add(shape, price_text, spot_text, region_text, zone)
            except RowError as exc:
                log.reject(f"{where} {number}", str(exc))

    def _add_row(self, where: str, key: ShapeKey, prices: PriceCells) -> None:
        """One row with its own shape: :meth:`add_table`'s loop body, for the GCP documents."""
        shape = self._shapes.get(key)
        if shape is None:
            shape = self._shapes[key] = self._read_shape(key)
        if shape is _SKIP:
            return
        self.log.rows += 1
        try:
            if isinstance(shape, str):
                raise RowError(shape)
            self._add_cells(shape, *prices)
        except RowError as exc:
            self.log.reject(where, str(exc))

    def _gpu(self, cell: str | None) -> tuple[str, float | None]:
        """The card name and per-GPU memory of a ``GpuInfo`` cell."""
        known = self._gpus.get(cell)
        if known is None:
            try:
                gpu = _first_gpu(_gpu_info(cell))
                known = (str(gpu.get("Name", "")), _memory_gib(self.cloud, gpu))
            except RowError as exc:
                known = str(exc)
            self._gpus[cell] = known
        if isinstance(known, str):
            raise RowError(known)
        return known

    def _read_shape(self, key: ShapeKey) -> Shape | str:
        """The shape of a row's shape cells, ``_SKIP``, or why the row is rejected."""
        accelerator_cell, gpu_info, count_cell, instance_cell, vcpus_cell, ram_cell = key
        accelerator = accelerator_cell.strip()
        if not accelerator or accelerator.lower().startswith("tpu"):
            return _SKIP  # CPU-only or TPU: not a GPU offer
        try:
            card, memory_gib = self._gpu(gpu_info)
            count = whole_count(count_cell, "AcceleratorCount")
            instance_type = instance_cell.strip()
            if not instance_type:
                raise RowError("InstanceType is empty")
            gpu_id = resolve_gpu(
                accelerator,
                memory_gib=memory_gib,
                pcie="pcie" in f"{instance_type} {card}".lower(),
            )
        except RowError as exc:
            return str(exc)
        late_error = ""
        vcpus = ram_gib = None
        try:
            vcpus = optional_float(vcpus_cell, "vCPUs")
            ram_gib = optional_float(ram_cell, "MemoryGiB")
        except RowError as exc:
            late_error = str(exc)
        fabric, gbps = fabric_for(self.cloud, instance_type, count)
        # A shape whose row is rejected late lets no price through add_table's inline path.
        low, high = price_bounds(count) if not late_error else (math.inf, -math.inf)
        return Shape(
            instance_type,
            gpu_id,
            count,
            memory_gib,
            fabric,
            gbps,
            vcpus if vcpus and vcpus > 0 else None,
            ram_gib if ram_gib and ram_gib > 0 else None,
            late_error,
            low=low,
            high=high,
        )

    def _add_cells(
        self,
        shape: Shape,
        price_cell_: str | None,
        spot_cell: str | None,
        region_cell: str,
        zone: str | None,
    ) -> None:
        # float() reads the usual positive finite number here, without a call per cell (a call
        # costs more than the parse); any other cell goes through price_cell for its meaning
        # or message (NaN stands for "float() could not read it").
        try:
            value = float(price_cell_) if price_cell_ else _NAN
        except ValueError:
            value = _NAN
        price = value if 0 < value < _INF else price_cell(price_cell_, "Price")
        try:
            value = float(spot_cell) if spot_cell else _NAN
        except ValueError:
            value = _NAN
        spot = value if 0 < value < _INF else price_cell(spot_cell, "SpotPrice")
        if shape.late_error:
            raise RowError(shape.late_error)
        region = region_cell.strip()
        if not region:
            raise RowError("Region is empty")
        self._add_prices(shape, region, zone, price, spot)

    def _add_prices(
        self, shape: Shape, region: str, zone: str | None, price: float | None, spot: float | None
    ) -> None:
        if price is None and spot is None:
            raise RowError("no price (Price and SpotPrice empty or zero)")
        count = shape.count
        if price is not None and not MIN_USD_PER_GPU_HOUR <= price / count <= MAX_USD_PER_GPU_HOUR:
            check_price(price, count, "Price")  # raises, with the message
        if spot is not None and not MIN_USD_PER_GPU_HOUR <= spot / count <= MAX_USD_PER_GPU_HOUR:
            check_price(spot, count, "SpotPrice")
        zone = (zone or "").strip()
        if price is not None:
            if not 0 < price < MAX_OFFER_USD_PER_HOUR:
                _check_offer_price(price)  # raises, with the message
            key = (shape.instance_type, region)
            zoned = self._on_demand.get(key)
            if zoned is None:
                self._on_demand[key] = [shape, zone, price]
            else:
                zoned += shape, zone, price
        # A spot price at or above on-demand buys only preemption risk (RunPod's catalog copies
        # Price into SpotPrice; AWS has such rows too): no spot offer then.
        if spot is not None and (price is None or spot < price):
            # The spot offer's key (Offer.key) without its constant provider and kind parts.
            spot_key = f"{shape.instance_type}/{region}/{zone}"
            if not 0 < spot < MAX_OFFER_USD_PER_HOUR:
                _check_offer_price(spot)  # raises, with the message
            if spot_key not in self._spot:
                self._spot[spot_key] = self._offer(shape, spot, True, region, zone)

    def _offer(self, shape: Shape, price: float, spot: bool, region: str, zone: str) -> Offer:
        template = shape.template
        if template is not None:
            return template.priced(price, spot, region, zone)
        shape.template = Offer(
            provider=self.cloud,
            instance_type=shape.instance_type,
            gpu_id=shape.gpu_id,
            gpu_count=shape.count,
            price_usd_per_hour=price,
            spot=spot,
            region=region,
            zone=zone,
            gpu_memory_gib=shape.memory_gib,
            vcpus=shape.vcpus,
            ram_gib=shape.ram_gib,
            fabric=shape.fabric,
            fabric_gbps=shape.fabric_gbps,
            source=self.source,
            citation=self._citation,
        )
        return shape.template

    def offers(self) -> list[Offer]:
        result: list[Offer] = []
        add = result.append
        for (_, region), zoned in self._on_demand.items():
            prices = zoned[2::3]
            # Equal floats round equal: the rounding is only needed when the prices differ.
            if len(prices) == 1 or len(set(prices)) == 1 or len({round(p, 6) for p in prices}) == 1:
                # One regional price repeated per zone (AWS): one offer for the region.
                add(self._offer(zoned[0], prices[0], False, region, ""))
            else:
                # One offer per zone (the last row of a repeated zone wins, in first-seen order).
                by_zone = dict(zip(zoned[1::3], zip(zoned[0::3], prices, strict=True), strict=True))
                for zone, (shape, price) in by_zone.items():
                    add(self._offer(shape, price, False, region, zone))
        result.extend(self._spot.values())
        return result


def _check_offer_price(price: float) -> None:
    # Offer's own bound, checked when a price is read so that an implausible one fails where it
    # did when offers were built per row.
    if not 0 < price < MAX_OFFER_USD_PER_HOUR:
        raise RowError(f"price {price:g} USD/h for the instance is implausible")
