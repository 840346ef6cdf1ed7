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

from recommender.feeds._rows import optional_float, price_cell, whole_count
from recommender.feeds.base import RowError, resolve_gpu
from recommender.feeds.skypilot_builder import Builder, GpuRow, Row, cell, gpu_card

__all__ = ["GCP_HOST_FAMILIES", "add_gcp"]

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
class _Accelerator:
    """An accelerator row, read: its GPUs and their price in one zone."""

    where: str
    gpu_id: str
    count: int
    memory_gib: float | None
    price: float | None
    spot: float | None


def add_gcp(builder: Builder, tables: Iterable[tuple[str, Iterable[tuple[int, Row]]]]) -> None:
    """Add GCP's documents (``(where, rows)`` each) to ``builder``: self-contained GPU VM rows
    as they come, host rows once every accelerator row is known."""
    log = builder.log
    hosts: list[tuple[str, Row]] = []
    accelerators: dict[tuple[str, int, str], _Accelerator] = {}
    for where, rows in tables:
        for number, row in rows:
            label = f"{where} {number}"
            accelerator = cell(row, "AcceleratorName").strip()
            instance_type = cell(row, "InstanceType").strip()
            if accelerator.lower().startswith("tpu") or instance_type.lower().startswith("tpu"):
                continue
            if instance_type and accelerator:
                builder.add_row(label, row)  # a self-contained GPU VM
            elif instance_type:
                if _GCP_HOST.match(instance_type) or "gpu" in instance_type:
                    log.rows += 1
                    hosts.append((label, row))
            elif accelerator:
                log.rows += 1
                try:
                    read = _read_accelerator(label, row)
                except RowError as exc:
                    log.reject(label, str(exc))
                    continue
                zone = cell(row, "AvailabilityZone").strip()
                accelerators.setdefault((accelerator, read.count, zone), read)
    used: set[str] = set()
    for where, row in hosts:
        try:
            builder.add(_read_host(row, accelerators, used))
        except RowError as exc:
            log.reject(where, str(exc))
    for (accelerator, count, zone), read in accelerators.items():
        if read.where not in used:
            log.reject(
                read.where,
                f"{accelerator}x{count} in {zone} has no host VM row to price it with "
                "(an attachable GPU's price alone would understate the cost)",
            )


def _read_accelerator(where: str, row: Row) -> _Accelerator:
    count = whole_count(cell(row, "AcceleratorCount"), "AcceleratorCount")
    _, memory_gib = gpu_card("gcp", cell(row, "GpuInfo"))
    gpu_id = resolve_gpu(cell(row, "AcceleratorName").strip(), memory_gib=memory_gib)
    price = price_cell(cell(row, "Price"), "Price")
    spot = price_cell(cell(row, "SpotPrice"), "SpotPrice")
    if price is None and spot is None:
        raise RowError("no price (Price and SpotPrice empty or zero)")
    return _Accelerator(where, gpu_id, count, memory_gib, price, spot)


def _read_host(
    row: Row, accelerators: Mapping[tuple[str, int, str], _Accelerator], used: set[str]
) -> GpuRow:
    """A host row priced with its accelerator row (marked ``used``)."""
    instance_type = cell(row, "InstanceType").strip()
    match = _GCP_HOST.match(instance_type)
    family = GCP_HOST_FAMILIES.get(match.group(1)) if match else None
    if match is None or family is None:
        raise RowError(f"host {instance_type} is not in SkyPilot's GPU machine-family map")
    count = int(match.group(2))
    zone = cell(row, "AvailabilityZone").strip()
    accelerator = accelerators.get((family, count, zone))
    if accelerator is None:
        raise RowError(f"no {family}x{count} accelerator row in {zone} for {instance_type}")
    used.add(accelerator.where)
    # A host price of 0.0 is real: a4-highgpu-8g carries its whole price in the GPU row.
    price = _sum(optional_float(cell(row, "Price"), "Price"), accelerator.price)
    spot = _sum(optional_float(cell(row, "SpotPrice"), "SpotPrice"), accelerator.spot)
    vcpus = optional_float(cell(row, "vCPUs"), "vCPUs")
    ram_gib = optional_float(cell(row, "MemoryGiB"), "MemoryGiB")
    region = cell(row, "Region").strip()
    if not region:
        raise RowError("Region is empty")
    return GpuRow(
        instance_type=instance_type,
        gpu_id=accelerator.gpu_id,
        count=count,
        memory_gib=accelerator.memory_gib,
        vcpus=vcpus if vcpus and vcpus > 0 else None,
        ram_gib=ram_gib if ram_gib and ram_gib > 0 else None,
        region=region,
        zone=zone,
        price=price,
        spot=spot,
    )


def _sum(host: float | None, accelerator: float | None) -> float | None:
    if host is None or accelerator is None or host < 0:
        return None
    return host + accelerator
