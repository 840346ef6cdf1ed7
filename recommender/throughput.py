"""Training time from a token budget: FLOPs ÷ (GPUs × dense peak × utilisation).

FLOPs per token are 6·N for full training (forward 2N, backward 4N; Kaplan et al. 2020,
Transformer Math 101), 4·N for LoRA/QLoRA (the frozen weights need no weight gradient), plus
2·N when full activation checkpointing re-runs the forward, plus the attention score FLOPs
12·L·h·s (PaLM, Chowdhery et al. 2022, App. B). N is the parameters a token passes through:
the active experts of a mixture of experts, without the input embedding (a lookup, not a
matmul). The utilisation defaults are by topology, each sourced below.
"""

from __future__ import annotations

from recommender.gpus import GpuSpec, IntraNode, get_gpu
from recommender.models import Architecture
from recommender.topology import Plan
from recommender.workload import Method, Offload, Precision, Workload

__all__ = [
    "flops_per_token",
    "mfu",
    "peak_tflops",
    "tokens_per_hour",
    "train_hours",
]

# ------------------------------------------------------------------ utilisation defaults

# One GPU, no communication: a well-tuned dense run reaches 40-50 % (llm-foundry MPT-7B on
# A100 50.9 % per GPU; LLaMA-1 7B implied 43 %, memory.md §9); 0.40 leaves room for the
# smaller batches of a single card.
SINGLE_GPU_MFU = 0.40
# One node over NVLink/NVSwitch with FSDP: llm-foundry 7B on 8×A100 50.9 %, 8×H100 46.4 %;
# torchtitan Llama 3.1 8B on H100 33-39 % → 0.40.
NVLINK_NODE_MFU = 0.40
# NVLink bridges join pairs only, the rest crosses PCIe (ours: between NVLink and PCIe).
BRIDGE_NODE_MFU = 0.30
# PCIe-only cards (L4, L40S, RTX) all-gather and reduce-scatter over ~25 GB/s instead of
# 300-900 GB/s (ours; DESIGN.md: allowed with a throughput penalty).
PCIE_NODE_MFU = 0.25
# Many nodes on InfiniBand/EFA/RoCE, implied by published GPU-hours (6ΨD, memory.md §9):
# LLaMA-1 43-51 %, Llama 2 39-43 %, MPT-7B 36 %, Llama 3.1 405B 38-43 % (paper), llm-foundry
# 70B on 64 A100s 53 %; the median is ~43 % → 0.40.
MULTI_NODE_FAST_MFU = 0.40
# Many nodes on plain TCP Ethernet: sharded training is communication-bound (ours).
MULTI_NODE_SLOW_MFU = 0.10

# Fine-tunes run shorter sequences and smaller batches than pretraining: memory.md §9
# recommends 0.30-0.35 for single-node full fine-tunes (0.85 × 0.40 = 0.34) and 0.15-0.30
# for LoRA/QLoRA, whose small adapter GEMMs and (QLoRA) NF4 dequantisation cost time.
METHOD_FACTOR = {
    Method.PRETRAIN: 1.0,
    Method.FULL: 0.85,
    Method.LORA: 0.65,  # → 0.26 on one GPU
    Method.QLORA: 0.5,  # → 0.20 on one GPU; QLoRA trains slower than LoRA (Dettmers et al.)
}
# CPU offload runs the optimizer step on the CPU and moves states over PCIe every step:
# ZeRO-Offload reaches ~30-40 TFLOP/s on a V100 for 10B models (Ren et al. 2021, Fig. 7),
# well under half of GPU-only training; parameter offload also streams every weight twice
# per step (ours).
OFFLOAD_FACTOR = {Offload.NONE: 1.0, Offload.OPTIMIZER: 0.5, Offload.PARAMS: 0.25}


# ------------------------------------------------------------------ FLOPs


def _matmul_params(m: Architecture) -> int:
    """Active parameters that do matmuls: the input embedding is a lookup unless it is tied
    to the LM head (then the one matrix does the head's matmul)."""
    active = m.active_params
    if m.tied_embeddings:
        return active
    return active - m.vocab * m.hidden


def flops_per_token(workload: Workload, *, checkpointing: bool) -> float:
    """Executed FLOPs per trained token (with recomputation, that is hardware FLOPs)."""
    m = workload.model
    n = _matmul_params(m)
    weights = 4.0 if workload.method in (Method.LORA, Method.QLORA) else 6.0
    if checkpointing:
        weights += 2.0
    attention = 12.0 * m.layers * m.hidden * workload.seq_len
    if checkpointing:
        attention *= 4 / 3
    return weights * n + attention


def peak_tflops(gpu: GpuSpec, precision: Precision) -> float:
    """Dense peak TFLOP/s for the precision; FP8 only where supported; bf16 falls back to the
    fp16 rate on V100/T4/P100 (they have no bf16; memory.md §11)."""
    half = gpu.bf16_tflops if gpu.supports_bf16 and gpu.bf16_tflops else gpu.fp16_tflops
    if precision is Precision.FP8_MIXED and gpu.supports_fp8 and gpu.fp8_tflops:
        rate: float | None = gpu.fp8_tflops
    elif precision is Precision.FP16_MIXED:
        rate = gpu.fp16_tflops or half
    elif precision is Precision.FP32:
        # PyTorch keeps TF32 matmuls off by default (torch.backends.cuda.matmul.allow_tf32 =
        # False since 1.12), so fp32 training runs at the fp32 rate.
        rate = gpu.fp32_tflops or gpu.tf32_tflops
    else:
        rate = half
    if not rate:
        rate = half or gpu.fp32_tflops or 1.0
    return float(rate)


def mfu(workload: Workload, plan: Plan, *, link: IntraNode, fast_fabric: bool) -> float:
    """Expected utilisation of the dense peak for this topology, method and offload."""
    if plan.nodes > 1:
        base = MULTI_NODE_FAST_MFU if fast_fabric else MULTI_NODE_SLOW_MFU
    elif plan.gpus == 1:
        base = SINGLE_GPU_MFU
    elif link is IntraNode.NVLINK:
        base = NVLINK_NODE_MFU
    elif link is IntraNode.BRIDGE:
        base = BRIDGE_NODE_MFU
    else:
        base = PCIE_NODE_MFU
    return base * METHOD_FACTOR[workload.method] * OFFLOAD_FACTOR[plan.strategy.offload]


def tokens_per_hour(workload: Workload, plan: Plan, *, link: IntraNode, fast_fabric: bool) -> float:
    """Training tokens the whole layout processes per hour."""
    gpu = get_gpu(plan.gpu_id)
    flops_per_s = (
        plan.gpus
        * peak_tflops(gpu, workload.precision)
        * 1e12
        * mfu(workload, plan, link=link, fast_fabric=fast_fabric)
    )
    return flops_per_s * 3600 / flops_per_token(workload, checkpointing=plan.strategy.checkpointing)


def train_hours(
    workload: Workload, plan: Plan, *, link: IntraNode, fast_fabric: bool
) -> float | None:
    """Hours to train on the workload's token budget; ``None`` without a budget."""
    if workload.tokens is None:
        return None
    return workload.tokens / tokens_per_hour(workload, plan, link=link, fast_fabric=fast_fabric)
