"""Rollout generation time for on-policy post-training (GRPO/RLVR, PPO), issue #32.

Decoding is bound by memory bandwidth, not FLOPs: each decode step reads every weight once
for the whole batch of sequences being generated, plus each sequence's KV cache, and does
2·N FLOPs per sequence. A step's time is the larger of those reads (at the HBM rate) and
that compute (at the achievable share of the peak), plus a per-step cost of the
engine (scheduling, sampling, kernel launches). The batch is as many sequences as the
engine's KV-cache memory and its sequence limit allow:

* **vLLM** (TRL ``use_vllm``, OpenRLHF, verl): paged KV cache in the memory share the
  framework gives it, up to ``max_num_seqs`` sequences, CUDA graphs.
* **HF ``generate``** (TRL without vLLM, DeepSpeed-Chat's hybrid engine counts here too):
  one padded batch of the micro-batch's sequences and an eager step cost.

The engine splits the model over the fewest GPUs whose memory holds the weights with room
for the cache (tensor parallelism); each such group is one replica generating its share.
"""

from __future__ import annotations

from recommender.gpus import GpuSpec
from recommender.workload import Objective, Workload

__all__ = [
    "DEFAULT_PROMPT_TOKENS",
    "completion_tokens",
    "decode_seconds",
    "decode_step_seconds",
    "engine",
    "engine_batch",
    "prompt_tokens",
]

#: Prompt tokens per rollout when only the completion length is stated: RL prompt sets are
#: short questions (GSM8K/MATH prompts with a chat template are ~100-300 tokens; OpenRLHF
#: and verl examples cap prompts at 512-1024) (ours: 256)
DEFAULT_PROMPT_TOKENS = 256
#: vLLM schedules at most this many sequences per step (EngineArgs.max_num_seqs default 256,
#: vllm/engine/arg_utils.py)
VLLM_MAX_SEQS = 256
#: Share of a dedicated generation GPU's memory vLLM takes (gpu_memory_utilization default
#: 0.9, vllm/engine/arg_utils.py); sharing the GPU with training, TRL's colocate mode gives it
#: 0.3 (GRPOConfig.vllm_gpu_memory_utilization) and verl 0.5 (rollout.gpu_memory_utilization
#: in ppo_trainer.yaml) (ours: 0.4 between them)
DEDICATED_MEMORY_SHARE = 0.9
COLOCATED_MEMORY_SHARE = 0.4
#: Per-step cost of an engine beyond its reads and FLOPs, each the measured step less its
#: weight reads at DECODE_HBM_SHARE of the card's bandwidth (recommender.gpus):
#: vLLM: "Llama3 8B can generate 1 token every 13 ms under light load" on one H100 (vLLM
#: v0.6.0 performance blog, 2024-09-05); its 16.1 GB of weights read in 6.9 ms at 70 % of
#: 3.35 TB/s, which leaves 6 ms of scheduling, sampling and output processing per step
VLLM_STEP_S = 0.006
#: HF ``generate``, eager: 40 ms a decode step beyond the weight and cache reads, measured on
#: one H200 (bench/device_steps.py, transformers 5.17, torch 2.11: 33-57 ms in 9 runs of
#: 0.5B-8B models at batch 1-256, median 43 ms; it does not grow with the layers, so it is
#: the loop's own Python, masks and logits processing, not per-kernel launches). The
#: transformers docs' GPT-NeoX page measured 6.57 ms a token for pythia-410m on an older stack
#: (model_doc/gpt_neox.md), a floor this stack no longer reaches (ours: 40 ms, rounded down)
HF_STEP_S = 0.040
#: DeepSpeed-Chat's Hybrid Engine generates with DeepSpeed-Inference's fused transformer
#: kernels (blogs/deepspeed-chat/README.md, "DeepSpeed Hybrid Engine"), not HF's Python loop:
#: per layer and step, the eager launch cost the transformers docs' GPT-NeoX page implies
#: (6.57 ms a token for pythia-410m less its 1.3 ms of weight reads, over 24 layers), an
#: upper bound for fused kernels (ours: that figure; the DS-Chat rows hold it)
DS_HYBRID_LAYER_STEP_S = 0.00022
#: HF ``generate`` batches at least this many prompts per device: DeepSpeed-Chat's
#: --per_device_generation_batch_size default 16 (training/step3_rlhf_finetuning/main.py);
#: TRL generates each optimizer step's completions together (ours: the same floor)
HF_MIN_BATCH = 16
#: Decode reaches ~70 % of HBM bandwidth in vLLM's paged-attention kernels (ours; below the
#: 80 % streaming figure of recommender.estimation.steptime, as paged reads are scattered)
DECODE_HBM_SHARE = 0.7
#: Frameworks that generate with vLLM unless told otherwise (their READMEs and recipes).
_VLLM_FRAMEWORKS = frozenset({"openrlhf", "verl", "open-r1"})


def engine(workload: Workload) -> str:
    """``"vllm"`` or ``"hf"``: as stated, else the framework's usual engine; vLLM when GPUs
    are set aside for generation (only a server takes them), HF ``generate`` otherwise."""
    if workload.engine is not None:
        return workload.engine
    if workload.generation_gpus or (workload.rl_framework in _VLLM_FRAMEWORKS):
        return "vllm"
    return "hf"


def _step_overhead_s(workload: Workload) -> float:
    """An engine's cost per decode step beyond its reads and FLOPs."""
    if engine(workload) == "vllm":
        return VLLM_STEP_S
    if workload.rl_framework == "deepspeed-chat":
        return DS_HYBRID_LAYER_STEP_S * workload.model.layers
    return HF_STEP_S


def completion_tokens(workload: Workload) -> int:
    """Tokens generated per rollout: as stated, else half the sequence."""
    if workload.completion_len is not None:
        return min(workload.completion_len, workload.seq_len)
    return max(workload.seq_len // 2, 1)


def prompt_tokens(workload: Workload) -> int:
    """The rest of the trained sequence is the prompt."""
    return max(workload.seq_len - completion_tokens(workload), 0)


def _kv_bytes_per_token(workload: Workload) -> float:
    m = workload.model
    return 2.0 * m.layers * m.kv_heads * m.head_dim * 2.0  # keys and values, 16-bit


def _tp(workload: Workload, gpu: GpuSpec, share: float, limit: int) -> int:
    """The fewest GPUs (a power of two, at most ``limit``) that hold the 16-bit weights in
    half the engine's memory share, leaving the other half for the KV cache."""
    weights = workload.model.params * 2.0
    tp = 1
    while tp < limit and weights / tp > gpu.memory_gb * 1e9 * share / 2:
        tp *= 2
    return tp


def engine_batch(workload: Workload, gpu: GpuSpec, *, gen_gpus: int, dedicated: bool) -> int:
    """Sequences one engine replica decodes at once."""
    share = DEDICATED_MEMORY_SHARE if dedicated else COLOCATED_MEMORY_SHARE
    tp = _tp(workload, gpu, share, max(gen_gpus, 1))
    free = gpu.memory_gb * 1e9 * share * tp - workload.model.params * 2.0
    per_seq = _kv_bytes_per_token(workload) * workload.seq_len
    by_memory = int(max(free, 0.0) // per_seq)
    if engine(workload) == "vllm":
        return max(1, min(VLLM_MAX_SEQS, by_memory))
    group = workload.group_size if workload.objective is Objective.GRPO else 1
    return max(1, min(max(workload.micro_batch * group, HF_MIN_BATCH), by_memory))


def decode_seconds(
    workload: Workload,
    gpu: GpuSpec,
    *,
    sequences: float,
    gen_gpus: int,
    dedicated: bool,
    flops_rate: float,
) -> float:
    """Seconds for ``gen_gpus`` GPUs to prefill and generate ``sequences`` rollouts of the
    workload's completion length. ``flops_rate`` is one GPU's achievable FLOP/s."""
    m = workload.model
    share = DEDICATED_MEMORY_SHARE if dedicated else COLOCATED_MEMORY_SHARE
    tp = _tp(workload, gpu, share, max(gen_gpus, 1))
    replicas = max(gen_gpus // tp, 1)
    batch = engine_batch(workload, gpu, gen_gpus=gen_gpus, dedicated=dedicated)
    c, p = completion_tokens(workload), prompt_tokens(workload)
    step = decode_step_seconds(workload, gpu, batch=batch, tp=tp, flops_rate=flops_rate)
    rounds = sequences / (batch * replicas)  # batches each replica decodes in turn
    prefill = 2.0 * m.active_params * p * sequences / (flops_rate * tp * replicas)
    return rounds * c * step + prefill


def decode_step_seconds(
    workload: Workload, gpu: GpuSpec, *, batch: int, tp: int, flops_rate: float
) -> float:
    """One decode step of ``batch`` sequences on a replica of ``tp`` GPUs: the weights and
    the KV cache (half the completion in, on average) read at the decode share of HBM, or
    the step's FLOPs, whichever is slower, plus the engine's own cost."""
    m = workload.model
    c, p = completion_tokens(workload), prompt_tokens(workload)
    hbm = gpu.mem_bandwidth_tbps * 1e12 * DECODE_HBM_SHARE * tp
    reads = (m.params * 2.0 + batch * (p + c / 2) * _kv_bytes_per_token(workload)) / hbm
    compute = 2.0 * m.active_params * batch / (flops_rate * tp)
    return max(reads, compute) + _step_overhead_s(workload)
