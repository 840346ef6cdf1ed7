"""Published fine-tuning and post-training runs vs gpufit's estimate (issue #32).

Reads ``tests/recommender/data/posttrain_calibration.csv``: each run as its authors describe
it, the hardware they ran on and their wall-clock hours, with the source, and a split: the
constants of :mod:`recommender.estimation.finetune_speed` and :mod:`recommender.estimation.rollout`
were set on the ``cal`` rows, never on the ``val`` rows. Prints per case the published and estimated
hours, the ratio, the physical floor (the FLOPs, generation included, at 60 % of the dense peak),
then per split: share answered, median |error| and share within ×2.

    .venv/bin/python -m bench.posttrain_calibration [--markdown]
"""

from __future__ import annotations

import csv
import statistics
import sys
from dataclasses import dataclass, replace
from pathlib import Path

from recommender.errors import WorkloadError
from recommender.estimation.finetune_speed import eval_tokens, run_overhead_s, time_range
from recommender.estimation.posttrain import SPECS
from recommender.estimation.rollout import completion_tokens
from recommender.estimation.throughput import (
    Network,
    flops_per_token,
    peak_tflops,
    plan_step,
    train_hours,
)
from recommender.estimation.topology import LayoutSearch
from recommender.gpus import get_gpu
from recommender.parsing.parse import parse_workload
from recommender.workload import Workload

CASES = Path(__file__).resolve().parent.parent / "tests/recommender/data/posttrain_calibration.csv"
#: The floor no estimate may beat: all FLOPs at 60 % of the dense peak (issue #32)
FLOOR_SHARE = 0.6


@dataclass(frozen=True, slots=True)
class Case:
    name: str
    split: str
    hours: float
    #: "run": the whole run's wall-clock; "steady": a table of steady training throughput
    #: (LitGPT's per-1k-iteration timings, torchtune's tokens/sec), compared without the
    #: start, load, save and run efficiency
    measure: str
    source: str
    text: str


@dataclass(frozen=True, slots=True)
class Result:
    case: Case
    estimate: float | None  # hours; None when the description was not answered
    floor: float | None
    run_hours: float | None = None  # the whole run's estimate (what the floor bounds)
    why: str = ""


def load_cases(path: Path = CASES) -> list[Case]:
    lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if not ln.startswith("#")]
    return [
        Case(r["case"], r["split"], float(r["hours"]), r["measure"], r["source"], r["text"])
        for r in csv.DictReader(lines)
    ]


def floor_hours(workload: Workload, gpu_id: str, gpus: int) -> float:
    """The FLOPs of the run, generation included, at 60 % of the dense peak."""
    assert workload.tokens is not None
    flops = flops_per_token(workload, checkpointing=False) * workload.tokens
    if SPECS[workload.objective].generates:
        generated = workload.tokens / workload.seq_len * completion_tokens(workload)
        flops += 2.0 * workload.model.active_params * generated
    peak = peak_tflops(get_gpu(gpu_id), workload.precision) * 1e12 * gpus
    return flops / (peak * FLOOR_SHARE) / 3600


def run(case: Case) -> Result:
    """The estimate for one described run on the hardware it names."""
    try:
        workload = parse_workload(case.text)
    except WorkloadError as exc:
        return Result(case, None, None, f"refused: {exc}")
    hw = workload.hardware
    if hw is None or hw.gpu_id is None or workload.tokens is None:
        return Result(case, None, None, "no hardware or no work in the description")
    gpus = hw.count or 1
    gpu = get_gpu(hw.gpu_id)
    plan = LayoutSearch(workload).evaluate(gpu, gpus=gpus)
    if plan is None:
        return Result(case, None, None, "does not fit")
    network = Network.typical(gpu.intra_node, fast_fabric=True)
    whole = train_hours(workload, plan, network)
    assert whole is not None
    # as recommender.pricing.economics adds them
    whole += eval_tokens(workload) * whole / workload.tokens
    whole += run_overhead_s(workload, gpus) / 3600
    hours = whole
    if case.measure == "steady":  # a throughput table: no start, load, save or efficiency
        step = plan_step(replace(workload, tokens=None), plan, network)
        hours = workload.tokens / step.steady_tokens_per_second / 3600
    return Result(case, hours, floor_hours(workload, hw.gpu_id, gpus), whole)


def in_range(r: Result) -> bool:
    """The published hours lie inside the estimate's stated range."""
    if r.estimate is None:
        return False
    low, high = time_range(parse_workload(r.case.text))
    return low * r.estimate <= r.case.hours <= high * r.estimate


def summary(results: list[Result]) -> tuple[float, float, float]:
    """(share answered, median |error| of the time, share within ×2)."""
    answered = [r for r in results if r.estimate is not None]
    if not results or not answered:
        return 0.0, 0.0, 0.0
    ratios = [r.estimate / r.case.hours for r in answered if r.estimate is not None]
    median = statistics.median(abs(x - 1.0) for x in ratios)
    within = sum(0.5 <= x <= 2.0 for x in ratios) / len(results)
    return len(answered) / len(results), median, within


def main(argv: list[str]) -> None:
    results = [run(c) for c in load_cases()]
    md = "--markdown" in argv
    if md:
        print("| case | split | published h | estimated h | ratio | floor h |")
        print("|---|---|---|---|---|---|")
    for r in results:
        c = r.case
        if r.estimate is None or r.floor is None:
            line = f"| {c.name} | {c.split} | {c.hours:.3g} | — | {r.why} | |"
            print(line if md else f"{c.name:22s} {c.split}  {c.hours:9.3g} h  {r.why}")
            continue
        ratio = r.estimate / c.hours
        cells = (c.name, c.split, f"{c.hours:.3g}", f"{r.estimate:.3g}", f"×{ratio:.2f}")
        if md:
            print("| " + " | ".join(cells) + f" | {r.floor:.3g} |")
        else:
            print(f"{cells[0]:22s} {c.split}  {c.hours:9.3g} h  est {r.estimate:9.3g} h  ", end="")
            print(f"×{ratio:5.2f}  floor {r.floor:8.3g} h")
    print()
    for split in ("cal", "val", "all"):
        part = [r for r in results if split in ("all", r.case.split)]
        answered, median, within = summary(part)
        floor_ok = all(r.run_hours >= r.floor for r in part if r.run_hours and r.floor)
        ranged = sum(in_range(r) for r in part) / len(part)
        print(
            f"{split:4s} n={len(part):2d}  answered {answered:.0%}  median |error| {median:.0%}  "
            f"within ×2 {within:.0%}  inside the range {ranged:.0%}  floor kept: {floor_ok}"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
