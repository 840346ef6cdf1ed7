"""Activation memory of one micro-batch: the tensors each layer keeps for backward.

Counted tensor by tensor from the architecture (Korthikanti et al. 2022 §4), with a fused
or materialised attention (:class:`Kernels`), with or without full recomputation, plus the
LM head's logits and the fp32 copies the loss needs. The memory savers a user states
(:class:`~recommender.workload.MemorySavers`: selective checkpointing, a chunked or fused
loss, ``torch.compile``, activation offloading) and the sequences and generation of a
post-training objective (:mod:`recommender.estimation.posttrain`) change these figures by the
sourced amounts below. :mod:`recommender.estimation.memory` adds them to the model states and
overhead of one GPU.
"""

from __future__ import annotations

from dataclasses import dataclass

from recommender.estimation import fp8
from recommender.estimation.posttrain import SPECS, generation_bytes
from recommender.models import Architecture, Block
from recommender.workload import LossKernel, Method, Precision, Workload

__all__ = ["DEFAULT_KERNELS", "ActivationBytes", "Kernels", "activations"]

# Bytes per element of the logits term, per token and vocabulary entry: the 16-bit logits
# from the LM head, the fp32 upcast the loss needs and the fp32 softmax gradient (Korthikanti
# §4.3: "4·s·b·v" for fp32 logits plus a gradient of the same size). torchtune measured
# 51.0 → 42.9 GiB (8.1 GiB) removing the fp32 copies with chunked cross-entropy on Llama 3.2
# 3B at 2 × 4096 tokens: 8.3 bytes per logit, matching the two fp32 terms.
LOGITS_FP32_BYTES = 4 + 4
# torchtune's CEWithChunkedOutputLoss upcasts one of 8 chunks at a time (torchtune
# modules/loss/ce_chunked_output_loss.py, num_output_chunks = 8).
CHUNKED_LOSS_CHUNKS = 8

# Liger's FusedLinearCrossEntropy never materialises the logits: it runs the LM head and the
# loss over chunks of about h/v of the tokens (chunk_size = next_pow2(BT / ceil(V/H)),
# linkedin/Liger-Kernel ops/fused_linear_cross_entropy.py) and computes the input gradient
# in the forward. Per token: the fp32 logits chunk and its gradient (~8·h bytes after the
# h/v scaling) plus the stored input gradient in the compute dtype.
FUSED_LOSS_FP32_BYTES_PER_HIDDEN = 8

# torch.compile fuses the elementwise ops of a block (norms, SiLU·up, residual adds) and its
# min-cut partitioner recomputes cheap ops rather than saving them, with or without
# selective checkpointing: torchtitan Llama 3.1 8B with selective checkpointing
# measured 82.4 → 77.0 GiB (8 GPUs) and 67.0 → 62.0 GiB (128 GPUs) adding compile
# (benchmarks/llama3_h100_202412_torchtitan.md, Tables 1 and 3), the torchtune 3B ladder
# 60.0 → 42.9 GiB with compile + chunked CE of which 8.1 is the loss (README); both ≈ 15 %
# of the layer activations. Applied to what each layer keeps (not to the layer inputs that
# full checkpointing keeps, nor to the logits).
COMPILE_ACTIVATION_FACTOR = 0.85

# Activation offloading (torchtune training/_activation_offloading.py) copies each saved
# tensor to pinned host RAM on a side stream and prefetches it back during backward; about
# two layers' worth (the one computing and the one in flight) stay on the GPU.
OFFLOAD_RESIDENT_LAYERS = 2

# Korthikanti et al. 2022 §4.1: without a fused kernel the attention keeps the softmax
# output (2), its dropout mask (1) and the dropout output (2) bytes per score: 5·a·s² per
# sequence and layer at 16-bit.
ATTENTION_SCORE_BYTES = 5


@dataclass(frozen=True, slots=True)
class Kernels:
    """Kernel choices that change activation memory.

    ``flash_attention=None`` takes the block's default: a fused flash/SDPA kernel (no s²
    scores kept) for Llama- and GPT-style decoders, as PyTorch ≥ 2.0 SDPA, HF
    ``attn_implementation="sdpa"`` and LitGPT do; the materialised softmax for T5, whose
    relative position bias the fused kernels do not take. ``chunked_loss`` is torchtune's
    chunked cross-entropy (fp32 upcast one chunk at a time). ``nf4_keeps_input`` is the
    QLoRA 4-bit linear of bitsandbytes before 0.43.2, which keeps its input for backward
    (``_nf4_input_bytes_per_token``); current bitsandbytes and torchao's NF4 (torchtune)
    keep none, which is the default.

    ``flat_frozen_grads`` is a version choice of the same kind, for LoRA under FSDP1 with
    ``use_orig_params=True`` and one flat parameter per decoder block: the flat parameter
    mixes the frozen base with the adapters, and its gradient covers the frozen weights too
    (torch FSDP docs: mixing them is supported "but it's recommended to avoid doing so to
    prevent higher than expected gradient memory usage"). LitGPT's LoRA recipe ran so until
    litgpt #2086 (2025-08), which shards the adapters apart under FSDP2; the default is the
    current behaviour (adapters' gradients only).

    ``attention_dropout``: the unfused attention drops out its probabilities (Megatron-LM's
    default ``--attention-dropout 0.1``), which costs step time
    (:func:`recommender.estimation.efficiency.unfused_score_bytes`); current LLM recipes set 0.
    """

    flash_attention: bool | None = None
    attention_dropout: bool = False
    chunked_loss: bool = False
    nf4_keeps_input: bool = False
    flat_frozen_grads: bool = False

    def flash_for(self, block: Block) -> bool:
        if self.flash_attention is not None:
            return self.flash_attention
        return block is not Block.T5

    def fused_for(self, workload: Workload) -> bool:
        """Whether ``workload``'s attention runs in a fused kernel: the caller's choice, else
        what the user said ("eager attention", "flash attention 2"), else the block's."""
        if self.flash_attention is None and workload.savers.flash_attention is not None:
            return workload.savers.flash_attention
        return self.flash_for(workload.model.block)


DEFAULT_KERNELS = Kernels()

# ------------------------------------------------------------------ activations


def _act_bytes(precision: Precision) -> float:
    """Activations are kept in the compute dtype: 16-bit except in fp32 training."""
    return precision.compute_bytes


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


def _nf4_input_bytes_per_token(m: Architecture, b: float) -> float:
    """Inputs one layer's 4-bit linears keep, per token, under bitsandbytes before 0.43.2.

    Its 4-bit matmul (``MatMul4Bit``, bitsandbytes/autograd/_functions.py) saved its input
    for backward whenever the input needed a gradient, although the frozen NF4 weight needs
    none; a frozen bf16 linear keeps no input (autograd saves a matmul's input only for the
    weight's gradient). Removed by bitsandbytes PR #1270 (merged 2024-07-16, release 0.43.2;
    Dettmers: "the bug that caused a lot of memory issues with QLoRA"). Per layer: the
    attention input, the attention output fed to o, the MLP input (one tensor for gate and
    up) and the input of the down projection, per routed expert.
    """
    routed = m.experts_per_token if m.experts > 1 else 1
    return b * (3 * m.hidden + m.ffn * routed)


def _selective_bytes_per_token(m: Architecture, b: float) -> float:
    """Bytes one layer keeps per token under selective checkpointing, torchtitan's "op"
    policy (torchtitan/models/llama3/infra/parallelize.py ``_save_list``): the layer input,
    the attention kernel's output and every other matmul output are saved; elementwise ops
    (norms, activations, products) and the other matmuls are recomputed in backward."""
    h, f = m.hidden, m.ffn
    g = m.kv_heads / m.heads
    routed = m.experts_per_token if m.experts > 1 else 1
    mlp_mm = (m.mlp_matrices - 1) * f * routed  # every MLP matrix but down/fc2: gate + up, fc1
    matmuls = 3 * h + 2 * h * g + mlp_mm  # q, o, down/fc2; k, v; the MLP's up-projections
    return b * (h + h + matmuls / 2)


def _logits_bytes(m: Architecture, tokens: float, b: float, loss: LossKernel) -> float:
    """The LM head output, its fp32 upcast and the fp32 gradient of the loss, plus the final
    norm output feeding the head. In fp32 training the logits are already fp32."""
    upcast = b if b < 4 else 0.0
    if loss is LossKernel.FUSED:
        return tokens * m.hidden * (b + b + FUSED_LOSS_FP32_BYTES_PER_HIDDEN)
    if loss is LossKernel.CHUNKED:
        per_logit = upcast + LOGITS_FP32_BYTES / CHUNKED_LOSS_CHUNKS
    else:
        per_logit = upcast + LOGITS_FP32_BYTES
    return tokens * (m.vocab * per_logit + b * m.hidden)


@dataclass(frozen=True, slots=True)
class ActivationBytes:
    """Activation memory of one micro-batch, in bytes: ``train`` is the training peak on the
    GPU, of which ``logits`` is the loss's share; ``host`` is what activation offloading keeps
    in host RAM; ``generation`` is the KV cache of on-policy sampling, which peaks apart from
    training (:attr:`gpu` is the larger of the two). Model parallelism splits the layers'
    share (``train - logits``) and the logits differently
    (:mod:`recommender.estimation.parallelism`)."""

    train: float
    logits: float
    host: float = 0.0
    generation: float = 0.0

    @property
    def gpu(self) -> float:
        """The peak on the GPU: training or generation, whichever is larger."""
        return max(self.train, self.generation)


def activations(workload: Workload, checkpointing: bool, kernels: Kernels) -> ActivationBytes:
    """Activation memory of one micro-batch on one GPU."""
    m = workload.model
    savers = workload.savers
    s = workload.seq_len
    tokens = s * workload.micro_batch * SPECS[workload.objective].sequences
    b = _act_bytes(workload.precision)
    full_layer = _layer_activation_bytes_per_token(m, b, flash=kernels.fused_for(workload), s=s)
    if workload.precision is Precision.FP8_MIXED:  # TE keeps linear inputs in FP8 (fp8.py)
        full_layer -= fp8.activation_saving_per_token(fp8.recipe(workload.framework), m, b)
    if savers.compile:
        full_layer *= COMPILE_ACTIVATION_FACTOR
    if kernels.nf4_keeps_input and workload.method is Method.QLORA:
        full_layer += _nf4_input_bytes_per_token(m, b)
    layer = full_layer * tokens
    loss = LossKernel.CHUNKED if kernels.chunked_loss else LossKernel.PLAIN
    if savers.loss is not LossKernel.PLAIN:
        loss = savers.loss
    logits = _logits_bytes(m, tokens, b, loss)
    if checkpointing:
        # Full recomputation keeps each layer's input (2·s·b·h at 16-bit, Korthikanti §4.2);
        # selective keeps more per layer. Either way one layer's full activations exist
        # while it is recomputed in backward.
        kept = b * m.hidden
        if savers.selective_checkpointing:
            kept = _selective_bytes_per_token(m, b)
            if savers.compile:
                kept *= COMPILE_ACTIVATION_FACTOR
        stored, transient = kept * tokens * m.layers, layer
    else:
        stored, transient = layer * m.layers, 0.0
    host = 0.0
    if savers.activation_offload:
        per_layer = stored / m.layers
        resident = min(OFFLOAD_RESIDENT_LAYERS, m.layers) * per_layer
        host, stored = stored - resident, resident
    train = stored + transient + logits
    generation = generation_bytes(workload)
    return ActivationBytes(train, logits, host, generation)
