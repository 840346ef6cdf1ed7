"""SkyPilot catalog adapter: ``catalogs/v8/<cloud>/vms.csv`` → offers.

The format (see SkyPilot's ``sky/catalog``) has one header per cloud with the same column names
in different orders, so every row is read by column name. Facts the adapter relies on:

* ``Price`` and ``SpotPrice`` are USD/h for the whole row; empty or ``0`` means "no price"
  (AWS ``p5e.48xlarge`` has no on-demand price, only spot). A row with neither is rejected.
* AWS lists on-demand per region, repeated on every availability-zone row, and spot per zone:
  each row yields one spot offer for its zone, and the region's on-demand offer once.
* ``GpuInfo`` is a Python literal (single quotes; unquoted in GCP accelerator rows); per-GPU
  memory is ``MemoryInfo.SizeInMiB``, except RunPod, where that number is GB. Lambda's
  ``TotalGpuMemoryInMiB`` holds the per-GPU value, so totals are never read.
* GCP prices a GPU VM as a host row (``InstanceType`` set, no accelerator) plus an accelerator
  row (no ``InstanceType``) in the same zone with the same GPU count; the fixed-GPU machine
  families are paired exactly as SkyPilot pairs them. Accelerator rows without a host row
  (attachable T4/L4/V100 whose n1/g2 hosts are absent) are rejected: a GPU-only price would
  understate the cost.
* CPU-only and TPU rows are not GPU training offers; they are skipped and not counted.
"""

from __future__ import annotations

import ast
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from operator import itemgetter
from typing import Any

from recommender.errors import CatalogError
from recommender.feeds._rows import (
    RowError,
    RowLog,
    check_price,
    decode,
    optional_float,
    price_cell,
    read_csv_cells,
    resolve_gpu,
    whole_count,
)
from recommender.feeds.base import MAX_REPORTED_ERRORS, ParsedFeed
from recommender.feeds.native import MAX_USD_PER_GPU_HOUR, MIN_USD_PER_GPU_HOUR
from recommender.offers import MAX_OFFER_USD_PER_HOUR, Fabric, Offer

__all__ = [
    "CLOUDS",
    "FABRICS",
    "GCP_HOST_FAMILIES",
    "fabric_for",
    "looks_like_skypilot",
    "parse_skypilot",
]

#: Clouds whose ``vms.csv`` this adapter knows (the provider ids it sets).
CLOUDS = ("aws", "gcp", "lambda", "nebius", "runpod")

_REQUIRED = ("InstanceType", "AcceleratorName", "AcceleratorCount", "Price", "Region")

#: GCP fixed-GPU machine families → the SkyPilot accelerator they carry; why: SkyPilot 0.14.1
#: ``sky/catalog/gcp_catalog.py`` ``_ACC_INSTANCE_TYPE_DICTS`` pairs exactly these (the
#: ``a3-edgegpu`` and ``-nolssd`` variants are not in it).
GCP_HOST_FAMILIES: Mapping[str, str] = {
    "a2-highgpu": "A100",
    "a2-megagpu": "A100",
    "a2-ultragpu": "A100-80GB",
    "a3-highgpu": "H100",
    "a3-megagpu": "H100-MEGA",
    "a3-ultragpu": "H200",
    "a4-highgpu": "B200",
}
_GCP_HOST = re.compile(r"^(a\d-[a-z]+gpu)-(\d+)g$")

#: Inter-node fabric per instance type (total Gbit/s per instance).
FABRICS: Mapping[tuple[str, str], tuple[Fabric, float | None]] = {
    # AWS: EFA bandwidth per instance; source: aws.amazon.com/ec2/instance-types/p3, /p4, /p5,
    # /p6 ("Network bandwidth", "EFA"): p3dn 100, p4d/p4de 400 (4x100), p5/p5e/p5en 3200,
    # p6-b200 3200 (EFAv4), p6-b300 6400 Gbit/s.
    ("aws", "p3dn.24xlarge"): (Fabric.EFA, 100.0),
    ("aws", "p4d.24xlarge"): (Fabric.EFA, 400.0),
    ("aws", "p4de.24xlarge"): (Fabric.EFA, 400.0),
    ("aws", "p5.48xlarge"): (Fabric.EFA, 3200.0),
    ("aws", "p5e.48xlarge"): (Fabric.EFA, 3200.0),
    ("aws", "p5en.48xlarge"): (Fabric.EFA, 3200.0),
    ("aws", "p6-b200.48xlarge"): (Fabric.EFA, 3200.0),
    ("aws", "p6-b300.48xlarge"): (Fabric.EFA, 6400.0),
    # AWS p3.16xlarge: 25 Gbit/s ENA, no EFA; source: aws.amazon.com/ec2/instance-types/p3.
    ("aws", "p3.16xlarge"): (Fabric.ETHERNET, 25.0),
    # GCP: GPUDirect-TCPX (a3-high, 4x200), -TCPXO (a3-mega, 8x200), RDMA over RoCE (a3-ultra,
    # a4: 8x400); source: cloud.google.com/compute/docs/gpus#a3-series and #a4-series.
    ("gcp", "a3-highgpu-8g"): (Fabric.ROCE, 800.0),
    ("gcp", "a3-megagpu-8g"): (Fabric.ROCE, 1600.0),
    ("gcp", "a3-ultragpu-8g"): (Fabric.ROCE, 3200.0),
    ("gcp", "a4-highgpu-8g"): (Fabric.ROCE, 3200.0),
    # GCP a2 8/16-GPU: plain VPC networking, 100 Gbit/s; source: cloud.google.com/compute/docs/
    # gpus#a2-vms ("maximum network bandwidth").
    ("gcp", "a2-highgpu-8g"): (Fabric.ETHERNET, 100.0),
    ("gcp", "a2-megagpu-16g"): (Fabric.ETHERNET, 100.0),
    ("gcp", "a2-ultragpu-8g"): (Fabric.ETHERNET, 100.0),
}

#: Nebius 8-GPU H100/H200/B200 VMs join InfiniBand GPU clusters at 8x400 Gbit/s; source:
#: docs.nebius.com/compute/clusters/gpu ("InfiniBand ... 3.2 Tbit/s per VM").
_NEBIUS_IB = re.compile(r"^gpu-(h100|h200|b200)-sxm_8gpu-")
_NEBIUS_IB_GBPS = 3200.0

#: Lambda on-demand instances network over Ethernet; its InfiniBand is sold only as
#: "1-Click Clusters", not these instance types; source: docs.lambda.ai/public-cloud/on-demand.
_LAMBDA_MULTI_GPU = re.compile(r"^gpu_8x_")

#: Longest ``GpuInfo`` cell parsed; why: the largest real cell is ~300 characters, and
#: ``ast.literal_eval`` on attacker-sized input is needlessly slow.
_MAX_GPU_INFO_CHARS = 4096

_HINT = (
    "A SkyPilot catalog is a vms.csv with a header such as "
    "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,Region,GpuInfo,SpotPrice."
)


def looks_like_skypilot(head: str) -> bool:
    """Whether a document's first line is a SkyPilot ``vms.csv`` header."""
    first = head.lstrip("\ufeff \t\r\n").split("\n", 1)[0]
    columns = {c.strip().strip('"') for c in first.split(",")}
    return all(name in columns for name in _REQUIRED)


@dataclass(frozen=True, slots=True)
class _GcpAccel:
    row: str
    gpu_id: str
    count: int
    memory_gib: float | None
    price: float | None
    spot: float | None


def parse_skypilot(
    text: str | bytes | Sequence[str | bytes],
    *,
    source: str,
    as_of: datetime | None = None,
    provider: str | None = None,
) -> ParsedFeed:
    """Parse one or more SkyPilot ``vms.csv`` documents of one cloud into offers.

    Args:
        text: a document, or several (GCP host rows and accelerator rows may come as two files).
        source: the source name for errors and ``Offer.source``.
        as_of: when the catalog was collected (the files do not say; pass e.g. the HTTP
            ``Last-Modified`` time).
        provider: the cloud id when it cannot be inferred (``aws``, ``gcp``, ``lambda``, ...).

    Raises:
        CatalogError: not a SkyPilot catalog, the cloud cannot be told, or no row could be read.
    """
    texts = [text] if isinstance(text, str | bytes) else list(text)
    if not texts:
        raise CatalogError(f"{source}: no SkyPilot catalog given.", source=source, hint=_HINT)
    # Rows are read as the builder consumes them; CSV-level rejections are logged apart and
    # reported first (as when every document was read before any row was built).
    read_log = RowLog()
    tables: list[tuple[str, list[str], Iterator[tuple[int, list[str]]]]] = []
    cloud = provider.lower() if provider else None
    for index, part in enumerate(texts):
        header, rows = read_csv_cells(decode(part, source), read_log)
        missing = [name for name in _REQUIRED if name not in header]
        if missing:
            raise CatalogError(
                f"{source}: not a SkyPilot catalog: the header lacks {', '.join(missing)}.",
                source=source,
                hint=_HINT,
            )
        where = f"file {index + 1} row" if len(texts) > 1 else "row"
        if cloud is None:
            cloud = _cloud_from_header(header)
        if cloud is None:
            table = list(rows)
            cloud = _cloud_from_rows(header, table)
            rows = iter(table)
        tables.append((where, header, rows))
    if cloud is None:
        raise CatalogError(
            f"{source}: cannot tell which cloud this SkyPilot catalog is for.",
            source=source,
            hint=f"Name the provider ({', '.join(CLOUDS)}) with the source.",
        )

    build_log = RowLog()
    builder = _Builder(cloud, source, build_log)
    if cloud == "gcp":
        builder.add_gcp(tables)
    else:
        for where, header, table_rows in tables:
            builder.add_table(where, header, table_rows)
    log = RowLog(
        rows=read_log.rows + build_log.rows,
        rejected=read_log.rejected + build_log.rejected,
        errors=(read_log.errors + build_log.errors)[:MAX_REPORTED_ERRORS],
    )
    offers = builder.offers()
    if not offers:
        shown = "; ".join(log.errors[:3]) or "no GPU rows"
        raise CatalogError(
            f"{source}: none of the {log.rows} SkyPilot catalog rows could be read ({shown}).",
            source=source,
            hint="For GCP, give the host VM rows and the accelerator rows together.",
        )
    return ParsedFeed(
        offers=tuple(offers),
        as_of=as_of,
        rows=log.rows,
        rejected=log.rejected,
        errors=tuple(log.errors),
    )


def _cloud_from_header(header: list[str]) -> str | None:
    if "Arch" in header:
        return "aws"
    if header[:2] == ["InstanceType", "vCPUs"]:
        return "gcp"
    if "AvailabilityZone" in header and header.index("SpotPrice") < header.index("Price"):
        return "runpod"
    return None


def _cloud_from_rows(header: list[str], table: list[tuple[int, list[str]]]) -> str | None:
    column = _column_index(header)["InstanceType"]
    for _, cells in table:
        name = cells[column]
        if re.match(r"^(gpu|cpu)_\d+x_", name):
            return "lambda"
        if re.match(r"^(gpu|cpu)-[a-z0-9-]+_\d+(gpu|vcpu)-", name):
            return "nebius"
    return None


def _column_index(header: list[str]) -> dict[str, int]:
    """Column name → index; a repeated name means its last column (as a dict of the row)."""
    return {name: index for index, name in enumerate(header)}


def _gpu_info(cell: str | None) -> dict[str, Any] | None:
    if cell is None or not cell.strip():
        return None
    if len(cell) > _MAX_GPU_INFO_CHARS:
        raise RowError("GpuInfo is implausibly long")
    try:
        value = ast.literal_eval(cell.strip())
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


def fabric_for(cloud: str, instance_type: str, gpu_count: int) -> tuple[Fabric, float | None]:
    """The inter-node fabric (and Gbit/s) of a known instance type; ``NONE`` otherwise."""
    known = FABRICS.get((cloud, instance_type))
    if known is not None:
        return known
    if cloud == "nebius" and _NEBIUS_IB.match(instance_type):
        return Fabric.INFINIBAND, _NEBIUS_IB_GBPS
    if cloud == "lambda" and _LAMBDA_MULTI_GPU.match(instance_type) and gpu_count >= 8:
        return Fabric.ETHERNET, None
    return Fabric.NONE, None


#: Columns an adapter reads per row: the ones that describe the instance shape (repeated on
#: every region/zone row of an instance type) and the ones that price it.
_SHAPE_COLUMNS: tuple[str, ...] = ("AcceleratorName", "GpuInfo", "AcceleratorCount")
_SHAPE_COLUMNS += ("InstanceType", "vCPUs", "MemoryGiB")
_PRICE_COLUMNS = ("Price", "SpotPrice", "Region", "AvailabilityZone")

#: A row's shape cells: accelerator, GpuInfo, count, instance type, vCPUs, RAM.
_ShapeKey = tuple[str, str | None, str, str, str | None, str | None]
#: A row's price cells: Price, SpotPrice, Region, AvailabilityZone.
_PriceCells = tuple[str, str, str, str]


def _getters(
    header: list[str],
) -> tuple[Callable[[list[str]], _ShapeKey], Callable[[list[str]], _PriceCells], bool]:
    """A document's shape-cell and price-cell getters, and whether rows need padding.

    A missing optional column reads as an empty cell appended to the row (``padded``).
    """
    column = _column_index(header)
    pad = len(header)
    padded = any(name not in column for name in _SHAPE_COLUMNS + _PRICE_COLUMNS)
    shape_of = itemgetter(*(column.get(name, pad) for name in _SHAPE_COLUMNS))
    prices_of = itemgetter(*(column.get(name, pad) for name in _PRICE_COLUMNS))
    return shape_of, prices_of, padded


@dataclass(slots=True, eq=False)
class _Shape:
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


#: Marks a CPU-only or TPU row (not a GPU offer, not counted).
_SKIP = "skip"

#: One price of a shape: (shape, region, zone, USD/h), before it becomes an :class:`Offer`.
_Priced = tuple[_Shape, str, str, float]

#: A price cell ``float()`` could not read; why: NaN fails every range check, so such a cell
#: takes the slow path that tells blank from zero from garbage.
_NAN = math.nan
#: Local name for ``math.inf``; why: read once per price cell, a module global is cheaper.
_INF = math.inf


class _Builder:
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
        self._on_demand: dict[tuple[str, str], list[_Priced]] = {}
        self._spot: dict[str, Offer] = {}
        self._shapes: dict[_ShapeKey, _Shape | str] = {}
        self._gpus: dict[str | None, tuple[str, float | None] | str] = {}
        self._accels: dict[tuple[str, str, str | None], tuple[str, int, float | None] | str] = {}
        self._host_shapes: dict[tuple[Any, ...], _Shape] = {}

    def add_table(
        self, where: str, header: list[str], rows: Iterable[tuple[int, list[str]]]
    ) -> None:
        """Add the rows of one document (cells in ``header`` order), labelled ``where N``."""
        shape_of, prices_of, padded = _getters(header)
        shapes = self._shapes
        add = self._add_cells
        log = self.log
        for number, cells in rows:
            if padded:
                cells.append("")
            key: _ShapeKey = shape_of(cells)
            shape = shapes.get(key)
            if shape is None:
                shape = shapes[key] = self._read_shape(key)
            if shape is _SKIP:
                continue
            log.rows += 1
            try:
                if isinstance(shape, str):
                    raise RowError(shape)
                add(shape, *prices_of(cells))
            except RowError as exc:
                log.reject(f"{where} {number}", str(exc))

    def _add_row(self, where: str, key: _ShapeKey, prices: _PriceCells) -> None:
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

    def _read_shape(self, key: _ShapeKey) -> _Shape | str:
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
        return _Shape(
            instance_type,
            gpu_id,
            count,
            memory_gib,
            fabric,
            gbps,
            vcpus if vcpus and vcpus > 0 else None,
            ram_gib if ram_gib and ram_gib > 0 else None,
            late_error,
        )

    def _add_cells(
        self,
        shape: _Shape,
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

    def add_gcp(
        self, tables: Iterable[tuple[str, list[str], Iterable[tuple[int, list[str]]]]]
    ) -> None:
        """Add GCP's documents (``(where, header, rows)`` each): self-contained GPU VM rows
        now, host rows once every accelerator row is known."""
        hosts: list[tuple[str, _ShapeKey, _PriceCells]] = []
        accels: dict[tuple[str, int, str], _GcpAccel] = {}
        used: set[str] = set()
        log = self.log
        for where, header, rows in tables:
            shape_of, prices_of, padded = _getters(header)
            for number, cells in rows:
                if padded:
                    cells.append("")
                key: _ShapeKey = shape_of(cells)
                prices: _PriceCells = prices_of(cells)
                accelerator = key[0].strip()
                instance_type = key[3].strip()
                if accelerator.lower().startswith("tpu") or instance_type.lower().startswith("tpu"):
                    continue
                if instance_type and accelerator:
                    self._add_row(f"{where} {number}", key, prices)  # a self-contained GPU VM
                elif instance_type:
                    if _GCP_HOST.match(instance_type) or "gpu" in instance_type:
                        log.rows += 1
                        hosts.append((f"{where} {number}", key, prices))
                elif accelerator:
                    log.rows += 1
                    label = f"{where} {number}"
                    try:
                        accel = self._gcp_accel(label, key, prices)
                    except RowError as exc:
                        log.reject(label, str(exc))
                        continue
                    zone = prices[3].strip()
                    accels.setdefault((accelerator, accel.count, zone), accel)
        for where, key, prices in hosts:
            try:
                self._gcp_host(key, prices, accels, used)
            except RowError as exc:
                log.reject(where, str(exc))
        for (accelerator, count, zone), accel in accels.items():
            if accel.row not in used:
                log.reject(
                    accel.row,
                    f"{accelerator}x{count} in {zone} has no host VM row to price it with "
                    "(an attachable GPU's price alone would understate the cost)",
                )

    def _gcp_accel(self, where: str, key: _ShapeKey, prices: _PriceCells) -> _GcpAccel:
        accelerator_cell, gpu_info, count_cell = key[:3]
        cached = (accelerator_cell, count_cell, gpu_info)
        known = self._accels.get(cached)
        if known is None:
            try:
                count = whole_count(count_cell, "AcceleratorCount")
                _, memory = self._gpu(gpu_info)
                known = (resolve_gpu(accelerator_cell.strip(), memory_gib=memory), count, memory)
            except RowError as exc:
                known = str(exc)
            self._accels[cached] = known
        if isinstance(known, str):
            raise RowError(known)
        gpu_id, count, memory = known
        price = price_cell(prices[0], "Price")
        spot = price_cell(prices[1], "SpotPrice")
        if price is None and spot is None:
            raise RowError("no price (Price and SpotPrice empty or zero)")
        return _GcpAccel(where, gpu_id, count, memory, price, spot)

    def _gcp_host(
        self,
        key: _ShapeKey,
        prices: _PriceCells,
        accels: Mapping[tuple[str, int, str], _GcpAccel],
        used: set[str],
    ) -> None:
        instance_type = key[3].strip()
        match = _GCP_HOST.match(instance_type)
        family = GCP_HOST_FAMILIES.get(match.group(1)) if match else None
        if match is None or family is None:
            raise RowError(f"host {instance_type} is not in SkyPilot's GPU machine-family map")
        count = int(match.group(2))
        price_cell_, spot_cell, region_cell, zone_cell = prices
        zone = zone_cell.strip()
        accel = accels.get((family, count, zone))
        if accel is None:
            raise RowError(f"no {family}x{count} accelerator row in {zone} for {instance_type}")
        used.add(accel.row)
        host_price = optional_float(price_cell_, "Price")
        host_spot = optional_float(spot_cell, "SpotPrice")
        # A host price of 0.0 is real: a4-highgpu-8g carries its whole price in the GPU row.
        price = _sum(host_price, accel.price)
        spot = _sum(host_spot, accel.spot)
        vcpus = optional_float(key[4], "vCPUs")
        ram_gib = optional_float(key[5], "MemoryGiB")
        region = _region(region_cell)
        # One shape (and template offer) per host type and GPU across its regions and zones.
        shape_key = (instance_type, accel.gpu_id, count, accel.memory_gib, vcpus, ram_gib)
        shape = self._host_shapes.get(shape_key)
        if shape is None:
            fabric, gbps = fabric_for(self.cloud, instance_type, count)
            shape = self._host_shapes[shape_key] = _Shape(
                instance_type,
                accel.gpu_id,
                count,
                accel.memory_gib,
                fabric,
                gbps,
                vcpus if vcpus and vcpus > 0 else None,
                ram_gib if ram_gib and ram_gib > 0 else None,
            )
        self._add_prices(shape, region, zone, price, spot)

    def _add_prices(
        self, shape: _Shape, region: str, zone: str | None, price: float | None, spot: float | None
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
                self._on_demand[key] = [(shape, region, zone, price)]
            else:
                zoned.append((shape, region, zone, price))
        # A spot price at or above on-demand buys only preemption risk (RunPod's catalog copies
        # Price into SpotPrice; AWS has such rows too): no spot offer then.
        if spot is not None and (price is None or spot < price):
            # The spot offer's key (Offer.key) without its constant provider and kind parts.
            spot_key = f"{shape.instance_type}/{region}/{zone}"
            if not 0 < spot < MAX_OFFER_USD_PER_HOUR:
                _check_offer_price(spot)  # raises, with the message
            if spot_key not in self._spot:
                self._spot[spot_key] = self._offer(shape, spot, True, region, zone)

    def _offer(self, shape: _Shape, price: float, spot: bool, region: str, zone: str) -> Offer:
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
        for zoned in self._on_demand.values():
            first = zoned[0]
            price = first[3]
            # Equal floats round equal: the rounding is only needed when the prices differ.
            if len({p[3] for p in zoned}) == 1 or len({round(p[3], 6) for p in zoned}) == 1:
                # One regional price repeated per zone (AWS): one offer for the region.
                result.append(self._offer(first[0], price, False, first[1], ""))
            else:
                # One offer per zone (the last row of a repeated zone wins, in first-seen order).
                by_zone = {p[2]: p for p in zoned}
                result.extend(self._offer(s, p, False, r, z) for s, r, z, p in by_zone.values())
        result.extend(self._spot.values())
        return result


def _region(cell: str) -> str:
    region = cell.strip()
    if not region:
        raise RowError("Region is empty")
    return region


def _check_offer_price(price: float) -> None:
    # Offer's own bound, checked when a price is read so that an implausible one fails where it
    # did when offers were built per row.
    if not 0 < price < MAX_OFFER_USD_PER_HOUR:
        raise RowError(f"price {price:g} USD/h for the instance is implausible")


def _sum(host: float | None, accelerator: float | None) -> float | None:
    if host is None or accelerator is None or host < 0:
        return None
    return host + accelerator
