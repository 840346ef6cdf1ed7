"""Achievable compute: the share of a GPU's dense peak that training matmuls reach.

By accelerator generation (inferred from the spec's id) and GEMM width: large matmuls reach
an asymptotic share of the dense bf16 peak, narrower models less (memory-bound element-wise
work and kernel overheads grow relative to the GEMMs as h shrinks); FP8 linears add an end-to-end
speed-up measured by published runs, not the spec sheet's 2×; flash attention runs at about
half the GEMM rate, and attention without a fused kernel adds its scores' trips through HBM.
The shares are HFU-style (executed FLOPs, recompute included), fitted on the pretraining rows
of ``tests/recommender/data/time_calibration.csv`` (calibration set).
"""

from __future__ import annotations

from enum import StrEnum

from recommender.gpus import GpuSpec
from recommender.workload import Precision

__all__ = [
    "ATTENTION_RELATIVE_RATE",
    "FP8_GENERATIONS",
    "Generation",
    "compute_efficiency",
    "dense_tflops",
    "fp8_speedup",
    "generation",
    "unfused_score_bytes",
]


class Generation(StrEnum):
    """Accelerator family, inferred from the spec's id (it sets the achievable peak)."""

    BLACKWELL = "blackwell"
    HOPPER = "hopper"
    AMPERE = "ampere"  # data-centre A100/A800
    AMPERE_PRO = "ampere-pro"  # A10/A10G/A40/RTX A6000/RTX 3090
    ADA = "ada"
    VOLTA = "volta"
    TURING = "turing"
    PASCAL = "pascal"
    CDNA = "cdna"  # AMD Instinct
    GAUDI = "gaudi"


_GEN_PREFIXES: tuple[tuple[str, Generation], ...] = (
    ("GB2", Generation.BLACKWELL),
    ("B2", Generation.BLACKWELL),
    ("B3", Generation.BLACKWELL),
    ("H", Generation.HOPPER),
    ("GH", Generation.HOPPER),
    ("A100", Generation.AMPERE),
    ("A800", Generation.AMPERE),
    ("L4", Generation.ADA),
    ("RTX-4", Generation.ADA),
    ("RTX-6000-ADA", Generation.ADA),
    ("A", Generation.AMPERE_PRO),
    ("RTX", Generation.AMPERE_PRO),
    ("V100", Generation.VOLTA),
    ("T4", Generation.TURING),
    ("P", Generation.PASCAL),
    ("MI", Generation.CDNA),
    ("GAUDI", Generation.GAUDI),
)


def generation(gpu: GpuSpec) -> Generation:
    """The family of ``gpu`` from its canonical id (unknown parts count as Ampere-class)."""
    gid = gpu.id.upper()
    for prefix, gen in _GEN_PREFIXES:
        if gid.startswith(prefix):
            return gen
    return Generation.AMPERE_PRO


# ------------------------------------------------------------------ compute

# Asymptotic share of the dense bf16 peak that large matmuls reach in training (hardware
# FLOPs incl. recompute, causal flash attention), fitted on measured tokens/s:
_PEAK_SHARE = {
    # llm-foundry A100 HFU 0.65-0.75 for MPT-7B..70B (benchmarking README) → fit 0.80·h/(h+h0)
    Generation.AMPERE: 0.80,
    # llm-foundry H100 bf16 HFU 0.46-0.58 (7B-70B), torchtitan 8B, NeMo/Llama 3 → fit
    Generation.HOPPER: 0.57,
    # no public training table yet; taken at about Hopper's share (ours, a judgement call)
    Generation.BLACKWELL: 0.58,
    # torchtune RTX 4090 LoRA 8B ~0.5 of the 165 TFLOP/s dense rate (README) (ours: 0.55)
    Generation.ADA: 0.55,
    # workstation/inference Ampere: less HBM bandwidth per FLOP than A100 (ours)
    Generation.AMPERE_PRO: 0.60,
    # Megatron-LM 8.3B on 512 V100: 39 % of peak end to end (Shoeybi et al. 2019 §5.1)
    Generation.VOLTA: 0.50,
    Generation.TURING: 0.35,  # T4: 70 W power cap throttles the tensor cores (ours)
    Generation.PASCAL: 0.45,  # P100 fp16 SIMT, no tensor cores (ours)
    # MI300X training reports sit well below Hopper's share of peak (ours, conservative)
    Generation.CDNA: 0.42,
    Generation.GAUDI: 0.50,  # ours
}
# Matmul efficiency grows with the hidden size h as h/(h + H0): llm-foundry HFU on A100 is
# ~0.42 at h=768, ~0.56 at h=2048, ~0.70 at h≥4096 (benchmarking README, fitted)
HIDDEN_KNEE = 640
# FP8 linears gain more the wider the GEMMs, as the casts and scales cost per element while
# the GEMM grows with h: 1 + G·h/(h + K) through three published end-to-end gains, torchtitan
# Llama 3.1 8B (h=4096) on 8×H100 6667 → 8532 tok/s/GPU, ×1.28
# (benchmarks/llama3_h100_202412_torchtitan.md); Llama 3 70B (h=8192) on 128 H100 ×1.50, 80 %
# of it from compute, ×1.40 (PyTorch dev-discuss "Enabling float8 all-gather in FSDP2", 2024);
# 405B (h=16384) on 512 GPUs "up to 1.5x" (pytorch/ao torchao/float8 README). GPT-2 124M
# (h=768) gains ~7 % (karpathy/llm.c fp8 note), which the fit gives (×1.08).
FP8_GAIN = 0.68
FP8_KNEE = 5800
# Flash attention runs at about half the rate of the weight GEMMs: FlashAttention-2 reaches
# 50-73 % of A100 peak forward and less backward (Dao 2023, §4.1) against ~80 % for GEMMs;
# fitted on llm-foundry rows at seq 8192 vs 2048
ATTENTION_RELATIVE_RATE = 0.5
FP8_GENERATIONS = frozenset({Generation.HOPPER, Generation.ADA, Generation.BLACKWELL})
# Attention without a fused (flash) kernel — Megatron-LM before 2022, GPT-NeoX's "global"
# attention, HF ``attn_implementation="eager"`` — runs QK^T and PV as batched GEMMs over the
# whole s×s square (PaLM's 12·L·h·s, App. B: at the GEMM rate it costs what flash's causal half
# costs at ``ATTENTION_RELATIVE_RATE``) and moves every score through HBM between kernels.
# 16-bit bytes per score and layer, counted on Megatron-LM's path (fused scale-mask-softmax,
# Korthikanti et al. 2022 §4.1 for the tensors kept): forward, QK^T writes the scores, the
# softmax reads them and writes P, PV reads P (8); backward, dP is written, the softmax
# backward reads P and dP and writes dS, the dQ and dK GEMMs read dS, the dV GEMM reads P (14).
# Attention dropout (GPT-style blocks; Megatron-LM's default 0.1) reads and writes the scores
# and writes or reads a 1-byte mask, in each pass (5).
SCORE_BYTES_FORWARD = 8.0
SCORE_BYTES_BACKWARD = 14.0
SCORE_BYTES_DROPOUT = 5.0


def unfused_score_bytes(*, checkpointing: bool, dropout: bool) -> float:
    """HBM bytes per attention score and layer of one training step without a fused kernel
    (recomputation runs the forward twice)."""
    forward = SCORE_BYTES_FORWARD + (SCORE_BYTES_DROPOUT if dropout else 0.0)
    backward = SCORE_BYTES_BACKWARD + (SCORE_BYTES_DROPOUT if dropout else 0.0)
    return forward * (2 if checkpointing else 1) + backward


def fp8_speedup(hidden: int) -> float:
    """End-to-end speed-up of FP8 linears over bf16, on FP8 tensor cores, at width ``hidden``."""
    return 1.0 + FP8_GAIN * hidden / (hidden + FP8_KNEE)


def compute_efficiency(gpu: GpuSpec, hidden: int) -> float:
    """Achievable share of the dense (bf16/fp16/fp32) peak for matmuls of width ``hidden``."""
    return _PEAK_SHARE[generation(gpu)] * hidden / (hidden + HIDDEN_KNEE)


def dense_tflops(gpu: GpuSpec, precision: Precision) -> float:
    """The dense 16- or 32-bit peak TFLOP/s the precision's matmuls run at (FP8 is a speed-up
    on top, or its own peak: :func:`recommender.estimation.throughput.peak_tflops`). bf16 falls back
    to the fp16 rate on V100/T4/P100, which have no bf16 (memory.md §11); fp32 runs at the fp32 rate
    because PyTorch keeps TF32 matmuls off by default (allow_tf32 = False since 1.12)."""
    half = gpu.bf16_tflops if gpu.supports_bf16 and gpu.bf16_tflops else gpu.fp16_tflops
    if precision is Precision.FP32:
        rate = gpu.fp32_tflops or gpu.tf32_tflops
    elif precision is Precision.FP16_MIXED:
        rate = gpu.fp16_tflops or half
    else:
        rate = half
    return float(rate or half or gpu.fp32_tflops or 1.0)
