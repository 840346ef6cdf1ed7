"""Timing helpers shared by the benchmark scripts (stdlib only)."""

from __future__ import annotations

import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "REPO",
    "SHARED_DATA",
    "SKYPILOT_FILES",
    "Stats",
    "Timed",
    "cpu_ms",
    "interleaved",
    "machine",
    "measure",
    "shared_skypilot_texts",
    "stats",
]

REPO = Path(__file__).resolve().parent.parent
#: Real data shared beside the repository (absent on most machines: benches skip it then).
SHARED_DATA = REPO.parent / "shared" / "data"
#: The real SkyPilot catalog files per cloud under ``SHARED_DATA / "skypilot-catalog"`` (GCP
#: prices hosts and accelerators in two files).
SKYPILOT_FILES = {
    "aws": ("aws_gpu_vms.csv",),
    "gcp": ("gcp_gpu_host_vms.csv", "gcp_gpu_vms.csv"),
    "lambda": ("lambda_gpu_vms.csv",),
    "nebius": ("nebius_gpu_vms.csv",),
    "runpod": ("runpod_gpu_vms.sample.csv",),
}


def shared_skypilot_texts() -> dict[str, list[str]] | None:
    """Each cloud's real SkyPilot files (those present), or ``None`` without the shared data."""
    folder = SHARED_DATA / "skypilot-catalog"
    if not folder.is_dir():
        return None
    texts = {
        cloud: [(folder / n).read_text() for n in names if (folder / n).exists()]
        for cloud, names in SKYPILOT_FILES.items()
    }
    return {cloud: found for cloud, found in texts.items() if found}


@dataclass(frozen=True, slots=True)
class Stats:
    runs: int
    p50_s: float
    p99_s: float
    mean_s: float

    def ms(self) -> str:
        return f"p50 {self.p50_s * 1e3:8.3f} ms  p99 {self.p99_s * 1e3:8.3f} ms  (n={self.runs})"


def stats(samples: list[float]) -> Stats:
    ordered = sorted(samples)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return Stats(len(ordered), statistics.median(ordered), p99, statistics.fmean(ordered))


def measure(fn: Callable[[], object], *, runs: int, warmup: int = 2) -> Stats:
    """Wall time of ``fn()`` per call over ``runs`` calls after ``warmup`` calls."""
    for _ in range(warmup):
        fn()
    samples: list[float] = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return stats(samples)


def cpu_ms(fn: Callable[[], object], *, runs: int) -> float:
    """The fastest of ``runs`` calls, in this process's CPU milliseconds (after one warm-up)."""
    fn()
    best = float("inf")
    for _ in range(runs):
        start = time.process_time()
        fn()
        best = min(best, time.process_time() - start)
    return best * 1e3


@dataclass(frozen=True, slots=True)
class Timed:
    """One function's wall-time statistics and fastest CPU time from :func:`interleaved`."""

    wall: Stats
    cpu_ms: float


def interleaved(fns: Mapping[str, Callable[[], object]], *, runs: int) -> dict[str, Timed]:
    """Each function timed ``runs`` times, taking turns (one call of each per round, after a
    warm-up round), so a slow spell of a shared machine hits all of them alike."""
    for fn in fns.values():
        fn()
    walls: dict[str, list[float]] = {name: [] for name in fns}
    cpus: dict[str, float] = dict.fromkeys(fns, float("inf"))
    for _ in range(runs):
        for name, fn in fns.items():
            wall, cpu = time.perf_counter(), time.process_time()
            fn()
            cpus[name] = min(cpus[name], time.process_time() - cpu)
            walls[name].append(time.perf_counter() - wall)
    return {name: Timed(stats(walls[name]), cpus[name] * 1e3) for name in fns}


def machine() -> str:
    """One paragraph naming the machine, for the figures."""
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True, check=False).stdout
        model = next(
            (line.split(":", 1)[1].strip() for line in lscpu.splitlines() if "Model name" in line),
            platform.processor() or "unknown CPU",
        )
    except OSError:
        model = platform.processor() or "unknown CPU"
    return (
        f"{os.cpu_count()} CPUs ({model}), Python {sys.version.split()[0]} "
        f"({platform.python_implementation()}), {platform.system()} {platform.release()}, "
        f"{time.strftime('%Y-%m-%d')}"
    )
