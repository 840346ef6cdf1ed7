"""gpufit's estimates beside the steps measured on a real GPU by ``bench/device_steps.py``.

Reads the JSON lines a device run wrote (``bench/device_h200.jsonl`` by default) and, per
case, costs the same setting as gpufit does: the HF Trainer/PEFT stack on one GPU with no
sharding, the measured activation checkpointing, the same sequence and micro-batch. It
prints measured and estimated peak memory (PyTorch's reserved and allocated figures) and
step time (a training micro-step; one decode step of HF ``generate``), with the ratio
estimate ÷ measured. These cases are none of the calibration or validation rows of the
other benches: nothing here sets a constant unless ``docs/estimator.md`` says so.

    .venv/bin/python -m bench.device_compare [results.jsonl] [--markdown]
"""

from __future__ import annotations

import json
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from recommender.estimation.efficiency import compute_efficiency, dense_tflops
from recommender.estimation.memory import MemoryModel
from recommender.estimation.parallelism import NO_PARALLEL
from recommender.estimation.rollout import decode_step_seconds
from recommender.estimation.steptime import RUN_EFFICIENCY, step_time
from recommender.estimation.strategies import Strategy
from recommender.gpus import IntraNode, get_gpu
from recommender.models import lookup_model
from recommender.pricing.offers import Fabric
from recommender.workload import (
    Framework,
    Method,
    Objective,
    Offload,
    Optimizer,
    Precision,
    Sharding,
    Workload,
)

RESULTS = Path(__file__).resolve().parent / "device_h200.jsonl"
GPU = "H200-SXM-141GB"


@dataclass(frozen=True, slots=True)
class Row:
    name: str
    status: str
    measured_reserved: float
    measured_allocated: float
    estimated_reserved: float
    estimated_allocated: float
    measured_step_s: float
    estimated_step_s: float


def _workload(setting: dict[str, Any]) -> Workload:
    arch = lookup_model(setting["model"])
    if arch is None:
        raise ValueError(f"gpufit has no model {setting['model']!r}")
    method = Method.LORA if setting["method"] == "lora" else Method.FULL
    # device_steps' "mixed" is fp32 weights under bf16 autocast; "bf16" pure bf16 (for LoRA
    # the frozen base is bf16 and PEFT keeps the adapters in fp32: mixed precision's bytes)
    pure = setting["precision"] == "bf16" and method is Method.FULL
    targets = "attention" if "gate_proj" not in setting["lora_targets"] else "all"
    return Workload(
        model=arch,
        method=method,
        precision=Precision.BF16_TRUE if pure else Precision.BF16_MIXED,
        optimizer=Optimizer.ADAMW,
        seq_len=int(setting["seq"]),
        micro_batch=int(setting["micro_batch"]),
        lora_rank=16,
        lora_targets=targets,
        # PEFT's fp32 adapters cast each input (HF's stack); bf16 adapters move what
        # torchtune's LoRALinear does
        framework=Framework.HF if setting.get("fp32_adapters", True) else Framework.TORCHTUNE,
    )


def estimate_train(result: dict[str, Any]) -> Row:
    setting = result["setting"]
    workload = _workload(setting)
    strategy = Strategy(Sharding.DDP, Offload.NONE, bool(setting["checkpointing"]), NO_PARALLEL)
    mem = MemoryModel(workload).breakdown(strategy, gpus=1, gpus_per_node=1)
    gpu = get_gpu(GPU)
    step = step_time(
        workload, gpu, strategy, gpus=1, nodes=1, link=IntraNode.NVLINK, fabric=Fabric.INFINIBAND
    )
    # steady: the micro-step between checkpoints, as a step timer sees it
    seconds = step.tokens / step.steady_tokens_per_second
    return Row(
        result["name"],
        result["status"],
        result["peak_reserved_gib"],
        result["peak_allocated_gib"],
        mem.pytorch_gib,
        mem.pytorch_gib - mem.fragmentation_gib,
        result["median_step_s"],
        seconds,
    )


def estimate_generate(result: dict[str, Any]) -> Row:
    """One decode step of HF ``generate`` as :func:`recommender.estimation.rollout.
    decode_step_seconds` costs it (prompt and new tokens as measured, one GPU, the step
    model's FLOP rate); a ``forward`` row times the model alone, which gpufit does not."""
    setting = result["setting"]
    arch = lookup_model(setting["model"])
    assert arch is not None
    gpu = get_gpu(GPU)
    workload = Workload(
        model=arch,
        method=Method.FULL,
        precision=Precision.BF16_MIXED,
        optimizer=Optimizer.ADAMW,
        seq_len=setting["prompt"] + setting["new"],
        micro_batch=1,
        objective=Objective.GRPO,
        completion_len=setting["new"],
        engine="hf",
    )
    rate = dense_tflops(gpu, workload.precision) * 1e12 * compute_efficiency(gpu, arch.hidden)
    step = (
        decode_step_seconds(workload, gpu, batch=setting["batch"], tp=1, flops_rate=rate)
        if setting["engine"] == "generate"
        else 0.0
    )
    return Row(
        result["name"],
        result["status"],
        result["peak_reserved_gib"],
        result["peak_allocated_gib"],
        0.0,
        0.0,
        result["median_step_s"],
        step,
    )


def rows(path: Path) -> tuple[dict[str, Any], list[Row]]:
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    env = lines[0]["environment"]
    out = [
        estimate_train(r) if r["kind"] == "train" else estimate_generate(r)
        for r in lines[1:]
        if r["status"] in ("ok", "oom")
    ]
    return env, out


def main(argv: list[str]) -> None:
    paths = [a for a in argv if not a.startswith("--")]
    env, table = rows(Path(paths[0]) if paths else RESULTS)
    md = "--markdown" in argv
    print(
        f"measured on {env.get('gpu')} ({env.get('memory_gib', 0):.1f} GiB), torch "
        f"{env['torch']}, transformers {env['transformers']}, peft {env['peft']}; "
        f"run efficiency {RUN_EFFICIENCY} left out of the estimated step"
    )
    if md:
        print(
            "| case | reserved GiB meas. / est. | allocated GiB meas. / est. | step s meas. / est. "
            "|"
        )
        print("|---|---|---|---|")
    for r in table:
        mem = (
            f"{r.measured_reserved:.1f} / {r.estimated_reserved:.1f} "
            f"(×{r.estimated_reserved / r.measured_reserved:.2f})"
            if r.estimated_reserved
            else "—"
        )
        alloc = (
            f"{r.measured_allocated:.1f} / {r.estimated_allocated:.1f}"
            if r.estimated_allocated
            else "—"
        )
        step = (
            f"{r.measured_step_s:.4f} / {r.estimated_step_s:.4f} "
            f"(×{r.estimated_step_s / r.measured_step_s:.2f})"
            if r.estimated_step_s
            else f"{r.measured_step_s:.4f} / —"
        )
        status = "" if r.status == "ok" else f" [{r.status}]"
        if md:
            print(f"| {r.name}{status} | {mem} | {alloc} | {step} |")
        else:
            print(f"{r.name + status:36s} mem {mem:26s} alloc {alloc:14s} step {step}")
    print()
    training = [r for r in table if r.estimated_reserved]
    for label, part in (
        ("full-weight training", [r for r in training if not r.name.startswith("lora")]),
        ("LoRA training", [r for r in training if r.name.startswith("lora")]),
        ("generate", [r for r in table if not r.estimated_reserved and r.estimated_step_s]),
    ):
        steps = [abs(r.estimated_step_s / r.measured_step_s - 1) for r in part]
        line = f"{label}: {len(part)} cases, step median |error| {statistics.median(steps):.0%}"
        if label != "generate":
            mems = [abs(r.estimated_reserved / r.measured_reserved - 1) for r in part]
            line += f", reserved memory median |error| {statistics.median(mems):.0%}"
        print(line)


if __name__ == "__main__":
    main(sys.argv[1:])
