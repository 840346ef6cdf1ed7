"""Fine-tunes and post-training as they really run (issue #32): the per-micro-step cost of
small jobs, the rollouts of on-policy methods, the fixed cost of a run, and the range.

:func:`recommender.estimation.steptime.step_time` prices a micro-step from its FLOPs, weight reads
and traffic, which is what large pretraining runs are bounded by. A fine-tune is often bounded by
something else:

* **The CPU's pace.** An eager PyTorch step launches hundreds of small kernels per layer
  (norms, rotary, LoRA's dropout and A/B matmuls, casts) and runs Python around them. The
  GPU runs them asynchronously, so the step takes the longer of the GPU's work and the
  CPU's; at the small micro-batches and short sequences of fine-tunes the CPU is slower.
  LitGPT's resource tables (tutorials/resource-tables.md, A100-40GB, PyTorch 2.1, LoRA at
  micro-batch 1 on Alpaca) take 97 ms a micro-step for phi-1.5 (24 layers), 74 ms for
  StableLM 3B (16 layers), 142 ms for Llama 2 7B (32) and 191 ms for Llama 2 13B (40), and
  barely more at micro-batch 2 or 4: 4.0-4.8 ms a layer, whatever the size.
* **Rollouts.** GRPO and PPO generate before they train; decoding is memory-bound
  (:mod:`recommender.estimation.rollout`). Frameworks run generation and training one after the
  other unless the rollouts are asynchronous; GPUs set aside for a vLLM engine sit idle while the
  others train, and still count in the GPU-hours (they are part of the layout).
* **A run's fixed cost.** Loading the weights, starting the engines and saving the result:
  :func:`run_overhead_s`, added to a token budget's hours by :mod:`recommender.pricing.economics`.

:func:`micro_step` is the one hook :mod:`recommender.estimation.steptime` calls; :func:`time_range`
is the spread every fine-tune and post-training estimate carries
(``bench/posttrain_calibration.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from recommender.estimation.posttrain import SPECS, flops_multiplier
from recommender.estimation.rollout import decode_seconds, engine
from recommender.gpus import GpuSpec
from recommender.workload import Framework, Method, Objective, Workload

if TYPE_CHECKING:  # steptime calls this module: the type only, to avoid a cycle
    from recommender.estimation.steptime import StepTime

__all__ = ["PER_LAYER_S", "micro_step", "objective_range", "run_overhead_s", "time_range"]

#: CPU time of one eager forward + backward pass per layer (LitGPT resource tables above:
#: 4.0-4.8 ms a layer; their mean)
PER_LAYER_S = 0.0044
#: torch.compile fuses the elementwise kernels and CUDA graphs remove launches, which is the
#: CPU time above (ours: 0.3 of it left; torchtitan's compiled 8B runs 16 % faster than eager
#: on 8 H100s, benchmarks/llama3_h100_202412_torchtitan.md, where the CPU is not the bound)
COMPILED_SHARE = 0.3
#: Unsloth's hand-written Triton kernels for LoRA, RoPE and cross-entropy: "2x faster" than
#: HF + Flash Attention 2 on the same runs (unslothai/unsloth README benchmark table) (ours:
#: half the overhead left)
UNSLOTH_SHARE = 0.5
#: Reading safetensors from local NVMe into GPU memory, ~2 GB/s per node, and process start,
#: NCCL and dataset tokenisation, ~2 minutes (ours); a vLLM engine's start (weights, CUDA graph
#: capture) adds about as much again (ours)
LOAD_GBS = 2.0
START_S = 120.0
ENGINE_START_S = 120.0
#: Writing a checkpoint to network storage at ~1 GB/s (ours), once at the end of the run
SAVE_GBS = 1.0

#: (low, high) multipliers on an estimated time (ours, from the calibration split of
#: bench/posttrain_calibration.py): published ÷ estimated runs from 0.74 to 1.75 on its eight
#: runs this model explains and reaches 3.9 and 6.3 on the two it names as unexplained
#: (docs/estimator.md); rollouts spread widest (completion lengths are caps, not lengths)
_RANGES: dict[str, tuple[float, float]] = {
    "sft": (0.6, 2.0),
    "preference": (0.6, 2.0),
    "rollout": (0.5, 2.5),
}


def _overhead_share(workload: Workload) -> float:
    share = COMPILED_SHARE if workload.savers.compile else 1.0
    if workload.framework is Framework.UNSLOTH:
        share *= UNSLOTH_SHARE
    return share


def micro_step(
    workload: Workload, gpu: GpuSpec, step: StepTime, *, gpus: int, split: bool, rate: float
) -> tuple[float, float]:
    """(scale on the micro-step's busy time, seconds added to it) for fine-tunes and
    post-training; ``(1, 0)`` for pretraining. ``step`` is the micro-step as FLOPs, reads
    and traffic set it, ``split`` whether the layout splits the model (tensor/pipeline
    parallel: Megatron-class stacks, whose fused kernels the eager CPU figure does not
    describe), ``rate`` one GPU's achievable FLOP/s."""
    tokens, busy_s, dequant_s = step.tokens, step.busy_s, step.dequant_s
    if workload.method is Method.PRETRAIN:
        return 1.0, 0.0
    passes = flops_multiplier(workload)  # each model's pass launches its own kernels
    cpu = 0.0 if split else workload.model.layers * PER_LAYER_S * passes
    cpu *= _overhead_share(workload)
    gen = 0
    if SPECS[workload.objective].generates and 0 < workload.generation_gpus < gpus:
        gen = workload.generation_gpus
    scale = gpus / (gpus - gen)  # training runs on the GPUs left
    # the CPU's pace, where it is the slower; NF4 dequantisation adds to either (LitGPT's
    # QLoRA rows: +1.3 min per 1k micro-batch-1 steps for Llama 2 7B, as the GPU's time)
    overhead = max(cpu - (busy_s - dequant_s) * scale, 0.0)
    added = overhead
    if SPECS[workload.objective].generates:
        rollout = decode_seconds(
            workload,
            gpu,
            sequences=tokens / workload.seq_len,
            gen_gpus=gen or gpus,
            dedicated=bool(gen),
            flops_rate=rate,
        )
        train = busy_s * scale + overhead
        added += max(rollout - train, 0.0) if workload.async_rollouts else rollout
    return scale, added


def run_overhead_s(workload: Workload, gpus: int) -> float:
    """Seconds a run spends outside training steps: start, loading every model it holds,
    the generation engine's start, and saving the trained weights (adapters: negligible)."""
    spec = SPECS[workload.objective]
    models = 1 + int(spec.reference) + int(spec.reward) + int(spec.value)
    load = models * workload.model.params * 2.0 / (LOAD_GBS * 1e9)
    start = START_S + (ENGINE_START_S if spec.generates and engine(workload) == "vllm" else 0.0)
    saved = workload.model.params * 2.0 if workload.method.trains_all_weights else 0.0
    return start + load + saved / (SAVE_GBS * 1e9)


def time_range(workload: Workload) -> tuple[float, float]:
    """(low, high) multipliers on the estimated time; ``(1, 1)`` for pretraining, whose
    spread belongs to :mod:`recommender.estimation.steptime`."""
    return objective_range(workload.objective, workload.method)


def objective_range(objective: Objective, method: Method) -> tuple[float, float]:
    """:func:`time_range` from the objective and method alone (the parser states it)."""
    if method is Method.PRETRAIN:
        return 1.0, 1.0
    if SPECS[objective].generates:
        return _RANGES["rollout"]
    if objective is not Objective.SFT:
        return _RANGES["preference"]
    return _RANGES["sft"]
