"""The accelerator spec table and GPU name normalisation.

Facts come from the project's own ``data/gpus.csv`` (dense tensor rates, never 2:4 sparse
figures; memory as labelled by the vendor). Every provider spells GPUs differently
(``H100``, ``h100-80gb``, ``NVIDIA H100 80GB HBM3``, ``A100-SXM4-80GB``); :func:`normalize`
turns any of them into one canonical id such as ``H100-SXM-80GB``.
"""

from __future__ import annotations

import csv
import difflib
import re
from dataclasses import dataclass
from enum import StrEnum
from functools import cache, lru_cache
from importlib import resources

from recommender.errors import UnknownGpuError

__all__ = [
    "GpuSpec",
    "IntraNode",
    "all_gpus",
    "get_gpu",
    "normalize",
    "try_normalize",
]


class IntraNode(StrEnum):
    """How GPUs inside one machine talk to each other."""

    NVLINK = "nvlink"  # a switched fabric across the node (NVSwitch, Infinity Fabric, RoCE)
    BRIDGE = "bridge"  # NVLink bridges join pairs of cards only; the rest is PCIe
    PCIE = "pcie"  # PCIe only (L4, L40S, RTX): no peer fabric


@dataclass(frozen=True, slots=True)
class GpuSpec:
    """One accelerator model. Rates are dense TFLOP/s per GPU; ``None`` means unsupported."""

    id: str
    name: str
    vendor: str
    form_factor: str
    memory_gb: float
    mem_bandwidth_tbps: float
    bf16_tflops: float | None
    fp16_tflops: float | None
    fp8_tflops: float | None
    tf32_tflops: float | None
    fp32_tflops: float | None
    supports_bf16: bool
    supports_fp8: bool
    intra_node: IntraNode
    interconnect_gbps: float | None
    aliases: tuple[str, ...]
    source: str

    @property
    def memory_gib(self) -> float:
        """Labelled memory in GiB (the label is in GB = 10^9 bytes)."""
        return self.memory_gb * 1e9 / 2**30

    @property
    def pcie_only(self) -> bool:
        return self.intra_node is not IntraNode.NVLINK


def _float(cell: str) -> float | None:
    cell = cell.strip()
    return float(cell) if cell else None


@cache
def _table() -> tuple[GpuSpec, ...]:
    text = resources.files("recommender").joinpath("data/gpus.csv").read_text(encoding="utf-8")
    rows = []
    for row in csv.DictReader(text.splitlines()):
        nvlink = row["nvlink"].strip()
        rows.append(
            GpuSpec(
                id=row["id"],
                name=row["name"],
                vendor=row["vendor"],
                form_factor=row["form_factor"],
                memory_gb=float(row["memory_gb"]),
                mem_bandwidth_tbps=float(row["mem_bandwidth_tbps"]),
                bf16_tflops=_float(row["bf16_tflops"]),
                fp16_tflops=_float(row["fp16_tflops"]),
                fp8_tflops=_float(row["fp8_tflops"]),
                tf32_tflops=_float(row["tf32_tflops"]),
                fp32_tflops=_float(row["fp32_tflops"]),
                supports_bf16=row["bf16"] == "y",
                supports_fp8=row["fp8"] == "y",
                intra_node={"y": IntraNode.NVLINK, "bridge": IntraNode.BRIDGE}.get(
                    nvlink, IntraNode.PCIE
                ),
                interconnect_gbps=_float(row["interconnect_gbps"]),
                aliases=tuple(a for a in row["aliases"].split(";") if a),
                source=row["source"],
            )
        )
    return tuple(rows)


_VENDOR_WORDS = re.compile(r"\b(nvidia|amd|intel|tesla|geforce|instinct|tensor core|gpu)\b")
_SXM = re.compile(r"\bsxm[2-6]?\b")
# "(?<!\d)": a match can only start where a run of digits starts. Without it a search retries
# from every digit of a long run and scans the rest of the run each time, so a 2,000-digit
# word took ~60 ms (quadratic). A run that can match is matched from its first digit
# anyway, so what these match is unchanged.
#: "80GB", "80 gb", "80GiB", and "-80G" after a separator ("A100-80G"; "A10G" is a name)
_GB = re.compile(r"(?<!\d)(\d+)\s*gi?b\b|(?<=[-_ ])(\d+)g\b")
_MEMORY_SUFFIX = re.compile(r"(?<!\d)(\d+)gb$")
_NOT_ALNUM = re.compile(r"[^a-z0-9]+")


def _key(name: str) -> str:
    """Collapse a spelling to a lookup key: lower case, no vendor words or punctuation."""
    s = name.lower()
    s = _VENDOR_WORDS.sub(" ", s)
    s = s.replace("hbm3e", " ").replace("hbm3", " ").replace("hbm2e", " ").replace("hbm2", " ")
    s = _SXM.sub("sxm", s)
    s = _GB.sub(lambda m: f"{m[1] or m[2]}gb", s)
    return _NOT_ALNUM.sub("", s)


@cache
def _index() -> dict[str, str]:
    index: dict[str, str] = {}
    for spec in _table():
        for spelling in (spec.id, spec.name, *spec.aliases):
            index.setdefault(_key(spelling), spec.id)
    return index


def _strip_default_words(key: str) -> str:
    # "h100sxm80gb" and "h10080gb" both mean the default H100; drop the defaults and retry.
    return key.replace("sxm", "")


#: GPU spellings whose answer is remembered; why: the parser tries every run of up to three
#: words of a question (and the feeds every catalog's GPU names), the same words recur, and
#: 1,024 strings of at most 2,000 characters (the parser's MAX_CHARS) stay under ~2 MB.
_SPELLINGS_KEPT = 1024


@lru_cache(maxsize=_SPELLINGS_KEPT)
def try_normalize(name: str) -> str | None:
    """The canonical id for a GPU spelling, or ``None`` when it is not known."""
    index = _index()
    key = _key(name)
    if not key:
        return None
    if key in index:
        return index[key]
    stripped = _strip_default_words(key)
    if stripped in index:
        return index[stripped]
    # "H100 80GB HBM3 SXM" → try without the memory suffix too
    no_mem = _MEMORY_SUFFIX.sub("", stripped)
    if no_mem and no_mem in index:
        candidate = index[no_mem]
        mem = _MEMORY_SUFFIX.search(stripped)
        if mem is None or abs(get_gpu(candidate).memory_gb - float(mem.group(1))) < 2:
            return candidate
    return None


def normalize(name: str) -> str:
    """The canonical id for a GPU spelling.

    Raises:
        UnknownGpuError: the spelling matches no known accelerator.
    """
    gpu_id = try_normalize(name)
    if gpu_id is None:
        close = difflib.get_close_matches(_key(name), list(_index()), n=3, cutoff=0.6)
        suggestions = tuple(dict.fromkeys(_index()[c] for c in close)) or (
            "H100",
            "A100-80GB",
            "L40S",
            "L4",
        )
        raise UnknownGpuError(name, suggestions)
    return gpu_id


@cache
def _by_id() -> dict[str, GpuSpec]:
    return {spec.id: spec for spec in _table()}


def get_gpu(gpu_id: str) -> GpuSpec:
    """The spec of a canonical id (use :func:`normalize` first for user spellings)."""
    try:
        return _by_id()[gpu_id]
    except KeyError:
        return _by_id()[normalize(gpu_id)]


def all_gpus() -> tuple[GpuSpec, ...]:
    """Every known accelerator, in table order (newest data-centre parts first)."""
    return _table()
