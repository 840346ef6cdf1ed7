"""Model states per parameter: weights, gradients and optimizer states, and how they shard.

Bytes per trainable parameter depend on the precision regime and the optimizer (ZeRO §3.1
accounting, memory.md §1); sharding divides some of them by the data-parallel degree (ZeRO
§5; FSDP is the same arithmetic). LoRA trains small adapters on a frozen base, QLoRA on a
4-bit NF4 base; the parameter counts of a block and of the adapters come from the
architecture. :mod:`recommender.estimation.memory` adds them up per GPU.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from recommender.models import Architecture
from recommender.workload import Method, Optimizer, Precision, Sharding, Workload

__all__ = [
    "Regime",
    "adapted_widths",
    "block_params",
    "frozen_base_bytes",
    "lora_params",
    "regime",
    "shard_degree",
    "trainable_bytes",
]

# NF4 quantisation, QLoRA (Dettmers et al. 2023, §3): 4-bit codes in blocks of 64 with an
# fp32 absmax each (32/64 = 0.5 bit) → 4.5 bits; double quantisation stores the absmax in
# 8 bits with one fp32 constant per 256 blocks (8/64 + 32/(64·256) ≈ 0.127 bit) → 4.127 bits.
NF4_BYTES = 4.5 / 8
NF4_DOUBLE_QUANT_BYTES = (4 + 8 / 64 + 32 / (64 * 256)) / 8


class Regime(StrEnum):
    """How the trainable weights are held (what decides bytes per parameter)."""

    FP32 = "fp32"  # fp32 weights, gradients and states
    MIXED = "mixed"  # 16-bit weights and gradients, fp32 master copy and states
    PURE_BF16 = "pure-bf16"  # everything 16-bit (torchtune default, LitGPT bf16-true)
    FP8 = "fp8"  # mixed precision's states plus FP8 copies and scales (recommender.estimation.fp8)


def regime(precision: Precision) -> Regime:
    """The memory regime of a precision. FP8 training keeps bf16 mixed precision's states
    per parameter (accelerate estimate.py comment; torchtitan measured 77.0 → 76.8 GiB adding
    Float8); its recipe's FP8 copies, scaling state and activations are counted apart
    (:mod:`recommender.estimation.fp8`), so it is a regime of its own."""
    if precision is Precision.FP32:
        return Regime.FP32
    if precision is Precision.BF16_TRUE:
        return Regime.PURE_BF16
    if precision is Precision.FP8_MIXED:
        return Regime.FP8
    return Regime.MIXED


# Optimizer state bytes per trainable parameter, excluding any master copy (memory.md §1.2).
# fp32 states: AdamW m+v 8 (Adam); bitsandbytes 8-bit m+v 2 (Dettmers et al. 2021); SGD
# momentum 4; Lion one momentum 4 (Chen et al. 2023); Adafactor ≈4 with β1, the factored
# second moment being O(rows+cols) (Shazeer & Stern 2018; HF docs "slightly more than 4
# bytes per parameter"); plain SGD 0.
_STATE_BYTES_FP32: dict[Optimizer, float] = {
    Optimizer.ADAMW: 8.0,
    Optimizer.ADAMW_8BIT: 2.0,
    Optimizer.SGD: 0.0,
    Optimizer.SGD_MOMENTUM: 4.0,
    Optimizer.LION: 4.0,
    Optimizer.ADAFACTOR: 4.0,
}


def _state_bytes(optimizer: Optimizer, reg: Regime) -> float:
    """States are in the weights' dtype under pure bf16 (torchtune docs: bf16 "uses 2 bytes
    per model and optimizer parameter"); 8-bit states stay 8-bit."""
    fp32 = _STATE_BYTES_FP32[optimizer]
    if reg is Regime.PURE_BF16 and optimizer is not Optimizer.ADAMW_8BIT:
        return fp32 / 2
    return fp32


@dataclass(frozen=True, slots=True)
class _ParamBytes:
    """Bytes per trainable parameter. ``optimizer`` includes the fp32 master copy (ZeRO's K)."""

    weights: float
    grads: float
    optimizer: float
    master: float  # part of ``optimizer``: the fp32 copy a mixed-precision step updates


def trainable_bytes(
    optimizer: Optimizer, reg: Regime, *, adapters: bool, fp32_grads: bool = False
) -> _ParamBytes:
    """Bytes per trainable parameter; ``fp32_grads``: the framework keeps an fp32 main
    gradient under mixed precision (Megatron-LM: 18 B/param with AdamW,
    :func:`recommender.estimation.frameworks.fp32_main_grads`)."""
    states = _state_bytes(optimizer, reg)
    if reg is Regime.FP32:
        return _ParamBytes(4.0, 4.0, states, 0.0)
    if reg is Regime.PURE_BF16:
        return _ParamBytes(2.0, 2.0, states, 0.0)
    if adapters:
        # PEFT under AMP keeps adapters in fp32 (autocast casts them on the fly): fp32
        # weights and grads, fp32 states, no separate master copy → 16 B with AdamW.
        return _ParamBytes(4.0, 4.0, states, 0.0)
    # ZeRO §3.1: 2 (fp16/bf16 weights) + 2 (grads) + K, K = 4 (fp32 master) + states.
    return _ParamBytes(2.0, 4.0 if fp32_grads else 2.0, 4.0 + states, 4.0)


# ------------------------------------------------------------------ sharding


def shard_degree(sharding: Sharding, *, gpus: int, gpus_per_node: int) -> int:
    """Ranks a state is split over: the world for ZeRO/FSDP, the node for HSDP, 1 for DDP."""
    if sharding is Sharding.DDP:
        return 1
    if sharding is Sharding.HSDP:
        return max(1, min(gpus, gpus_per_node))
    return max(1, gpus)


# ------------------------------------------------------------------ parameter counts


def _attention_params(m: Architecture) -> int:
    return m.hidden * m.head_dim * (2 * m.heads + 2 * m.kv_heads)


def block_params(m: Architecture) -> int:
    """Parameters of one transformer block with every expert (norms are negligible)."""
    return _attention_params(m) + m.mlp_matrices * m.hidden * m.ffn * m.experts


def lora_params(m: Architecture, rank: int, targets: str) -> int:
    """LoRA adds r·(d_in + d_out) trainable parameters per adapted matrix (Hu et al. 2021, §4).

    ``targets="attention"`` adapts q, k, v and o; ``"all"`` adds every MLP matrix (gate, up and
    down for SwiGLU; both for a GeLU MLP), for each expert of a mixture of experts.
    """
    d_in, d_out = _widths(m, targets, m.experts)
    return rank * (d_in + d_out) * m.layers


def adapted_widths(m: Architecture, targets: str) -> tuple[int, int]:
    """(inputs, outputs) summed over the matrices LoRA adapts in one layer, as one token
    passes them: the experts it is routed to (:func:`lora_params` counts every expert's
    adapters)."""
    return _widths(m, targets, m.experts_per_token)


def _widths(m: Architecture, targets: str, experts: int) -> tuple[int, int]:
    """(Σ d_in, Σ d_out) of one layer's adapted matrices, the MLP's over ``experts``."""
    kv = m.head_dim * m.kv_heads
    q_heads = m.head_dim * m.heads
    d_in, d_out = 3 * m.hidden + q_heads, q_heads + 2 * kv + m.hidden  # q, k, v, o
    if targets == "all":
        ups = m.mlp_matrices - 1  # gate and up (SwiGLU), or up alone (GeLU)
        d_in += (ups * m.hidden + m.ffn) * experts
        d_out += (ups * m.ffn + m.hidden) * experts
    return d_in, d_out


# ------------------------------------------------------------------ frozen base (LoRA, QLoRA)


def frozen_base_bytes(workload: Workload) -> tuple[float, float]:
    """(bytes of the frozen base, bytes per block parameter) for LoRA and QLoRA.

    LoRA keeps the base in the compute dtype (bf16; fp32 in fp32 training). QLoRA stores the
    linear layers of every block in NF4 and leaves embeddings and the LM head in bf16
    (Dettmers et al. 2023; torchtune measured 7.4 GiB for the Llama 3.1 8B QLoRA because ~1B
    embedding/head parameters stay 16-bit).
    """
    m = workload.model
    dense = workload.precision.compute_bytes
    if workload.method is Method.LORA:
        return m.params * dense, dense
    nf4 = NF4_DOUBLE_QUANT_BYTES if workload.nf4_double_quant else NF4_BYTES
    linear = m.layers * block_params(m)
    rest = max(0, m.params - linear)  # embeddings, LM head, norms: kept 16-bit
    return linear * nf4 + rest * 2.0, nf4
