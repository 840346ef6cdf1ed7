"""GCP's SkyPilot catalog: a GPU VM priced as a host row plus an accelerator row.

GCP lists a GPU VM as a host row (``InstanceType`` set, no accelerator) and an accelerator
row (no ``InstanceType``) in the same zone with the same GPU count. Every GPU is paired with
the host families that carry it, as SkyPilot 0.14 does (``sky/catalog/gcp_catalog.py``):

* fixed-GPU families (:data:`GCP_HOST_FAMILIES`): a2 (A100), a3 (H100, H100-MEGA, H200),
  a4 (B200), including the ``a3-edgegpu`` and ``-nolssd`` variants, which carry the same
  GPUs as their base type (cloud.google.com/compute/docs/accelerator-optimized-machines);
* L4 comes only with ``g2-standard-*`` (:data:`G2_HOSTS`, gpu count per shape);
* T4, V100, P100 and P4 attach to an N1 host (n1-standard/highmem/highcpu): the cheapest one
  in the zone with at least SkyPilot's vCPUs for that GPU count and 4 GiB of RAM per vCPU
  (:data:`N1_MIN_VCPUS`).

An accelerator row whose host rows are absent from the document is rejected: a GPU-only
price would understate the cost. Self-contained GPU VM rows are read as for every other cloud.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from recommender.feeds._rows import optional_float, price_cell, whole_count
from recommender.feeds.base import RowError, resolve_gpu
from recommender.feeds.skypilot_builder import Builder, GpuRow, Row, cell, gpu_card

__all__ = ["G2_HOSTS", "GCP_HOST_FAMILIES", "N1_MIN_VCPUS", "add_gcp"]

#: Fixed-GPU machine families → the SkyPilot accelerator they carry; source: SkyPilot 0.14.1
#: ``sky/catalog/gcp_catalog.py`` ``_ACC_INSTANCE_TYPE_DICTS``, plus the A3 Edge (H100 80GB)
#: and ``-nolssd`` (no local SSD) variants of cloud.google.com/compute/docs/gpus#a3-series.
GCP_HOST_FAMILIES: Mapping[str, str] = {
    "a2-highgpu": "A100",
    "a2-megagpu": "A100",
    "a2-ultragpu": "A100-80GB",
    "a3-highgpu": "H100",
    "a3-edgegpu": "H100",
    "a3-megagpu": "H100-MEGA",
    "a3-ultragpu": "H200",
    "a4-highgpu": "B200",
}
_GCP_HOST = re.compile(r"^(a\d-[a-z]+gpu)-(\d+)g(?:-nolssd)?$")

#: g2-standard shapes → L4 count; source: SkyPilot 0.14.1 ``_ACC_INSTANCE_TYPE_DICTS['L4']``
#: and cloud.google.com/compute/docs/gpus#l4-gpus.
G2_HOSTS: Mapping[str, int] = {
    "g2-standard-4": 1,
    "g2-standard-8": 1,
    "g2-standard-12": 1,
    "g2-standard-16": 1,
    "g2-standard-32": 1,
    "g2-standard-24": 2,
    "g2-standard-48": 4,
    "g2-standard-96": 8,
}

#: Minimum host vCPUs per attachable GPU and count; source: SkyPilot 0.14.1
#: ``_NUM_ACC_TO_NUM_CPU`` (its DEFAULT row for P4). RAM must be at least 4 GiB per vCPU
#: (``_DEFAULT_GPU_MEMORY_CPU_RATIO``).
N1_MIN_VCPUS: Mapping[str, Mapping[int, int]] = {
    "V100": {1: 8, 2: 16, 4: 32, 8: 64},
    "T4": {1: 4, 2: 8, 4: 48},
    "P100": {1: 8, 2: 16, 4: 32, 8: 64},
    "P4": {1: 8, 2: 16, 4: 32, 8: 64},
}
_N1_RAM_PER_VCPU_GIB = 4
_N1 = re.compile(r"^n1-(standard|highmem|highcpu)-\d+$")


@dataclass(frozen=True, slots=True)
class _Accelerator:
    """An accelerator row, read: its GPUs and their price in one zone."""

    where: str
    name: str
    gpu_id: str
    count: int
    memory_gib: float | None
    price: float | None
    spot: float | None


@dataclass(frozen=True, slots=True)
class _Host:
    """A host VM row (N1 or G2) that attachable GPUs can be priced with."""

    row: Row
    instance_type: str
    vcpus: float
    ram_gib: float
    price: float | None


def add_gcp(builder: Builder, tables: Iterable[tuple[str, Iterable[tuple[int, Row]]]]) -> None:
    """Add GCP's documents (``(where, rows)`` each) to ``builder``: self-contained GPU VM rows
    as they come, host + accelerator pairs once every row is known."""
    log = builder.log
    fixed: list[tuple[str, Row]] = []
    attachable: dict[str, list[_Host]] = {}  # zone → N1/G2 hosts
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
                    fixed.append((label, row))
                elif instance_type in G2_HOSTS or _N1.match(instance_type):
                    host = _host(row, instance_type)
                    if host is not None:
                        zone = cell(row, "AvailabilityZone").strip()
                        attachable.setdefault(zone, []).append(host)
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
    for where, row in fixed:
        try:
            builder.add(_read_fixed_host(row, accelerators, used))
        except RowError as exc:
            log.reject(where, str(exc))
    for (name, count, zone), read in accelerators.items():
        if read.where in used:
            continue
        if name in GCP_HOST_FAMILIES.values():
            log.reject(read.where, f"{name}x{count} in {zone} has no host VM row to price it with")
            continue
        try:
            builder.add(_attach(read, zone, attachable.get(zone, [])))
        except RowError as exc:
            log.reject(read.where, str(exc))


def _host(row: Row, instance_type: str) -> _Host | None:
    try:
        vcpus = optional_float(cell(row, "vCPUs"), "vCPUs")
        ram = optional_float(cell(row, "MemoryGiB"), "MemoryGiB")
        price = price_cell(cell(row, "Price"), "Price")
    except RowError:
        return None  # a CPU row gpufit cannot read prices no GPU with
    if vcpus is None or ram is None:
        return None
    return _Host(row, instance_type, vcpus, ram, price)


def _attach(read: _Accelerator, zone: str, hosts: list[_Host]) -> GpuRow:
    """An attachable GPU priced with the cheapest host SkyPilot would pick in its zone."""
    if read.name == "L4":
        fits = [h for h in hosts if G2_HOSTS.get(h.instance_type) == read.count]
        family = "g2-standard"
    else:
        need = N1_MIN_VCPUS.get(read.name, N1_MIN_VCPUS["P4"]).get(read.count)
        if need is None:
            raise RowError(f"GCP attaches no {read.count} {read.name} GPUs to one N1 host")
        fits = [
            h
            for h in hosts
            if h.instance_type.startswith("n1-")
            and h.vcpus >= need
            and h.ram_gib >= need * _N1_RAM_PER_VCPU_GIB
        ]
        family = f"n1 with >= {need} vCPUs"
    priced = [h for h in fits if h.price is not None]
    if not priced:
        raise RowError(
            f"{read.name}x{read.count} in {zone} has no host VM row ({family}) to price it with "
            "(an attachable GPU's price alone would understate the cost)"
        )
    host = min(priced, key=lambda h: (h.price or 0.0, h.instance_type))
    spot = _sum(optional_float(cell(host.row, "SpotPrice"), "SpotPrice"), read.spot)
    return GpuRow(
        instance_type=host.instance_type,
        gpu_id=read.gpu_id,
        count=read.count,
        memory_gib=read.memory_gib,
        vcpus=host.vcpus,
        ram_gib=host.ram_gib,
        region=_region(host.row),
        zone=zone,
        price=_sum(host.price, read.price),
        spot=spot,
    )


def _read_accelerator(where: str, row: Row) -> _Accelerator:
    count = whole_count(cell(row, "AcceleratorCount"), "AcceleratorCount")
    _, memory_gib = gpu_card("gcp", cell(row, "GpuInfo"), count)
    name = cell(row, "AcceleratorName").strip()
    gpu_id = resolve_gpu(name, memory_gib=memory_gib)
    price = price_cell(cell(row, "Price"), "Price")
    spot = price_cell(cell(row, "SpotPrice"), "SpotPrice")
    if price is None and spot is None:
        raise RowError("no price (Price and SpotPrice empty or zero)")
    return _Accelerator(where, name, gpu_id, count, memory_gib, price, spot)


def _read_fixed_host(
    row: Row, accelerators: Mapping[tuple[str, int, str], _Accelerator], used: set[str]
) -> GpuRow:
    """A fixed-GPU host row priced with its accelerator row (marked ``used``)."""
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
    return GpuRow(
        instance_type=instance_type,
        gpu_id=accelerator.gpu_id,
        count=count,
        memory_gib=accelerator.memory_gib,
        vcpus=vcpus if vcpus and vcpus > 0 else None,
        ram_gib=ram_gib if ram_gib and ram_gib > 0 else None,
        region=_region(row),
        zone=zone,
        price=price,
        spot=spot,
    )


def _region(row: Row) -> str:
    region = cell(row, "Region").strip()
    if not region:
        raise RowError("Region is empty")
    return region


def _sum(host: float | None, accelerator: float | None) -> float | None:
    if host is None or accelerator is None or host < 0:
        return None
    return host + accelerator
