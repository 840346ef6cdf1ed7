"""GCP's SkyPilot catalog: a GPU VM priced as a host row plus an accelerator row.

GCP lists a GPU VM as a host row (``InstanceType`` set, no accelerator) and an accelerator
row (no ``InstanceType``) in the same zone with the same GPU count; the fixed-GPU machine
families are paired exactly as SkyPilot pairs them (:data:`GCP_HOST_FAMILIES`). Accelerator
rows without a host row (attachable T4/L4/V100 whose n1/g2 hosts are absent) are rejected:
a GPU-only price would understate the cost. Self-contained GPU VM rows are read as for
every other cloud.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from recommender.feeds._rows import (
    RowError,
    RowLog,
    optional_float,
    price_cell,
    resolve_gpu,
    whole_count,
)
from recommender.feeds.fabrics import fabric_for
from recommender.feeds.skypilot_builder import Builder, PriceCells, Shape, ShapeKey, getters

__all__ = ["GCP_HOST_FAMILIES", "GcpBuilder"]

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


@dataclass(frozen=True, slots=True)
class _GcpAccel:
    row: str
    gpu_id: str
    count: int
    memory_gib: float | None
    price: float | None
    spot: float | None


class GcpBuilder(Builder):
    """A :class:`Builder` for GCP's documents, which pairs host rows with accelerator rows."""

    def __init__(self, cloud: str, source: str, log: RowLog) -> None:
        super().__init__(cloud, source, log)
        self._accels: dict[tuple[str, str, str | None], tuple[str, int, float | None] | str] = {}
        self._host_shapes: dict[tuple[Any, ...], Shape] = {}

    def add_gcp(
        self, tables: Iterable[tuple[str, list[str], Iterable[tuple[int, list[str]]]]]
    ) -> None:
        """Add GCP's documents (``(where, header, rows)`` each): self-contained GPU VM rows
        now, host rows once every accelerator row is known."""
        hosts: list[tuple[str, ShapeKey, PriceCells]] = []
        accels: dict[tuple[str, int, str], _GcpAccel] = {}
        used: set[str] = set()
        log = self.log
        for where, header, rows in tables:
            shape_of, prices_of, padded = getters(header)
            for number, cells in rows:
                if padded:
                    cells.append("")
                key: ShapeKey = shape_of(cells)
                prices: PriceCells = prices_of(cells)
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

    def _gcp_accel(self, where: str, key: ShapeKey, prices: PriceCells) -> _GcpAccel:
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
        key: ShapeKey,
        prices: PriceCells,
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
            shape = self._host_shapes[shape_key] = Shape(
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


def _region(cell: str) -> str:
    region = cell.strip()
    if not region:
        raise RowError("Region is empty")
    return region


def _sum(host: float | None, accelerator: float | None) -> float | None:
    if host is None or accelerator is None or host < 0:
        return None
    return host + accelerator
