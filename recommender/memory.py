"""Training memory per GPU: model states, activations and overhead under a strategy.

The model, in one paragraph: every parameter costs bytes for its weights, its gradient and
its optimizer states, which depend on the precision regime and the optimizer (ZeRO §3.1
accounting, memory.md §1). Sharding divides some of those by the data-parallel degree (ZeRO
§5; FSDP is the same arithmetic) and full sharding adds the gathered, unsharded units that
are alive during forward and backward. CPU offload moves states off the GPU. LoRA trains
small adapters on a frozen base (QLoRA: a 4-bit NF4 base). Activations are counted tensor
by tensor from the architecture (Korthikanti et al. 2022 §4) for one micro-batch, with or
without full recomputation, plus the fp32 logits of the loss. Overhead is the CUDA context,
library workspaces, communication buffers and a fragmentation margin. Everything is in GiB
per GPU; compare :attr:`MemoryBreakdown.total_gib` with :func:`usable_gib`.

``docs/estimator.md`` explains every assumption and shows the calibration against published
measurements.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from recommender.gpus import GpuSpec
from recommender.models import Architecture, Block
from recommender.workload import Method, Offload, Optimizer, Precision, Sharding, Workload

__all__ = [
    "FULL_SHARDING",
    "Kernels",
    "MemoryBreakdown",
    "MemoryModel",
    "Regime",
    "Strategy",
    "estimate_memory",
    "lora_params",
    "regime",
    "shard_degree",
    "usable_gib",
]

GIB = 2**30

# ------------------------------------------------------------------ constants (each sourced)

# Usable capacity. Vendors label binary-sized DRAM in "GB": an "80GB" A100 is 81920 MiB in
# nvidia-smi, and PyTorch reports "total capacity of 79.15 GiB" (Lightning-AI/litgpt
# tutorials/oom.md); the driver keeps the rest. So the label is read as GiB and scaled by
# the fraction PyTorch can see.
VISIBLE_FRACTION = 79.15 / 80
# GDDR data-centre cards ship with ECC on, which reserves 1/16 of the memory: a 16 GB T4
# shows 15360 MiB and a 24 GB L4 23034 MiB in nvidia-smi (NVIDIA T4/L4 product briefs:
# "ECC on by default"). HBM has side-band ECC and loses nothing.
ECC_RESERVED_FRACTION = 1 / 16
ECC_GDDR_GPUS = frozenset({"T4", "L4", "A10", "A10G", "A40", "L40", "L40S"})

# CUDA context with lazy module loading (CUDA ≥ 11.7, PyTorch ≥ 1.13): 287 MB measured in
# pytorch/pytorch PR #86509, "~300MB" in #107667, ~400 MB in #109888, 426 MiB in
# unslothai/unsloth-zoo PR #1053. 0.5 GiB covers the spread.
CUDA_CONTEXT_GIB = 0.5
# cuBLAS/cuDNN workspaces and allocator slack outside the tensors we count (ours: no single
# published constant; memory.md §7 recommends 0.5 GiB).
WORKSPACE_GIB = 0.5
# NCCL buffers, DDP/ZeRO gradient buckets and FSDP all-gather staging when world size > 1
# (ours, memory.md §7; DeepSpeed's default reduce/allgather buckets alone are 5e8 elements).
COMMS_BUFFER_GIB = 1.0
# The caching allocator fragments: reserved exceeds allocated. A 10 % margin on activations,
# the tensors that are allocated and freed every step (ours, memory.md §7).
FRAGMENTATION_FRACTION = 0.10
# DeepSpeed's estimator multiplies every CPU figure by additional_buffer_factor = 1.5
# (deepspeed/runtime/zero/stage_1_and_2.py and stage3.py, commit 38327e0).
HOST_BUFFER_FACTOR = 1.5

# NF4 quantisation, QLoRA (Dettmers et al. 2023, §3): 4-bit codes in blocks of 64 with an
# fp32 absmax each (32/64 = 0.5 bit) → 4.5 bits; double quantisation stores the absmax in
# 8 bits with one fp32 constant per 256 blocks (8/64 + 32/(64·256) ≈ 0.127 bit) → 4.127 bits.
NF4_BYTES = 4.5 / 8
NF4_DOUBLE_QUANT_BYTES = (4 + 8 / 64 + 32 / (64 * 256)) / 8

# Bytes per element of the logits term, per token and vocabulary entry: the 16-bit logits
# from the LM head, the fp32 upcast the loss needs and the fp32 softmax gradient (Korthikanti
# §4.3: "4·s·b·v" for fp32 logits plus a gradient of the same size). torchtune measured
# 51.0 → 42.9 GiB (8.1 GiB) removing the fp32 copies with chunked cross-entropy on Llama 3.2
# 3B at 2 × 4096 tokens: 8.3 bytes per logit, matching the two fp32 terms.
LOGITS_FP32_BYTES = 4 + 4
# torchtune's CEWithChunkedOutputLoss upcasts one of 8 chunks at a time (torchtune
# modules/loss/ce_chunked_output_loss.py, num_output_chunks = 8).
CHUNKED_LOSS_CHUNKS = 8

# Korthikanti et al. 2022 §4.1: without a fused kernel the attention keeps the softmax
# output (2), its dropout mask (1) and the dropout output (2) bytes per score: 5·a·s² per
# sequence and layer at 16-bit.
ATTENTION_SCORE_BYTES = 5


class Regime(StrEnum):
    """How the trainable weights are held (what decides bytes per parameter)."""

    FP32 = "fp32"  # fp32 weights, gradients and states
    MIXED = "mixed"  # 16-bit weights and gradients, fp32 master copy and states
    PURE_BF16 = "pure-bf16"  # everything 16-bit (torchtune default, LitGPT bf16-true)


def regime(precision: Precision) -> Regime:
    """The memory regime of a precision. FP8 training keeps bf16/fp32 states: no saving
    (accelerate estimate.py comment; torchtitan measured 77.0 → 76.8 GiB adding Float8)."""
    if precision is Precision.FP32:
        return Regime.FP32
    if precision is Precision.BF16_TRUE:
        return Regime.PURE_BF16
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


def _trainable_bytes(optimizer: Optimizer, reg: Regime, *, adapters: bool) -> _ParamBytes:
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
    return _ParamBytes(2.0, 2.0, 4.0 + states, 4.0)


# ------------------------------------------------------------------ strategy


#: Shardings that partition parameters (ZeRO-3 / FSDP FULL_SHARD / HYBRID_SHARD in a node).
FULL_SHARDING = frozenset({Sharding.ZERO3, Sharding.FSDP, Sharding.HSDP})
_SHARDS_GRADS = FULL_SHARDING | {Sharding.ZERO2, Sharding.FSDP_GRAD_OP}
_SHARDS_OPTIMIZER = _SHARDS_GRADS | {Sharding.ZERO1}

_SHARDING_LABEL = {
    Sharding.DDP: "DDP",
    Sharding.ZERO1: "ZeRO-1",
    Sharding.ZERO2: "ZeRO-2",
    Sharding.ZERO3: "ZeRO-3",
    Sharding.FSDP: "FSDP full shard",
    Sharding.FSDP_GRAD_OP: "FSDP grad-op shard",
    Sharding.HSDP: "HSDP (FSDP inside each node, replicated across nodes)",
}


@dataclass(frozen=True, slots=True)
class Strategy:
    """How the job is laid out on its GPUs. ``DDP`` on a single GPU means no sharding."""

    sharding: Sharding
    offload: Offload
    checkpointing: bool

    def __post_init__(self) -> None:
        if self.offload is Offload.PARAMS and self.sharding not in FULL_SHARDING:
            raise ValueError("parameter offload needs ZeRO-3 or FSDP full sharding")

    def describe(self, gpus: int | None = None) -> str:
        """Plain words, e.g. ``FSDP full shard + activation checkpointing``.

        With ``gpus=1`` the sharding is not named (it does nothing on one GPU).
        """
        parts: list[str] = []
        if gpus == 1:
            parts.append("single GPU")
        else:
            parts.append(_SHARDING_LABEL[self.sharding])
        if self.checkpointing:
            parts.append("activation checkpointing")
        if self.offload is Offload.OPTIMIZER:
            parts.append("optimizer CPU offload")
        elif self.offload is Offload.PARAMS:
            parts.append("parameter and optimizer CPU offload")
        return " + ".join(parts)


@dataclass(frozen=True, slots=True)
class Kernels:
    """Kernel choices that change activation memory.

    ``flash_attention=None`` takes the block's default: a fused flash/SDPA kernel (no s²
    scores kept) for Llama- and GPT-style decoders, as PyTorch ≥ 2.0 SDPA, HF
    ``attn_implementation="sdpa"`` and LitGPT do; the materialised softmax for T5, whose
    relative position bias the fused kernels do not take. ``chunked_loss`` is torchtune's
    chunked cross-entropy (fp32 upcast one chunk at a time).
    """

    flash_attention: bool | None = None
    chunked_loss: bool = False

    def flash_for(self, block: Block) -> bool:
        if self.flash_attention is not None:
            return self.flash_attention
        return block is not Block.T5


DEFAULT_KERNELS = Kernels()


# ------------------------------------------------------------------ breakdown


@dataclass(frozen=True, slots=True)
class MemoryBreakdown:
    """Peak memory of one GPU, in GiB.

    ``weights_gib`` holds the model's parameters resident on this GPU (its shard, the frozen
    base for LoRA, plus the gathered units under full sharding); ``optimizer_gib`` includes
    the fp32 master copy of mixed precision (ZeRO's K). ``logits_gib`` and ``gathered_gib``
    are parts of ``activations_gib`` and ``weights_gib``+``gradients_gib``; ``cuda_context_gib``
    and ``fragmentation_gib`` are parts of ``overhead_gib``. ``cpu_offload_gib`` is host RAM
    this GPU's rank needs for offloaded states (not part of the total).
    """

    weights_gib: float
    gradients_gib: float
    optimizer_gib: float
    activations_gib: float
    overhead_gib: float
    logits_gib: float = 0.0
    gathered_gib: float = 0.0
    cuda_context_gib: float = 0.0
    fragmentation_gib: float = 0.0
    cpu_offload_gib: float = 0.0
    trainable_params: int = 0

    @property
    def total_gib(self) -> float:
        return (
            self.weights_gib
            + self.gradients_gib
            + self.optimizer_gib
            + self.activations_gib
            + self.overhead_gib
        )

    @property
    def model_states_gib(self) -> float:
        """Weights + gradients + optimizer states, the quantity the ZeRO paper tabulates."""
        return self.weights_gib + self.gradients_gib + self.optimizer_gib

    @property
    def pytorch_gib(self) -> float:
        """What ``torch.cuda.max_memory_reserved`` would show: the total less the CUDA context,
        which PyTorch's allocator does not see (published peaks are usually this number)."""
        return self.total_gib - self.cuda_context_gib


# ------------------------------------------------------------------ parameter counts


def _attention_params(m: Architecture) -> int:
    return m.hidden * m.head_dim * (2 * m.heads + 2 * m.kv_heads)


def _mlp_matrices(m: Architecture) -> int:
    return 3 if m.block is Block.LLAMA else 2


def _block_params(m: Architecture) -> int:
    """Parameters of one transformer block with every expert (norms are negligible)."""
    return _attention_params(m) + _mlp_matrices(m) * m.hidden * m.ffn * m.experts


def _input_embedding_params(m: Architecture) -> int:
    return m.vocab * m.hidden


def lora_params(m: Architecture, rank: int, targets: str) -> int:
    """LoRA adds r·(d_in + d_out) trainable parameters per adapted matrix (Hu et al. 2021, §4).

    ``targets="attention"`` adapts q, k, v and o; ``"all"`` adds every MLP matrix (gate, up and
    down for SwiGLU; both for a GeLU MLP), for each expert of a mixture of experts.
    """
    kv = m.head_dim * m.kv_heads
    q_heads = m.head_dim * m.heads
    attention = rank * ((m.hidden + q_heads) * 2 + (m.hidden + kv) * 2)
    mlp = rank * (m.hidden + m.ffn) * _mlp_matrices(m) * m.experts
    per_layer = attention + (mlp if targets == "all" else 0)
    return per_layer * m.layers


# ------------------------------------------------------------------ activations


def _act_bytes(precision: Precision) -> float:
    """Activations are kept in the compute dtype: 16-bit except in fp32 training."""
    return 4.0 if precision is Precision.FP32 else 2.0


def _layer_activation_bytes_per_token(m: Architecture, b: float, *, flash: bool, s: int) -> float:
    """Bytes one layer keeps for backward, per token, without recomputation.

    Counted tensor by tensor (Korthikanti et al. 2022 §4.1 for the GPT block, which this
    reproduces as 34·s·b·h at 16-bit when kv_heads = heads and ffn = 4h):

    * Llama block (RMSNorm, SwiGLU, no dropout): two norm inputs, the q/k/v input, q, k and v
      (k, v shrink with grouped-query attention), the attention output; the MLP input, gate,
      up, SiLU output and their product (per routed expert for a mixture of experts, plus
      the permuted copy of the input) → b·(6h + 2h·g + 4f·k).
    * GPT/T5 block (LayerNorm, GeLU MLP, dropout): the same attention tensors, the MLP input,
      fc1 and GeLU outputs, and 1-byte dropout masks after attention and MLP
      → b·(6h + 2h·g + 2f) + 2h.
    * Without a fused attention kernel, add the s² scores (5 bytes each at 16-bit).
    """
    h, f = m.hidden, m.ffn
    g = m.kv_heads / m.heads
    routed = m.experts_per_token if m.experts > 1 else 1
    attention = b * (h + h + h + 2 * h * g + h)  # norm in, qkv in, q, k+v, attention out
    if m.block is Block.LLAMA:
        mlp = b * (h + h + 4 * f * routed)  # norm in, mlp in, gate, up, silu, product
        if m.experts > 1:
            mlp += b * h * routed  # tokens permuted to their experts
    else:
        mlp = b * (h + h + 2 * f) + h + h  # norm in, mlp in, fc1, gelu; two dropout masks
    per_token = attention + mlp
    if not flash:
        per_token += ATTENTION_SCORE_BYTES * (b / 2) * m.heads * s
    return per_token


def _logits_bytes(m: Architecture, tokens: int, b: float, kernels: Kernels) -> float:
    """The LM head output, its fp32 upcast and the fp32 gradient of the loss, plus the final
    norm output feeding the head. In fp32 training the logits are already fp32."""
    upcast = b if b < 4 else 0.0
    if kernels.chunked_loss:
        per_logit = upcast + LOGITS_FP32_BYTES / CHUNKED_LOSS_CHUNKS
    else:
        per_logit = upcast + LOGITS_FP32_BYTES
    return tokens * (m.vocab * per_logit + b * m.hidden)


def _activations(workload: Workload, checkpointing: bool, kernels: Kernels) -> tuple[float, float]:
    """(activations, of which logits) in bytes for one micro-batch on one GPU."""
    m = workload.model
    s, tokens = workload.seq_len, workload.seq_len * workload.micro_batch
    b = _act_bytes(workload.precision)
    layer = _layer_activation_bytes_per_token(m, b, flash=kernels.flash_for(m.block), s=s) * tokens
    logits = _logits_bytes(m, tokens, b, kernels)
    # Full recomputation keeps each layer's input (2·s·b·h at 16-bit, Korthikanti §4.2) and,
    # during backward, one layer's full activations being recomputed.
    body = b * m.hidden * tokens * m.layers + layer if checkpointing else layer * m.layers
    return body + logits, logits


# ------------------------------------------------------------------ model states


def shard_degree(sharding: Sharding, *, gpus: int, gpus_per_node: int) -> int:
    """Ranks a state is split over: the world for ZeRO/FSDP, the node for HSDP, 1 for DDP."""
    if sharding is Sharding.DDP:
        return 1
    if sharding is Sharding.HSDP:
        return max(1, min(gpus, gpus_per_node))
    return max(1, gpus)


def _frozen_base_bytes(workload: Workload) -> tuple[float, float]:
    """(bytes of the frozen base, bytes per block parameter) for LoRA and QLoRA.

    LoRA keeps the base in the compute dtype (bf16; fp32 in fp32 training). QLoRA stores the
    linear layers of every block in NF4 and leaves embeddings and the LM head in bf16
    (Dettmers et al. 2023; torchtune measured 7.4 GiB for the Llama 3.1 8B QLoRA because ~1B
    embedding/head parameters stay 16-bit).
    """
    m = workload.model
    dense = 4.0 if workload.precision is Precision.FP32 else 2.0
    if workload.method is Method.LORA:
        return m.params * dense, dense
    nf4 = NF4_DOUBLE_QUANT_BYTES if workload.nf4_double_quant else NF4_BYTES
    linear = m.layers * _block_params(m)
    rest = max(0, m.params - linear)  # embeddings, LM head, norms: kept 16-bit
    return linear * nf4 + rest * 2.0, nf4


def estimate_memory(
    workload: Workload,
    strategy: Strategy,
    *,
    gpus: int,
    gpus_per_node: int,
    kernels: Kernels = DEFAULT_KERNELS,
) -> MemoryBreakdown:
    """Peak memory per GPU of ``workload`` run with ``strategy`` on ``gpus`` GPUs."""
    if gpus < 1 or gpus_per_node < 1:
        raise ValueError("gpus and gpus_per_node must be at least 1")
    return MemoryModel(workload, kernels).breakdown(
        strategy, gpus=gpus, gpus_per_node=gpus_per_node
    )


class MemoryModel:
    """:func:`estimate_memory` for one workload, with everything the layout does not change
    computed once (trainable counts, bytes per parameter, activations, fixed overhead).

    A layout search evaluates the same workload under dozens of (strategy, GPU count) pairs;
    :meth:`breakdown` is then a handful of float operations, in the same order as the
    one-shot function, so the figures are identical.
    """

    __slots__ = (
        "_activations",
        "_frozen_bytes",
        "_gathered_g",
        "_gathered_w",
        "_grads_total",
        "_host_opt",
        "_optimizer_total",
        "_overhead",
        "_peft",
        "_trainable",
        "_weights_total",
    )

    def __init__(self, workload: Workload, kernels: Kernels = DEFAULT_KERNELS) -> None:
        m = workload.model
        reg = regime(workload.precision)
        peft = not workload.method.trains_all_weights
        # Trainable parameters and what each costs.
        trainable: int
        if peft:
            trainable = lora_params(m, workload.lora_rank, workload.lora_targets)
            frozen_bytes, block_bytes = _frozen_base_bytes(workload)
        else:
            trainable = m.params
            frozen_bytes = 0.0
            block_bytes = 4.0 if reg is Regime.FP32 else 2.0
        per = _trainable_bytes(workload.optimizer, reg, adapters=peft)
        self._peft = peft
        self._trainable = trainable
        self._frozen_bytes = frozen_bytes
        self._weights_total = trainable * per.weights + frozen_bytes
        self._grads_total = trainable * per.grads
        self._optimizer_total = trainable * per.optimizer
        # ZeRO-Offload: fp32 master, states and fp32 gradients live on the CPU; the GPU keeps
        # its 16-bit weights (ZeRO-2: 2Ψ; ZeRO-3: 2Ψ/N; DeepSpeed estimators) and streams
        # gradients out in buckets (counted in the communication buffers).
        self._host_opt = trainable * (per.optimizer + (4.0 if per.master else per.grads))

        # Full sharding gathers one unit at a time: the current unit and the prefetched next
        # one are unsharded (FSDP backward_prefetch; DeepSpeed counts 4·largest_layer for
        # fp16 params + grads), and during backward the unit's unsharded gradient exists
        # before its reduce-scatter (full training only; adapters' gradients are tiny).
        unit = m.largest_layer_params
        block = _block_params(m)
        embed_bytes = 4.0 if reg is Regime.FP32 else 2.0
        unit_bytes = block_bytes if unit == block else embed_bytes
        self._gathered_w = unit * unit_bytes + block * block_bytes
        self._gathered_g = 0.0 if peft else unit * per.grads

        # Activations and overhead, per checkpointing choice and (overhead) world size > 1.
        self._activations = (
            _activations(workload, False, kernels),
            _activations(workload, True, kernels),
        )
        overhead: list[tuple[float, float]] = []
        for act, _ in self._activations:
            fragmentation = FRAGMENTATION_FRACTION * act
            single = CUDA_CONTEXT_GIB * GIB + WORKSPACE_GIB * GIB + fragmentation
            multi = single + COMMS_BUFFER_GIB * GIB
            if workload.method is Method.QLORA:
                # One linear layer is dequantised to bf16 at a time for its matmul.
                single += 2.0 * m.hidden * m.ffn
                multi += 2.0 * m.hidden * m.ffn
            overhead.append((single, multi))
        self._overhead = tuple(overhead)

    def _bytes(
        self, strategy: Strategy, gpus: int, gpus_per_node: int
    ) -> tuple[float, float, float, float, float, float, float, float]:
        """(weights, grads, optimizer, activations, overhead, host, gathered w, gathered g)."""
        sharding = strategy.sharding
        n = shard_degree(sharding, gpus=gpus, gpus_per_node=gpus_per_node)
        full = sharding in FULL_SHARDING
        weights = self._weights_total / n if full else self._weights_total
        grads = self._grads_total / n if sharding in _SHARDS_GRADS else self._grads_total
        sharded_opt = sharding in _SHARDS_OPTIMIZER
        optimizer = self._optimizer_total / n if sharded_opt else self._optimizer_total

        gathered_w = gathered_g = 0.0
        if (full and gpus > 1) or strategy.offload is Offload.PARAMS:
            gathered_w = self._gathered_w
            gathered_g = self._gathered_g

        host = 0.0
        if strategy.offload is not Offload.NONE:
            host += self._host_opt / n if sharded_opt or gpus == 1 else self._host_opt
            optimizer = 0.0
            grads = 0.0
            if strategy.offload is Offload.PARAMS:
                host += self._weights_total / n
                weights = 0.0
            host *= HOST_BUFFER_FACTOR
        weights += gathered_w
        grads += gathered_g
        ckpt = 1 if strategy.checkpointing else 0
        act = self._activations[ckpt][0]
        overhead = self._overhead[ckpt][1 if gpus > 1 else 0]
        return weights, grads, optimizer, act, overhead, host, gathered_w, gathered_g

    def totals(self, strategy: Strategy, *, gpus: int, gpus_per_node: int) -> tuple[float, float]:
        """(``total_gib``, ``cpu_offload_gib``) of :meth:`breakdown`, without building it."""
        w, g, o, act, overhead, host, _, _ = self._bytes(strategy, gpus, gpus_per_node)
        return w / GIB + g / GIB + o / GIB + act / GIB + overhead / GIB, host / GIB

    def breakdown(self, strategy: Strategy, *, gpus: int, gpus_per_node: int) -> MemoryBreakdown:
        """Peak memory per GPU with ``strategy`` on ``gpus`` GPUs (as :func:`estimate_memory`)."""
        weights, grads, optimizer, act, overhead, host, gathered_w, gathered_g = self._bytes(
            strategy, gpus, gpus_per_node
        )
        logits = self._activations[1 if strategy.checkpointing else 0][1]
        return MemoryBreakdown(
            weights_gib=weights / GIB,
            gradients_gib=grads / GIB,
            optimizer_gib=optimizer / GIB,
            activations_gib=act / GIB,
            overhead_gib=overhead / GIB,
            logits_gib=logits / GIB,
            gathered_gib=(gathered_w + gathered_g) / GIB,
            cuda_context_gib=CUDA_CONTEXT_GIB,
            fragmentation_gib=FRAGMENTATION_FRACTION * act / GIB,
            cpu_offload_gib=host / GIB,
            trainable_params=self._trainable,
        )


def usable_gib(gpu: GpuSpec) -> float:
    """Memory PyTorch can allocate on one GPU, in GiB (below the label; see the constants)."""
    capacity = gpu.memory_gb * VISIBLE_FRACTION
    if gpu.id in ECC_GDDR_GPUS:
        capacity *= 1 - ECC_RESERVED_FRACTION
    return capacity
