"""FP8 training memory per recipe: what FP8 adds to bf16 mixed precision, and what it saves.

FP8 runs its matmuls in 8 bits but keeps every state of bf16 mixed precision: the fp32
master weights and optimizer states, the 16-bit (bf16) weights and gradients
(:mod:`recommender.estimation.model_states`, regime "mixed"). What differs is per recipe:

* **torchao float8** (torchtitan's ``Float8`` converter, tensorwise dynamic scaling): each
  linear casts its bf16 weight to FP8 (and its transpose for backward) when it runs, so one
  layer's FP8 copies exist at a time; the scales are computed on the fly (a few scalars per
  linear, no history), and autograd keeps the bf16 inputs (torchao
  ``matmul_with_hp_or_float8_args`` saves the high-precision tensors). torchtitan measured
  Llama 3.1 8B on 8 H100 at 77.0 GiB in bf16 and 76.8 GiB with Float8
  (benchmarks/llama3_h100_202412_torchtitan.md, Table 1): no saving, no cost.
* **Transformer Engine** (Megatron-LM / NeMo, Composer's ``amp_fp8`` in llm-foundry):
  ``DelayedScaling`` keeps an amax history of ``amax_history_len = 1024`` steps plus a scale
  and its inverse for each FP8 tensor — three per GEMM in forward (input, weight, output)
  and two in backward (output and input gradients); the FP8 weights and their transposes are
  cached across the micro-batches of a step (``is_first_microbatch``), 2 B per weight;
  and each linear saves its input for backward as the FP8 copy it already made (1 B per
  element instead of 2): the inputs of QKV, the attention projection, FC1 and FC2.
"""

from __future__ import annotations

from enum import StrEnum

from recommender.models import Architecture
from recommender.workload import Framework

__all__ = [
    "Fp8Recipe",
    "activation_saving_per_token",
    "recipe",
    "scaling_state_bytes",
    "weight_cache_bytes_per_param",
    "weight_cast_bytes",
]

# Transformer Engine DelayedScaling default (transformer_engine/common/recipe: amax_history_len
# = 1024); fp32 history, scale and scale_inv per FP8 tensor.
AMAX_HISTORY_LEN = 1024
# FP8 tensors per GEMM in TE's fp8 meta: forward input, weight, output; backward grad-output,
# grad-input.
FP8_TENSORS_PER_GEMM = 5
# GEMM weights per transformer layer in TE's TransformerLayer: QKV, projection, FC1, FC2.
GEMMS_PER_LAYER = 4
# FP8 copy and its transpose, one byte each (TE caches both; torchao casts both per use).
FP8_COPY_BYTES = 2.0


class Fp8Recipe(StrEnum):
    TORCHAO = "torchao float8 (torchtitan)"
    TE = "Transformer Engine DelayedScaling"


#: Frameworks whose FP8 runs on Transformer Engine.
_TE_FRAMEWORKS = frozenset({Framework.MEGATRON, Framework.LLM_FOUNDRY})


def recipe(framework: Framework | None) -> Fp8Recipe:
    """The FP8 recipe a framework runs: Transformer Engine under Megatron-LM/NeMo and
    llm-foundry, torchao float8 (torchtitan's) otherwise."""
    return Fp8Recipe.TE if framework in _TE_FRAMEWORKS else Fp8Recipe.TORCHAO


def weight_cache_bytes_per_param(r: Fp8Recipe) -> float:
    """Persistent bytes per block (linear) parameter: TE's cached FP8 weight and transpose."""
    return FP8_COPY_BYTES if r is Fp8Recipe.TE else 0.0


def weight_cast_bytes(r: Fp8Recipe, block_params: int) -> float:
    """Transient bytes: torchao casts one layer's weights to FP8 (and transposes) as it runs."""
    return FP8_COPY_BYTES * block_params if r is Fp8Recipe.TORCHAO else 0.0


def scaling_state_bytes(r: Fp8Recipe, m: Architecture) -> float:
    """TE's amax history, scale and scale_inv (fp32) for every FP8 tensor of every GEMM;
    torchao's dynamic scales are scalars computed per use (none kept)."""
    if r is not Fp8Recipe.TE:
        return 0.0
    tensors = m.layers * GEMMS_PER_LAYER * FP8_TENSORS_PER_GEMM
    return tensors * (AMAX_HISTORY_LEN + 2) * 4.0


def activation_saving_per_token(r: Fp8Recipe, m: Architecture, b: float) -> float:
    """Bytes per token and layer that TE saves by keeping linear inputs in FP8: the inputs of
    QKV, the attention projection and FC1 (h each) and of FC2 (f per routed expert), at 1 B
    instead of ``b``."""
    if r is not Fp8Recipe.TE:
        return 0.0
    routed = m.experts_per_token if m.experts > 1 else 1
    return (b - 1.0) * (3 * m.hidden + m.ffn * routed)
