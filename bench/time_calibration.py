"""Published training throughput vs the step-time model (and the old flat-utilisation model).

Reads ``tests/recommender/data/time_calibration.csv`` (rows copied from public benchmark
tables, model cards and papers, each with its source) and prints, per case, the published
tokens/s per GPU, the estimate, and the error, then median |error| and the share within
±35 % for the whole set, for the published runs alone and for the llm-foundry rows.
Figures only: nothing here is timed or asserted.

    .venv/bin/python -m bench.time_calibration [--product] [--markdown]

``--product`` costs each pretraining case as the product answers it instead: the layout search
picks the strategy for the case's GPU and count (not the published TP/PP/EP), and the global
batch comes from the rule of ``recommender/estimation/global_batch.py`` (not the published one);
the run's attention kernel and, where its source states it, full activation recomputation are
stated as a user would ("eager attention", "activation checkpointing"): they are the run's
recipe, not its layout.
"""

from __future__ import annotations

import csv
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from recommender.estimation.activations import Kernels
from recommender.estimation.layouts import evaluate
from recommender.estimation.parallelism import NO_PARALLEL, Parallel
from recommender.estimation.steptime import step_time
from recommender.estimation.strategies import Strategy
from recommender.estimation.throughput import Network, peak_tflops, plan_step
from recommender.gpus import IntraNode, get_gpu
from recommender.models import Architecture, Block, lookup_model
from recommender.pricing.offers import Fabric
from recommender.workload import (
    Framework,
    MemorySavers,
    Method,
    Offload,
    Optimizer,
    Precision,
    Sharding,
    Workload,
)

CASES = Path(__file__).resolve().parent.parent / "tests/recommender/data/time_calibration.csv"


@dataclass(frozen=True, slots=True)
class Case:
    name: str
    source: str
    group: str
    workload: Workload
    strategy: Strategy
    gpu_id: str
    gpus: int
    gpus_per_node: int
    fabric: Fabric
    global_batch_tokens: float
    published: float  # tokens/s per GPU
    end_to_end: bool  # a whole run's wall-clock (else a steady-state benchmark)
    note: str
    high_confidence: bool = True  # the figure and the layout rest on no named assumption
    flash: bool = True  # a fused attention kernel (``attention`` column: ``standard`` if not)
    dropout: bool = False  # attention dropout on the unfused path (``standard+dropout``)
    recompute_stated: bool = False  # the source states full recomputation (``checkpointing`` 1)

    @property
    def validation(self) -> bool:
        """Held out: added after the constants were fitted, never tuned on."""
        return self.group == "validation"


def _arch(row: dict[str, str]) -> Architecture:
    if row["model"] != "custom" and not row["model"].startswith("mpt-"):
        arch = lookup_model(row["model"])
        assert arch is not None, row["model"]
        return arch
    hidden = int(row["hidden"])
    heads = int(row.get("heads") or 0) or max(hidden // 128, 1)  # the stated heads, else 128-wide
    return Architecture(
        name=row["model"],
        params=round(float(row["params"])),
        layers=int(row["layers"]),
        hidden=hidden,
        heads=heads,
        kv_heads=heads,
        ffn=int(row["ffn"]),
        vocab=int(row["vocab"]),
        tied_embeddings=row["tied"] == "1",
        block=Block.GPT,
    )


def parallel(cell: str | None) -> Parallel:
    """``tp4 pp4 cp2 vp20`` → the degrees; empty → none."""
    if not cell:
        return NO_PARALLEL
    degrees = {word[:2]: int(word[2:]) for word in cell.split()}
    return Parallel(**degrees)


def load_cases(path: Path = CASES) -> list[Case]:
    """Every calibration row as a workload, strategy and layout."""
    lines = [ln for ln in path.read_text(encoding="utf-8").splitlines() if not ln.startswith("#")]
    cases = []
    for row in csv.DictReader(lines):
        stack = (row.get("stack") or "").split()
        workload = Workload(
            model=_arch(row),
            method=Method(row["method"]),
            precision=Precision(row["precision"]),
            optimizer=Optimizer.ADAMW,
            seq_len=int(row["seq_len"]),
            micro_batch=int(row["micro_batch"]),
            # the run's attention kernel, as a user states it ("eager attention")
            savers=MemorySavers(
                flash_attention=False
                if (row.get("attention") or "").startswith("standard")
                else None,
                compile="compile" in stack,
            ),
            # the stack the run names, where the row says ("torchtune compile")
            framework=Framework(stack[0]) if stack and stack[0] != "compile" else None,
        )
        strategy = Strategy(
            sharding=Sharding(row["sharding"]),
            offload=Offload.NONE,
            checkpointing=row["checkpointing"] in ("1", "assumed"),
            parallel=parallel(row.get("parallel")),
        )
        cases.append(
            Case(
                name=row["case"],
                source=row["source"],
                group=row["set"],
                workload=workload,
                strategy=strategy,
                gpu_id=row["gpu"],
                gpus=int(row["gpus"]),
                gpus_per_node=int(row["gpus_per_node"]),
                fabric=Fabric(row["fabric"]),
                global_batch_tokens=float(row["global_batch_tokens"] or 0),
                published=float(row["published_tok_s_gpu"]),
                note=row["note"],
                end_to_end=row["kind"] == "end-to-end",
                high_confidence=row.get("confidence") != "low",
                flash=not (row.get("attention") or "flash").startswith("standard"),
                dropout=row.get("attention") == "standard+dropout",
                recompute_stated=row["checkpointing"] == "1",
            )
        )
    return cases


def _nodes(case: Case) -> int:
    return max(-(-case.gpus // case.gpus_per_node), 1)


def estimate_product(case: Case) -> tuple[float, str] | None:
    """The product's tokens/s per GPU for ``case``: searched layout, the batch by the rule
    (``None`` when the search finds no layout that fits)."""
    gpu = get_gpu(case.gpu_id)
    workload = replace(case.workload, checkpointing=True if case.recompute_stated else None)
    plan = evaluate(workload, gpu, gpus=case.gpus, gpus_per_node=case.gpus_per_node)
    if not plan.fits:
        return None
    step = plan_step(workload, plan, Network(gpu.intra_node, case.fabric))
    rate = step.tokens_per_second if case.end_to_end else step.steady_tokens_per_second
    return rate / case.gpus, plan.strategy.describe(plan.gpus)


def estimate(case: Case) -> float:
    """The step-time model's tokens/s per GPU for ``case``."""
    gpu = get_gpu(case.gpu_id)
    step = step_time(
        case.workload,
        gpu,
        case.strategy,
        gpus=case.gpus,
        nodes=_nodes(case),
        link=gpu.intra_node,
        fabric=case.fabric,
        global_batch_tokens=case.global_batch_tokens or None,
        kernels=Kernels(flash_attention=case.flash, attention_dropout=case.dropout),
    )
    rate = step.tokens_per_second if case.end_to_end else step.steady_tokens_per_second
    return rate / case.gpus


# The model this one replaces (gpufit ≤ 0.x throughput.py): 6N/4N (+2N recompute) + 12·L·h·s
# attention at a flat utilisation by topology × method.
_OLD_METHOD = {Method.PRETRAIN: 1.0, Method.FULL: 0.85, Method.LORA: 0.65, Method.QLORA: 0.5}


def estimate_flat(case: Case) -> float:
    """The old flat-utilisation model's tokens/s per GPU for ``case``."""
    w, gpu = case.workload, get_gpu(case.gpu_id)
    m = w.model
    n = m.active_params if m.tied_embeddings else m.active_params - m.vocab * m.hidden
    ckpt = case.strategy.checkpointing
    per_token = (4.0 if w.method in (Method.LORA, Method.QLORA) else 6.0) + (2.0 if ckpt else 0)
    attention = 12.0 * m.layers * m.hidden * w.seq_len * (4 / 3 if ckpt else 1)
    flops = per_token * n + attention
    if _nodes(case) > 1:
        base = 0.40 if case.fabric.fast else 0.10
    elif case.gpus == 1:
        base = 0.40
    else:
        base = {IntraNode.NVLINK: 0.40, IntraNode.BRIDGE: 0.30}.get(gpu.intra_node, 0.25)
    util = base * _OLD_METHOD[w.method]
    return peak_tflops(gpu, w.precision) * 1e12 * util / flops


def error(estimated: float, published: float) -> float:
    """Relative error of the estimated *time* (published/estimated throughput − 1)."""
    return published / estimated - 1.0


def summary(errors: list[float]) -> tuple[float, float]:
    """Median |error| and the share of cases within ±35 %."""
    if not errors:
        return 0.0, 0.0
    return (
        statistics.median(abs(e) for e in errors),
        sum(abs(e) <= 0.35 for e in errors) / len(errors),
    )


def outside_twice(errors: list[float]) -> int:
    """Cases whose estimated time is more than twice, or less than half, the published."""
    return sum(not 0.5 <= 1 + e <= 2.0 for e in errors)


GROUPS: dict[str, Callable[[Case], bool]] = {
    "all": lambda c: True,
    "calibration": lambda c: not c.validation,
    "validation": lambda c: c.validation,
    "high-confidence": lambda c: c.high_confidence,
    "validation, high-conf.": lambda c: c.validation and c.high_confidence,
    "published runs": lambda c: c.group == "run",
    "whole runs": lambda c: c.end_to_end,
    "llm-foundry": lambda c: c.group == "llm-foundry",
}


def product(cases: list[Case], *, markdown: bool = False) -> None:
    """Print the product path's error per pretraining case (a Markdown table with
    ``markdown``) and the group summaries."""
    rows = []
    if markdown:
        print("| case | set | conf. | published tok/s/GPU | product | error | layout chosen |")
        print("|---|---|---|---|---|---|---|")
    for c in cases:
        if c.workload.method is not Method.PRETRAIN:
            continue
        got = estimate_product(c)
        if got is None:
            print(f"{c.name:32s} no layout fits")
            continue
        e = error(got[0], c.published)
        rows.append((c, e))
        if markdown:
            kind = "validation" if c.validation else "calibration"
            conf = "high" if c.high_confidence else "low"
            cells = f"{c.published:,.0f} | {got[0]:,.0f} | {e:+.0%} | {got[1]}"
            print(f"| {c.name} | {kind} | {conf} | {cells} |")
        else:
            print(f"{c.name:32s} {c.published:10.0f} {got[0]:10.0f} {e:+6.0%}   {got[1]}")
    print()
    for label, keep in GROUPS.items():
        errs = [e for c, e in rows if keep(c)]
        if errs:
            med, share = summary(errs)
            print(
                f"{label:22s} n={len(errs):3d}  product path: median |err| {med:.0%}, "
                f"within ±35 % {share:.0%}, outside ×2 {outside_twice(errs)}"
            )


def main(argv: list[str]) -> None:
    markdown = "--markdown" in argv
    if "--product" in argv:
        product(load_cases(), markdown=markdown)
        return
    cases = load_cases()
    rows = [(c, estimate(c), estimate_flat(c)) for c in cases]
    if markdown:
        head = "| case | set | conf. | published tok/s/GPU | estimated | error | old flat error |"
        print(head + " source |")
        print("|---|---|---|---|---|---|---|---|")
    for c, est, flat in rows:
        e, fe = error(est, c.published), error(flat, c.published)
        if markdown:
            kind = "validation" if c.validation else "calibration"
            conf = "high" if c.high_confidence else "low"
            cells = f"{c.published:,.0f} | {est:,.0f} | {e:+.0%} | {fe:+.0%}"
            print(f"| {c.name} | {kind} | {conf} | {cells} | {c.source} |")
        else:
            cells = f"{c.published:10.0f} {est:10.0f} {e:+6.0%}   flat {flat:9.0f} {fe:+6.0%}"
            print(f"{c.name:32s} {cells}")
    print()
    for label, keep in GROUPS.items():
        sel = [r for r in rows if keep(r[0])]
        errs = [error(est, c.published) for c, est, _ in sel]
        med, share = summary(errs)
        fmed, fshare = summary([error(flat, c.published) for c, _, flat in sel])
        print(
            f"{label:22s} n={len(sel):3d}  step-time model: median |err| {med:.0%}, "
            f"within ±35 % {share:.0%}, outside ×2 {outside_twice(errs)}   "
            f"old flat model: median |err| {fmed:.0%}, within ±35 % {fshare:.0%}"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
