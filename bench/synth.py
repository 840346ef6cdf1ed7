"""Synthetic price catalogs in the real SkyPilot ``vms.csv`` formats, for the benchmarks.

Rows are generated per cloud (AWS, Lambda, Nebius, RunPod) from a few instance templates
written here in each cloud's header order, varying region, zone and price with a fixed seed;
they are parsed with gpufit's own SkyPilot adapter, so the offers are exactly what a real feed
of that size would produce.
"""

from __future__ import annotations

import csv
import io
import random
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime

from recommender import Catalog, Offer, SourceInfo
from recommender.feeds import owned_by
from recommender.feeds.skypilot import parse_skypilot

__all__ = ["AS_OF", "NOW", "synthetic_catalog", "synthetic_documents"]

AS_OF = datetime(2026, 11, 20, tzinfo=UTC)
NOW = datetime(2026, 11, 21, 12, tzinfo=UTC)

_HEADERS: Mapping[str, tuple[str, ...]] = {
    "aws": (
        "InstanceType", "AcceleratorName", "AcceleratorCount", "vCPUs", "MemoryGiB", "GpuInfo",
        "Price", "SpotPrice", "Region", "AvailabilityZone", "Arch",
    ),
    "lambda": (
        "InstanceType", "AcceleratorName", "AcceleratorCount", "vCPUs", "MemoryGiB", "Price",
        "Region", "GpuInfo", "SpotPrice",
    ),
    "nebius": (
        "InstanceType", "AcceleratorName", "AcceleratorCount", "vCPUs", "MemoryGiB", "Price",
        "Region", "GpuInfo", "SpotPrice",
    ),
    "runpod": (
        "InstanceType", "AcceleratorName", "AcceleratorCount", "vCPUs", "MemoryGiB", "Region",
        "SpotPrice", "Price", "AvailabilityZone", "GpuInfo",
    ),
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class _Shape:
    instance_type: str
    accelerator: str
    count: int
    vcpus: int
    ram_gib: int
    card: str
    #: ``SizeInMiB`` as the cloud writes it (RunPod writes GB there).
    size: int
    usd_per_hour: float


_SHAPES: Mapping[str, tuple[_Shape, ...]] = {
    "aws": (
        _Shape("g4dn.xlarge", "T4", 1, 4, 16, "T4", 16384, 0.526),
        _Shape("g5.xlarge", "A10G", 1, 4, 16, "A10G", 24576, 1.006),
        _Shape("g5.12xlarge", "A10G", 4, 48, 192, "A10G", 24576, 5.672),
        _Shape("g6.xlarge", "L4", 1, 4, 16, "L4", 24576, 0.805),
        _Shape("g6e.12xlarge", "L40S", 4, 48, 384, "L40S", 49152, 10.49),
        _Shape("p3.2xlarge", "V100", 1, 8, 61, "V100", 16384, 3.06),
        _Shape("p3.8xlarge", "V100", 4, 32, 244, "V100", 16384, 12.24),
        _Shape("p4d.24xlarge", "A100", 8, 96, 1152, "A100", 40960, 32.77),
        _Shape("p4de.24xlarge", "A100-80GB", 8, 96, 1152, "A100", 81920, 40.96),
        _Shape("p5.4xlarge", "H100", 1, 16, 256, "H100", 81920, 6.88),
        _Shape("p5.48xlarge", "H100", 8, 192, 2048, "H100", 81920, 55.04),
    ),
    "lambda": (
        _Shape("gpu_1x_a10", "A10", 1, 30, 200, "A10", 24576, 0.75),
        _Shape("gpu_1x_a100_sxm4", "A100", 1, 30, 200, "A100", 40960, 1.29),
        _Shape("gpu_8x_a100_80gb_sxm4", "A100-80GB", 8, 240, 1800, "A100", 81920, 14.32),
        _Shape("gpu_1x_h100_pcie", "H100", 1, 26, 200, "H100", 81920, 2.49),
        _Shape("gpu_8x_h100_sxm5", "H100", 8, 208, 1800, "H100", 81920, 23.92),
    ),
    "nebius": (
        _Shape("gpu-h100-sxm_1gpu-16vcpu-200gb", "H100", 1, 16, 200, "H100", 81920, 2.95),
        _Shape("gpu-h100-sxm_8gpu-128vcpu-1600gb", "H100", 8, 128, 1600, "H100", 81920, 23.6),
        _Shape("gpu-h200-sxm_8gpu-128vcpu-1600gb", "H200", 8, 128, 1600, "H200", 144384, 28.8),
        _Shape("gpu-l40s-a_1gpu-8vcpu-32gb", "L40S", 1, 8, 32, "L40S", 49152, 1.55),
    ),
    "runpod": (
        _Shape("1x_A100-80GB_SECURE", "A100-80GB", 1, 8, 117, "A100 PCIe", 80, 1.39),
        _Shape("2x_A100-80GB_SECURE", "A100-80GB", 2, 16, 234, "A100 PCIe", 80, 2.78),
        _Shape("1x_H100_SECURE", "H100", 1, 16, 125, "H100 SXM", 80, 2.69),
        _Shape("8x_H100_SECURE", "H100", 8, 128, 1000, "H100 SXM", 80, 21.52),
        _Shape("1x_L40S_SECURE", "L40S", 1, 12, 62, "L40S", 48, 0.86),
    ),
}

_GEOS = ("us", "eu", "ap", "ca", "sa", "me", "af")
_DIRECTIONS = ("east", "west", "central", "north", "south", "northeast", "southeast")
#: Share of rows per cloud (AWS lists most rows: spot per zone).
_MIX = (("aws", 0.45), ("runpod", 0.25), ("lambda", 0.2), ("nebius", 0.1))


def _gpu_info(cloud: str, shape: _Shape) -> str:
    count: float = float(shape.count) if cloud == "lambda" else shape.count
    total = shape.size if cloud == "lambda" else shape.size * shape.count
    gpu = {
        "Name": shape.card,
        "Manufacturer": "NVIDIA",
        "Count": count,
        "MemoryInfo": {"SizeInMiB": shape.size},
    }
    return repr({"Gpus": [gpu], "TotalGpuMemoryInMiB": total})


def _region(index: int) -> str:
    geo = _GEOS[index % len(_GEOS)]
    direction = _DIRECTIONS[(index // len(_GEOS)) % len(_DIRECTIONS)]
    return f"{geo}-{direction}-{index // (len(_GEOS) * len(_DIRECTIONS)) + 1}"


def _rows(cloud: str, n: int, rng: random.Random) -> list[dict[str, str]]:
    shapes = _SHAPES[cloud]
    rows: list[dict[str, str]] = []
    i = 0
    while len(rows) < n:
        shape = shapes[i % len(shapes)]
        region_index = i // len(shapes)
        region = _region(region_index)
        # One regional on-demand price per (shape, region), as the clouds list it.
        price = round(shape.usd_per_hour * rng.uniform(0.8, 1.6), 4)
        zones = 4 if cloud in ("aws", "runpod") else 1
        for z in range(zones):
            spot = round(price * rng.uniform(0.25, 0.7), 6)
            row = {
                "InstanceType": shape.instance_type,
                "AcceleratorName": shape.accelerator,
                "AcceleratorCount": f"{shape.count}.0" if cloud != "nebius" else str(shape.count),
                "vCPUs": str(shape.vcpus),
                "MemoryGiB": str(shape.ram_gib),
                "GpuInfo": _gpu_info(cloud, shape),
                "Price": f"{price}",
                "SpotPrice": "" if cloud == "lambda" else f"{spot}",
                "Region": region.upper()[:2] if cloud == "runpod" else region,
                "AvailabilityZone": f"{region}-az{z + 1}" if zones > 1 else "",
                "Arch": "x86_64",
            }
            rows.append(row)
        i += 1
    return rows[:n]


def synthetic_documents(rows: int, *, seed: int = 7) -> dict[str, str]:
    """About ``rows`` SkyPilot catalog rows in all, as one ``vms.csv`` text per cloud."""
    rng = random.Random(seed)
    docs: dict[str, str] = {}
    for cloud, share in _MIX:
        buffer = io.StringIO()
        header = _HEADERS[cloud]
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(header)
        for row in _rows(cloud, max(1, round(rows * share)), rng):
            writer.writerow([row.get(column, "") for column in header])
        docs[cloud] = buffer.getvalue()
    return docs


def parse_documents(docs: Mapping[str, str]) -> Catalog:
    """Parse per-cloud SkyPilot documents with gpufit's adapter into one catalog."""
    offers: list[Offer] = []
    sources: list[SourceInfo] = []
    for cloud, text in docs.items():
        name = f"skypilot-{cloud}"
        feed = parse_skypilot(text, source=name, as_of=AS_OF)
        offers.extend(owned_by(o, name) for o in feed.offers)
        sources.append(
            SourceInfo(
                name=name, as_of=AS_OF, fetched_at=AS_OF, rows=feed.rows, rejected=feed.rejected
            )
        )
    return Catalog.of(offers, sources)


def synthetic_catalog(offers: int, *, seed: int = 7) -> Catalog:
    """A catalog of exactly ``offers`` offers parsed from generated SkyPilot rows."""
    rows = max(8, offers)
    while True:
        catalog = parse_documents(synthetic_documents(rows, seed=seed))
        if len(catalog) >= offers:
            break
        rows *= 2
    picked: list[Offer] = random.Random(seed).sample(list(catalog.offers), offers)
    return Catalog.of(picked, catalog.sources)
