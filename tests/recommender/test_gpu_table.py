"""The GPU table (recommender/data/gpus.csv) covers every accelerator the price catalogs name,
each row with its figures and the source they come from (issue #39)."""

from __future__ import annotations

import pytest

from recommender import GpuSpec, all_gpus, get_gpu, try_normalize
from recommender.feeds.base import resolve_gpu

#: Every AcceleratorName in skypilot-org/skypilot-catalog catalogs/v8/common/accelerators.csv
#: @ 001ca549aad50db24c5670b5438bea0573a2b6c0 (the whole v8 catalog's names), plus B300 and
#: "RTX PRO Server 6000" (g7e), which the v8 AWS rows list, "RTX2000-Ada", which the v8 RunPod
#: rows list, and the GPU names of the gpuhunt archive (dstackai/gpuhunt
#: gpu_prices.json @ 8454e784c2901302bb4335aca83de80afcbbb36b: A100, H100, MI300X).
CATALOG_NAMES = (
    "A10", "A100", "A100-80GB", "A100-80GB-SXM", "A10G", "A30", "A40", "A4000", "A6000", "A800",
    "B200", "GH200", "GTX1660S", "Gaudi HL-205", "H100", "H100-MEGA", "H100-NVL", "H100-NVLINK",
    "H100-SXM", "H200", "H200-SXM", "K80", "L4", "L40", "L40S", "M4000", "M60", "MI300X", "P100",
    "P4", "P4000", "RTX3060", "RTX3070", "RTX3080", "RTX3090", "RTX4000-Ada", "RTX4090",
    "RTX5060", "RTX5090", "RTX6000", "RTX6000-Ada", "RTX6000Ada", "RTXA4000", "RTXA4500",
    "RTXA5000", "RTXA6000", "RTXPRO6000S", "RTXPRO6000WS", "Radeon MI25", "Radeon Pro V520",
    "T4", "T4g", "V100", "V100-32GB", "tpu-v2", "tpu-v3", "tpu-v4", "tpu-v5litepod", "tpu-v5p",
    "tpu-v6e", "B300", "RTX PRO Server 6000", "RTX2000-Ada",
)  # fmt: skip


@pytest.mark.parametrize("name", CATALOG_NAMES)
def test_every_catalog_name_has_a_row(name: str) -> None:
    assert try_normalize(name) is not None, name


@pytest.mark.parametrize(
    ("name", "memory_gib", "gpu_id"),
    [
        # The v8 rows that were rejected as unknown before (vast, lium, hyperstack, shadeform,
        # azure), with the per-GPU memory their rows state.
        ("RTX4070", 15.99, "RTX-4070-TI-SUPER"),  # vast's "RTX_4070S_Ti", 32752 MiB for 2
        ("RTX4060", 15.996, "RTX-4060-TI-16GB"),  # vast's "RTX_4060_Ti", 16380 MiB
        ("RTX3060", 12.0, "RTX-3060"),
        ("RTX3060", 8.0, "RTX-3060-TI"),  # vast's "RTX_3060_Ti", 16384 MiB for 2
        ("RTX3080", 10.0, "RTX-3080"),
        ("RTX3070", 8.0, "RTX-3070"),
        ("RTXA2000", 5.99, "RTX-A2000-6GB"),
        ("H100", 93.58, "H100-NVL-94GB"),  # vast's "H100_NVL", 95830 MiB
        ("RTXPRO6000-WK", 95.6, "RTX-PRO-6000"),
        ("RTX-A4000", 16.0, "RTX-A4000"),
        ("A16", 16.0, "A16"),
        ("K80", 12.0, "K80"),
    ],
)
def test_catalog_rows_resolve_by_name_and_memory(name: str, memory_gib: float, gpu_id: str) -> None:
    assert resolve_gpu(name, memory_gib=memory_gib) == gpu_id


@pytest.mark.parametrize("spec", all_gpus(), ids=lambda g: g.id)
def test_every_row_has_its_figures_and_their_source(spec: GpuSpec) -> None:
    """Memory and bandwidth always; a dense bf16 or fp16 rate or an FP32 rate where the vendor
    gives one; the link inside the node; and the source the figures come from."""
    gpu = get_gpu(spec.id)
    assert gpu.memory_gb > 0
    assert gpu.mem_bandwidth_tbps > 0
    assert gpu.source.strip()
    if gpu.supports_bf16 and gpu.bf16_tflops is None:
        assert "no peak" in gpu.source  # only Gaudi 1: Habana publishes none
    if gpu.supports_fp8:
        assert gpu.fp8_tflops is not None
    assert gpu.intra_node.value in {"nvlink", "bridge", "pcie"}


@pytest.mark.parametrize(
    ("name", "gpu_id"),
    [
        ("A100-80G", "A100-SXM-80GB"),  # "G" for GB after a separator
        ("a100 40g", "A100-SXM-40GB"),
        ("A100 80GiB", "A100-SXM-80GB"),
        ("A10G", "A10G"),  # a name ending in G is not a memory size
    ],
)
def test_memory_written_short_resolves(name: str, gpu_id: str) -> None:
    assert try_normalize(name) == gpu_id
