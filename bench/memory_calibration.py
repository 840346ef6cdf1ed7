"""Published peak GPU memory vs the memory model: per-GPU error and fit/OOM verdicts.

Reads ``tests/recommender/data/memory_calibration.csv`` (rows copied from public benchmark
tables and docs, each with its source and the reading chosen) and prints, per case, the
published peak, the estimate in the same metric and the error (estimate ÷ published − 1),
then, for the calibration set and the validation set apart, the median |error|, the share of
right fit/OOM verdicts and of right implied fit/OOM judgements (:func:`implied`). Rows of
the validation set are never used to set a constant. ``--before`` drops what
the estimator could not express before issue #20 (stated savers: selective checkpointing
counts as full; no post-training), for the before/after comparison in docs/estimator.md.
Figures only: nothing here is timed; ``tests/recommender/test_memory_calibration.py``
asserts the targets.

    .venv/bin/python -m bench.memory_calibration [--markdown] [--before] [--set validation]
"""

from __future__ import annotations

import csv
import statistics
import sys
from dataclasses import dataclass, replace
from pathlib import Path

from recommender.estimation.activations import DEFAULT_KERNELS, Kernels
from recommender.estimation.hardware import precision_on
from recommender.estimation.memory import MemoryBreakdown, estimate_memory, usable_gib
from recommender.estimation.parallelism import NO_PARALLEL, Parallel
from recommender.estimation.strategies import MAX_GPUS_PER_NODE, Strategy
from recommender.gpus import GpuSpec, get_gpu
from recommender.models import lookup_model
from recommender.workload import (
    NO_SAVERS,
    Framework,
    LossKernel,
    MemorySavers,
    Method,
    Objective,
    Offload,
    Optimizer,
    Precision,
    Sharding,
    Workload,
)

CASES = Path(__file__).resolve().parent.parent / "tests/recommender/data/memory_calibration.csv"

#: GPU memory sizes (GB labels) an implied judgement is made for: the common cards (T4,
#: 24 GB consumer/L4/A10, A100 40/80, L40S/A6000 48, H100 80, H100 96 HBM2e, H200, B200).
IMPLIED_LABELS = (16, 24, 40, 48, 80, 96, 141, 192)
#: A capacity counts for a case when it is within this factor of the published peak; farther
#: ones are judged right by any estimate and would only pad the score.
IMPLIED_BAND = 2.0
#: Metrics that include memory the caching allocator holds but no tensor uses. PyTorch frees
#: its cached blocks and retries when a cudaMalloc fails (torch.cuda.memory_stats
#: ``num_alloc_retries``: "failed cudaMalloc calls that result in a cache flush and retry";
#: CUDA semantics docs, "Memory management"), so such a figure from a larger card bounds the
#: need from above: it implies "fits" for a capacity at or above it and nothing below it.
#: torchtune's 8B LoRA recipe shows it: 30.3 GiB reserved on a 48 GB A6000, 16.2 GiB on a
#: 24 GB RTX 4090 (README). Allocated/active figures are tensors alone, a lower bound of the
#: need: above a capacity they imply an OOM.
UPPER_BOUND_METRICS = frozenset({"reserved", "smi"})


@dataclass(frozen=True, slots=True)
class Case:
    name: str
    source: str
    reading: str
    workload: Workload
    strategy: Strategy
    gpu: GpuSpec
    gpus: int
    metric: str  # reserved | active | allocated | smi
    published_gib: float | None  # None: the source reports an OOM
    fits: bool  # the published verdict
    kernels: Kernels = DEFAULT_KERNELS
    set: str = "calibration"  # or "validation": never used to set a constant


@dataclass(frozen=True, slots=True)
class Result:
    case: Case
    memory: MemoryBreakdown
    estimated_gib: float  # in the case's metric
    usable_gib: float

    @property
    def error(self) -> float | None:
        published = self.case.published_gib
        return None if published is None else self.estimated_gib / published - 1

    @property
    def fits(self) -> bool:
        return self.memory.total_gib <= self.usable_gib

    @property
    def verdict_right(self) -> bool:
        return self.fits == self.case.fits


def _savers(cell: str) -> MemorySavers:
    words = set(filter(None, cell.split(";")))
    loss = LossKernel.PLAIN
    if "chunked_loss" in words:
        loss = LossKernel.CHUNKED
    if "fused_loss" in words:
        loss = LossKernel.FUSED
    return MemorySavers(
        loss=loss,
        optimizer_in_backward="optimizer_in_backward" in words,
        paged_optimizer="paged" in words,
        compile="compile" in words,
        activation_offload="activation_offload" in words,
    )


def _parallel(cell: str) -> Parallel:
    """``tp8;pp8;cp2`` → the degrees; empty: none."""
    degrees = {w[:2]: int(w[2:]) for w in filter(None, cell.split(";"))}
    return Parallel(**degrees) if degrees else NO_PARALLEL


def _case(row: dict[str, str], *, before: bool) -> Case:
    arch = lookup_model(row["model"])
    if arch is None:
        raise ValueError(f"unknown model {row['model']!r} in case {row['case']}")
    gpu = get_gpu(row["gpu"])
    if row["gpu_memory_gb"]:
        gpu = replace(gpu, memory_gb=float(row["gpu_memory_gb"]))
    ckpt = row["checkpointing"]
    savers = replace(_savers(row["savers"]), selective_checkpointing=ckpt == "selective")
    objective = Objective(row["objective"])
    if before:
        savers, objective = NO_SAVERS, Objective.SFT
    precision, _ = precision_on(Precision(row["precision"]), gpu)
    workload = Workload(
        model=arch,
        method=Method(row["method"]),
        precision=precision,
        optimizer=Optimizer(row["optimizer"]),
        seq_len=int(row["seq_len"]),
        micro_batch=int(row["micro_batch"]),
        lora_rank=int(row["lora_rank"] or 16),
        lora_targets=row["lora_targets"] or "all",
        savers=savers,
        objective=objective,
        framework=Framework(row["framework"]) if row["framework"] else None,
    )
    parallel = _parallel(row["parallel"])
    sharding, offload = Sharding(row["sharding"]), Offload(row["offload"])
    strategy = Strategy(sharding, offload, ckpt != "none", parallel)
    published = float(row["published_gib"]) if row["published_gib"] else None
    return Case(
        name=row["case"],
        source=row["source"],
        reading=row["reading"],
        workload=workload,
        strategy=strategy,
        gpu=gpu,
        gpus=int(row["gpus"]),
        metric=row["metric"],
        published_gib=published,
        fits=row["verdict"] == "fits",
        # "bnb_keeps_input": QLoRA run on bitsandbytes before 0.43.2; "flat_frozen_grads":
        # LoRA under FSDP1 flat parameters mixing frozen and trained weights (activations.py)
        kernels=Kernels(
            nf4_keeps_input="bnb_keeps_input" in row["savers"].split(";"),
            flat_frozen_grads="flat_frozen_grads" in row["savers"].split(";"),
        ),
        set=row["set"],
    )


def load_cases(path: Path = CASES, *, before: bool = False) -> list[Case]:
    with path.open(encoding="utf-8") as f:
        lines = [line for line in f if not line.startswith("#")]
    return [_case(row, before=before) for row in csv.DictReader(lines)]


def estimate(case: Case) -> Result:
    """The case's per-GPU memory in its own metric: reserved memory is PyTorch's view (the
    total less the CUDA context); active/allocated memory also leaves out the allocator's
    fragmentation; a whole-device monitor sees the total."""
    per_node = min(case.gpus, MAX_GPUS_PER_NODE)
    mem = estimate_memory(
        case.workload,
        case.strategy,
        gpus=case.gpus,
        gpus_per_node=per_node,
        kernels=case.kernels,
    )
    value = {
        "reserved": mem.pytorch_gib,
        "active": mem.pytorch_gib - mem.fragmentation_gib,
        "allocated": mem.pytorch_gib - mem.fragmentation_gib,
        "smi": mem.total_gib,
    }[case.metric]
    return Result(case, mem, value, usable_gib(case.gpu))


def summary(results: list[Result]) -> tuple[float, float]:
    """(median |error|, share of right verdicts)."""
    errors = [abs(e) for r in results if (e := r.error) is not None]
    right = sum(r.verdict_right for r in results)
    return statistics.median(errors), right / len(results)


def implied(results: list[Result], *, every_capacity: bool = False) -> tuple[int, int]:
    """(right, judged): the fit/OOM judgements a published peak implies for the common GPU
    sizes (:data:`IMPLIED_LABELS`, usable as PyTorch sees them) within :data:`IMPLIED_BAND` of
    it, against what the estimate in the same metric implies. A reserved or whole-device
    figure above a capacity smaller than the card it was measured on implies nothing there
    (:data:`UPPER_BOUND_METRICS`); ``every_capacity`` judges those too (the earlier rule)."""
    right = judged = 0
    for r in results:
        published = r.case.published_gib
        if published is None:
            continue
        measured_on = usable_gib(r.case.gpu)
        for label in IMPLIED_LABELS:
            usable = usable_gib(replace(get_gpu("H100-SXM-80GB"), memory_gb=float(label)))
            if not published / IMPLIED_BAND <= usable <= published * IMPLIED_BAND:
                continue
            upper_bound = r.case.metric in UPPER_BOUND_METRICS
            if upper_bound and published > usable and measured_on > usable and not every_capacity:
                continue
            judged += 1
            right += (published <= usable) == (r.estimated_gib <= usable)
    return right, judged


def report(results: list[Result], name: str) -> str:
    """One line of figures for a set of cases."""
    median, verdicts = summary(results)
    right, judged = implied(results)
    every, of_every = implied(results, every_capacity=True)
    n = sum(r.error is not None for r in results)
    return (
        f"{name}: {len(results)} cases, median |error| {median:.1%} (n = {n}), verdicts "
        f"right {verdicts:.1%}, implied fit/OOM right {right}/{judged} = {right / judged:.1%} "
        f"(every capacity: {every}/{of_every} = {every / of_every:.1%})"
    )


def main(argv: list[str]) -> None:
    before = "--before" in argv
    only = argv[argv.index("--set") + 1] if "--set" in argv else None
    results = [estimate(c) for c in load_cases(before=before) if only in (None, c.set)]
    markdown = "--markdown" in argv
    if markdown:
        print("| case | published GiB | estimated GiB | error | verdict | source |")
        print("|---|---|---|---|---|---|")
    for r in results:
        pub = "OOM" if r.case.published_gib is None else f"{r.case.published_gib:.1f}"
        err = "" if r.error is None else f"{r.error:+.0%}"
        verdict = ("fits" if r.fits else "OOM") + ("" if r.verdict_right else " (wrong)")
        if markdown:
            print(
                f"| {r.case.name} | {pub} | {r.estimated_gib:.1f} | {err} | {verdict} "
                f"| {r.case.source} |"
            )
        else:
            print(f"{r.case.name:34s} {pub:>6s} {r.estimated_gib:6.1f} {err:>6s} {verdict}")
    print()
    for name in ("calibration", "validation"):
        part = [r for r in results if r.case.set == name]
        if part:
            print(report(part, name))


if __name__ == "__main__":
    main(sys.argv[1:])
