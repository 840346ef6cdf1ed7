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

from recommender.estimation.model_states import adapted_widths
from recommender.estimation.posttrain import (
    ADAPTER_TRAIN_FLOPS,
    FORWARD_FLOPS,
    SPECS,
    TRAIN_FLOPS,
    extra_flops_per_param,
    flops_multiplier,
)
from recommender.estimation.rollout import decode_seconds, engine
from recommender.gpus import GpuSpec
from recommender.workload import Framework, Method, Objective, Workload

if TYPE_CHECKING:  # steptime calls this module: the type only, to avoid a cycle
    from recommender.estimation.steptime import StepTime

__all__ = [
    "PER_LAYER_S",
    "adapter_bytes_per_token",
    "epochs",
    "eval_tokens",
    "micro_step",
    "objective_range",
    "run_overhead_s",
    "time_range",
]

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
#: Loading weights: vLLM's default safetensors loader read Llama 3 8B (16 GB in bf16) from an
#: AWS gp3 SSD, the block storage a rented node boots from, in 48 s (Run:ai Model Streamer
#: benchmarks, Run:ai whitepaper 2024-10-29, NVIDIA technical blog): 0.33 GB/s
LOAD_GBS = 0.33
#: Process start, NCCL set-up and dataset tokenisation, ~2 minutes (ours: no public figure);
#: a vLLM engine's start (CUDA graph capture, its own load is counted above) as much again
#: (ours)
START_S = 120.0
ENGINE_START_S = 120.0
#: Writing checkpoints: a 7B model's synchronous distributed checkpoint took 148.8 s on
#: average (PyTorch blog "Reducing Model Checkpointing Times by Over 10x with PyTorch
#: Distributed Asynchronous Checkpointing", IBM's runs, 2024); its full state at 12 bytes a
#: parameter (FULL_STATE_BYTES) is 84 GB: 0.56 GB/s
SAVE_GBS = 0.56
#: A resumable checkpoint of a full-weight run: fp32 weights and AdamW's two fp32 moments,
#: 12 bytes a parameter (ours: mixed-precision AdamW, Rajbhandari et al. 2020 count 4 + 8;
#: adapters' states are ~1 % of that and counted as nothing)
FULL_STATE_BYTES = 12.0
#: The trained weights exported at the end, 16-bit (``save_pretrained`` of a bf16 model)
EXPORT_BYTES = 2.0

#: Bytes a token moves through HBM per input and per output element of each adapted matrix,
#: beyond the frozen layer's own GEMM, with the adapter applied beside it in bf16 (torchtune's
#: and LitGPT's LoRALinear, NeMo's adapters): forward, B's output written, scaled and added to
#: the layer's (12 a d_out element); backward, the scale's gradient (4) and B's weight gradient
#: reading its output gradient (2) per d_out element, A's weight gradient reading the input and
#: its input gradient written and accumulated into the layer's (10) per d_in element. Counted
#: from the ops; one H200 measured 0.074 s a step over the estimate without them for Llama 3.1
#: 8B, 8,192 tokens, bf16 adapters, against 0.079 s counted (docs/estimator.md, "Measured on
#: one H200").
PLAIN_ADAPTER_BYTES = (10.0, 18.0)
#: PEFT keeps adapters in fp32 over a bf16 base (``get_peft_model(autocast_adapter_dtype=True)``,
#: its default) and casts each layer's input to their dtype (``LoraLayer._cast_input_dtype``);
#: under HF Trainer's bf16 autocast the matmul casts it back, forward (12 more a d_in element)
#: and backward (12 more): measured 0.153 s a step over the estimate for the case above, under
#: autocast, against 0.143 s counted.
PEFT_ADAPTER_BYTES = (34.0, 18.0)
#: What recomputation adds: the forward again (12 a d_in element more with PEFT's casts);
#: measured 0.212 s and 0.104 s with checkpointing, against 0.21 s and 0.115 s counted.
RECOMPUTE_ADAPTER_BYTES = {True: (12.0, 12.0), False: (0.0, 12.0)}
#: Stacks that apply LoRA through PEFT: HF Trainer/TRL (and no framework named: the answer
#: assumes HF Trainer defaults), Axolotl and llm-foundry build on it (their docs' LoRA
#: sections); Unsloth's Triton LoRA kernels fuse these passes (its README) and pay none, as
#: does a compiled model (TorchInductor fuses chains of pointwise ops into one kernel and into
#: matmul epilogues: Ansel et al., "PyTorch 2", ASPLOS 2024, §4).
_PEFT_STACKS = frozenset({None, Framework.HF, Framework.AXOLOTL, Framework.LLM_FOUNDRY})

#: (low, high) multipliers on an estimated time (ours, from the calibration split of
#: bench/posttrain_calibration.py): published ÷ estimated runs from 0.74 to 1.75 on the eight
#: of its first ten runs this model explains (0.47-1.43 on today's 22, docs/estimator.md);
#: rollouts spread widest (completion lengths are caps, not lengths)
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


def adapter_bytes_per_token(workload: Workload, *, checkpointing: bool) -> float:
    """HBM bytes a token moves through LoRA's adapters beside the frozen layers, per
    micro-step (0 for full-weight training, Unsloth's fused kernels and compiled models)."""
    if workload.method not in (Method.LORA, Method.QLORA):
        return 0.0
    if workload.framework is Framework.UNSLOTH or workload.savers.compile:
        return 0.0
    peft = workload.framework in _PEFT_STACKS
    per_in, per_out = PEFT_ADAPTER_BYTES if peft else PLAIN_ADAPTER_BYTES
    if checkpointing:
        more_in, more_out = RECOMPUTE_ADAPTER_BYTES[peft]
        per_in, per_out = per_in + more_in, per_out + more_out
    d_in, d_out = adapted_widths(workload.model, workload.lora_targets)
    scale = workload.precision.compute_bytes / 2.0  # the figures are for 16-bit elements
    return (per_in * d_in + per_out * d_out) * workload.model.layers * scale


def epochs(workload: Workload) -> int:
    """Passes over the stated dataset (at least one): when checkpoints and evaluations run."""
    if workload.tokens is None or not workload.dataset_tokens:
        return 1
    return max(round(workload.tokens / workload.dataset_tokens), 1)


def run_overhead_s(workload: Workload, gpus: int) -> float:
    """Seconds a run spends outside training steps: start, loading every model it holds, the
    generation engine's start, a resumable checkpoint at each epoch's end (torchtune's
    recipes save one every epoch; HF Trainer's ``save_strategy="epoch"``) and the trained
    weights exported at the end; an adapter's checkpoints and export are ~1 % of that,
    counted as nothing."""
    spec = SPECS[workload.objective]
    params = workload.model.params
    models = 1 + int(spec.reference) + int(spec.reward) + int(spec.value)
    load = models * params * 2.0 / (LOAD_GBS * 1e9)
    start = START_S + (ENGINE_START_S if spec.generates and engine(workload) == "vllm" else 0.0)
    saved = 0.0
    if workload.method.trains_all_weights:
        saved = epochs(workload) * params * FULL_STATE_BYTES + params * EXPORT_BYTES
    return start + load + saved / (SAVE_GBS * 1e9)


def eval_tokens(workload: Workload) -> float:
    """Evaluation as training tokens of the same run: the stated eval set, once an epoch, as
    forward passes of the policy and its reference (2 FLOPs a parameter and token each)
    against a trained token's FLOPs; none unless the description has an eval set."""
    if not workload.eval_tokens:
        return 0.0
    spec = SPECS[workload.objective]
    reference = spec.reference and not workload.precomputed_reference
    forward = FORWARD_FLOPS * (1 + int(reference))
    trained = TRAIN_FLOPS if workload.method.trains_all_weights else ADAPTER_TRAIN_FLOPS
    per_token = trained + extra_flops_per_param(workload)
    return workload.eval_tokens * epochs(workload) * forward / per_token


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
