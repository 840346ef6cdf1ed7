"""SkyPilot catalog rows → offers, for every cloud: the row parser and the offer collector.

:func:`read_gpu_row` reads one self-contained GPU VM row (any cloud) into a :class:`GpuRow`;
:class:`Builder` collects rows' prices and merges each region's repeated on-demand rows into
one offer. :mod:`recommender.feeds.skypilot` drives it; :mod:`recommender.feeds.skypilot_gcp`
adds GCP's host + accelerator pricing.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from recommender import providers
from recommender.feeds._rows import RowLog, check_price, optional_float, price_cell, whole_count
from recommender.feeds.base import RowError, resolve_gpu
from recommender.pricing.offers import MAX_OFFER_USD_PER_HOUR, Offer
from recommender.providers import fabric_for
from recommender.providers.base import SkyPilotMemory

__all__ = [
    "Builder",
    "GpuRow",
    "Row",
    "cell",
    "gpu_card",
    "is_skipped",
    "read_gpu_row",
]

#: One CSV row, column name → cell.
Row = Mapping[str, str]

#: Longest ``GpuInfo`` cell parsed; why: the largest real cell is ~300 characters, and
#: ``ast.literal_eval`` on attacker-sized input is needlessly slow.
_MAX_GPU_INFO_CHARS = 4096

#: Distinct ``GpuInfo`` cells remembered; why: a catalog repeats an instance type's cell on
#: every region and zone row (a few hundred distinct cells in 20k rows), and reading one with
#: ``ast.literal_eval`` is most of a row's cost.
_GPU_INFO_CACHE_SIZE = 4096


def cell(row: Row, column: str) -> str:
    """A row's cell; a column the document lacks reads as empty."""
    return row.get(column, "")


#: A JSON ``null`` where a value stands (after ``:``, ``[`` or ``,``): Hyperstack's cells mix
#: Python quotes with it; source: SkyPilot catalog v8 ``hyperstack/vms.csv``
#: (``'Manufacturer': null``). Read as ``None``.
_JSON_NULL = re.compile(r"(?<=[:\[,] )null(?=[,}\]])")


@lru_cache(maxsize=_GPU_INFO_CACHE_SIZE)
def gpu_card(cloud: str, gpu_info: str, count: int = 1) -> tuple[str, float | None]:
    """The card name and per-GPU memory (GiB) of a ``GpuInfo`` cell (a Python literal).

    ``count`` (the row's GPUs) divides the memory of clouds that list a machine total."""
    if not gpu_info.strip():
        return "", None
    if not gpu_info.lstrip().startswith("{"):
        # Azure's catalogs write the card's name alone (``V100``, ``A100-80GB``), with no
        # memory; source: SkyPilot catalog v6 and v8 ``azure/vms.csv``.
        return gpu_info.strip(), None
    if len(gpu_info) > _MAX_GPU_INFO_CHARS:
        raise RowError("GpuInfo is implausibly long")
    try:
        info = ast.literal_eval(_JSON_NULL.sub("None", gpu_info.strip()))
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        raise RowError(f"GpuInfo {gpu_info[:60]!r} is not a Python literal") from None
    if not isinstance(info, dict):
        raise RowError("GpuInfo is not a dict")
    gpus = info.get("Gpus")
    gpu: dict[str, Any] = {}
    if isinstance(gpus, list) and gpus and isinstance(gpus[0], dict):
        gpu = gpus[0]
    memory = gpu.get("MemoryInfo")
    size = memory.get("SizeInMiB") if isinstance(memory, dict) else None
    card = str(gpu.get("Name", ""))
    if isinstance(size, bool) or not isinstance(size, int | float) or size <= 0:
        return card, None
    # What the column holds differs by cloud (each cloud's ``skypilot_memory``).
    unit = providers.get(cloud).skypilot_memory
    if unit is SkyPilotMemory.GB_PER_GPU:
        return card, float(size) * 1e9 / 2**30
    if unit is SkyPilotMemory.MIB_ALL_GPUS:
        return card, float(size) / 1024 / count
    return card, float(size) / 1024


@dataclass(frozen=True, slots=True)
class GpuRow:
    """A GPU VM row, read: the instance shape and its prices (USD/h for the whole VM)."""

    instance_type: str
    gpu_id: str
    count: int
    memory_gib: float | None
    vcpus: float | None
    ram_gib: float | None
    region: str
    zone: str
    price: float | None
    spot: float | None


#: Spheron's accelerator names carry the form factor and a bare-metal flag in underscores
#: (``H100_SXM5``, ``A100_80G_SXM4``, ``L40S_PCIE_BAREMETAL``); source: SkyPilot catalog v8
#: ``spheron/vms.csv``. The flags are dropped (the PCIe form factor is still read from the
#: card's name) and ``80G`` read as ``80GB``.
_SPHERON_BAREMETAL = re.compile(r"(_PCIE)?(_BAREMETAL)?$", re.IGNORECASE)
_SPHERON_GIGABYTES = re.compile(r"(\d+)G(?=_|$)")


def _accelerator_name(cloud: str, name: str) -> str:
    """A row's accelerator name in words :func:`resolve_gpu` knows."""
    if cloud != "spheron":
        return name
    name = _SPHERON_GIGABYTES.sub(r"\1GB", _SPHERON_BAREMETAL.sub("", name, count=1))
    return name.replace("_", " ")


#: Azure families whose catalog name omits what the card is; source: MicrosoftDocs/azure-docs
#: sizes/gpu-accelerated/includes nca100v4-series-summary.md ("NVIDIA A100 PCIe GPUs with 80
#: GB memory") and ncadsh100v5-series-summary.md ("H100 NVL GPUs with 94GB memory"), against
#: SkyPilot catalog v6 and v8 ``azure/vms.csv`` (``A100-80GB`` and ``H100`` with no form factor).
_AZURE_CARDS = (
    (re.compile(r"^Standard_NC\d+ads_A100_v4$"), "A100 PCIe 80GB"),
    (re.compile(r"^Standard_NC\d+adi?s_H100_v5$"), "H100 NVL"),
)

#: GPUs per Azure instance where the catalog's count is wrong; source: MicrosoftDocs/azure-docs
#: ndh100v5-series-summary.md ("a single VM and eight NVIDIA H100"), while SkyPilot catalog v6
#: and v8 ``azure/vms.csv`` list 12. Such rows are rejected rather than priced per a wrong count.
_AZURE_GPU_COUNTS = {"Standard_ND96isr_H100_v5": 8}


def _azure_card(instance_type: str, accelerator: str, count: int) -> str:
    """The accelerator name of an Azure row, corrected where the catalog's is vague.

    Raises:
        RowError: the catalog's GPU count contradicts Azure's for the instance.
    """
    known = _AZURE_GPU_COUNTS.get(instance_type)
    if known is not None and known != count:
        raise RowError(
            f"AcceleratorCount {count} contradicts Azure's {known} GPUs for {instance_type}"
        )
    for family, card in _AZURE_CARDS:
        if family.match(instance_type):
            return card
    return accelerator


def read_gpu_row(cloud: str, row: Row) -> GpuRow:
    """A self-contained GPU VM row (``InstanceType`` and ``AcceleratorName`` both set).

    Raises:
        RowError: the row cannot be read; the message says why.
    """
    accelerator = _accelerator_name(cloud, cell(row, "AcceleratorName").strip())
    count = whole_count(cell(row, "AcceleratorCount"), "AcceleratorCount")
    card, memory_gib = gpu_card(cloud, cell(row, "GpuInfo"), count)
    instance_type = cell(row, "InstanceType").strip()
    if not instance_type:
        raise RowError("InstanceType is empty")
    if cloud == "azure":
        accelerator = _azure_card(instance_type, accelerator, count)
    gpu_id = resolve_gpu(
        accelerator, memory_gib=memory_gib, pcie="pcie" in f"{instance_type} {card}".lower()
    )
    price = price_cell(cell(row, "Price"), "Price")
    spot = price_cell(cell(row, "SpotPrice"), "SpotPrice")
    vcpus = optional_float(cell(row, "vCPUs"), "vCPUs")
    ram_gib = optional_float(cell(row, "MemoryGiB"), "MemoryGiB")
    return GpuRow(
        instance_type=instance_type,
        gpu_id=gpu_id,
        count=count,
        memory_gib=memory_gib,
        vcpus=vcpus if vcpus and vcpus > 0 else None,
        ram_gib=ram_gib if ram_gib and ram_gib > 0 else None,
        region=_region(row),
        zone=cell(row, "AvailabilityZone").strip(),
        price=price,
        spot=spot,
    )


def _region(row: Row) -> str:
    region = cell(row, "Region").strip()
    if not region:
        raise RowError("Region is empty")
    return region


def is_skipped(row: Row) -> bool:
    """A CPU-only or TPU row: not a GPU training offer, and not counted."""
    accelerator = cell(row, "AcceleratorName").strip().lower()
    return not accelerator or accelerator.startswith("tpu")


def check_instance_price(price: float) -> None:
    """Refuse an instance price no catalog row can mean.

    Raises:
        RowError: the price is zero, negative or implausibly high.
    """
    if not 0 < price < MAX_OFFER_USD_PER_HOUR:
        raise RowError(f"price {price:g} USD/h for the instance is implausible")


class Builder:
    """Collects offers; merges each region's repeated on-demand rows into one offer.

    AWS lists on-demand per region, repeated on every availability-zone row, and spot per
    zone: the region's on-demand rows become one offer (zone ``""``) when their prices agree,
    and one offer per zone otherwise; each zone's first spot row is its spot offer.
    """

    def __init__(self, cloud: str, source: str, log: RowLog) -> None:
        self.cloud = cloud
        self.source = source
        self.log = log
        # Keyed by shape and GPUs too: a GCP N1 host carries T4s, P4s or V100s alike.
        #: On-demand rows by (instance type, GPU, count, region): their offers are built once
        #: every zone of the region is known (one per region when the price is regional).
        self._on_demand: dict[tuple[str, str, int, str], list[tuple[GpuRow, float]]] = {}
        self._spot: dict[tuple[str, str, int, str, str], Offer] = {}

    def add_table(self, where: str, rows: Iterable[tuple[int, Row]]) -> None:
        """Add the GPU VM rows of one document, labelled ``where N`` in rejections."""
        for number, row in rows:
            if is_skipped(row):
                continue
            self.add_row(f"{where} {number}", row)

    def add_row(self, where: str, row: Row) -> None:
        """Add one GPU VM row, or log why it is rejected."""
        self.log.rows += 1
        try:
            self.add(read_gpu_row(self.cloud, row))
        except RowError as exc:
            self.log.reject(where, str(exc))

    def add(self, row: GpuRow) -> None:
        """Add a read row's offers.

        Raises:
            RowError: it has no price, or one that is not believable.
        """
        price, spot = row.price, row.spot
        if price is None and spot is None:
            raise RowError("no price (Price and SpotPrice empty or zero)")
        if price is not None:
            check_price(price, row.count, "Price")
            check_instance_price(price)
        if spot is not None:
            check_price(spot, row.count, "SpotPrice")
        if price is not None:
            key = (row.instance_type, row.gpu_id, row.count, row.region)
            self._on_demand.setdefault(key, []).append((row, price))
        # A spot price at or above on-demand buys only preemption risk (RunPod's catalog copies
        # Price into SpotPrice; AWS has such rows too): no spot offer then.
        if spot is not None and (price is None or spot < price):
            check_instance_price(spot)
            offer = self._offer(row, spot, spot=True)
            spot_key = (row.instance_type, row.gpu_id, row.count, row.region, row.zone)
            self._spot.setdefault(spot_key, offer)

    def _offer(self, row: GpuRow, price: float, *, spot: bool, zone: str | None = None) -> Offer:
        """The offer of a row at a price ``add`` has checked."""
        fabric, fabric_gbps = fabric_for(self.cloud, row.instance_type, row.count)
        return Offer(
            provider=self.cloud,
            instance_type=row.instance_type,
            gpu_id=row.gpu_id,
            gpu_count=row.count,
            price_usd_per_hour=price,
            spot=spot,
            region=row.region,
            zone=row.zone if zone is None else zone,
            gpu_memory_gib=row.memory_gib,
            vcpus=row.vcpus,
            ram_gib=row.ram_gib,
            fabric=fabric,
            fabric_gbps=fabric_gbps,
            source=self.source,
            citation=f"SkyPilot catalog {self.cloud}/vms.csv",
        )

    def offers(self) -> list[Offer]:
        """The on-demand offers (by instance type and region, first seen first), then spot."""
        result: list[Offer] = []
        for zoned in self._on_demand.values():
            if len({round(price, 6) for _, price in zoned}) == 1:
                # One regional price repeated per zone (AWS): one offer for the region.
                row, price = zoned[0]
                result.append(self._offer(row, price, spot=False, zone=""))
            else:
                # One offer per zone; the last row of a repeated zone wins, in first-seen order.
                by_zone = {row.zone: (row, price) for row, price in zoned}
                result.extend(
                    self._offer(row, price, spot=False) for row, price in by_zone.values()
                )
        result.extend(self._spot.values())
        return result
