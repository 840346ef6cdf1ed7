"""recommend() over catalogs of 2k, 20k and 200k offers: the time of one question.

Run: ``.venv/bin/python bench/recommend.py`` (``--quick`` skips the 200k catalog).

Catalogs are SkyPilot ``vms.csv`` rows generated per cloud (bench/synth.py), parsed with
gpufit's adapter. Each question is one pass over the catalog, with nothing kept between
questions, so the figures grow with the number of offers; the guard rail is linear growth
(the user-level rail, a new Slack question's ack at p99 ≤ 300 ms, is bench/slash.py's). It
prints figures and asserts nothing: timings depend on the machine.
"""

from __future__ import annotations

import sys
from itertools import pairwise
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import machine, measure
from bench.synth import NOW, synthetic_catalog
from recommender import parse_workload, recommend

QUESTIONS = (
    "13B full finetune 2 days",
    "7B lora",
    "llama-3-70b qlora on 2B tokens under $3,000",
    "70B pretrain on 1T tokens in 30 days",
    "13b full finetune under $100",
)
#: Growth per ×10 offers that still reads as linear (plus noise).
GUARD_GROWTH_PER_10X = 10.0


def main(argv: list[str]) -> int:
    quick = "--quick" in argv
    sizes = (2_000, 20_000) if quick else (2_000, 20_000, 200_000)
    print(f"machine: {machine()}")
    workloads = [parse_workload(q) for q in QUESTIONS]
    slowest: dict[int, float] = {}
    for size in sizes:
        catalog = synthetic_catalog(size)
        runs = max(5, 200_000 // size)
        print(f"\n== {len(catalog)} offers ({runs} runs per question)")
        worst = 0.0
        for text, workload in zip(QUESTIONS, workloads, strict=True):
            result = measure(lambda w=workload, c=catalog: recommend(w, c, now=NOW), runs=runs)
            worst = max(worst, result.p50_s)
            print(f"  {result.ms()}  {text!r}")
        slowest[size] = worst
    print("\nslowest question's p50 per catalog:")
    for size, value in slowest.items():
        print(f"  {size:>7} offers: {value * 1e3:8.2f} ms")
    for small, large in pairwise(sizes):
        growth = slowest[large] / slowest[small]
        verdict = "linear" if growth <= GUARD_GROWTH_PER_10X * large / small / 10 else "OVER"
        print(f"  growth {small} → {large}: ×{growth:.1f} for ×{large // small} offers: {verdict}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
