"""The global batch a run is assumed to use when the workload states none.

Published pretraining runs pick the batch from the model size and then grow it with the
cluster, so that every data-parallel rank still has enough micro-batches to keep its
pipeline full:

* by size, ~N^(1/3): GPT-3 (Brown et al. 2020, Table 2.1) 0.5M tokens at 125M-760M, 1M at
  1.3B-2.7B, 2M at 6.7B-13B, 3.2M at 175B; LLaMA and Llama 2 4M tokens at 7B-70B (Touvron
  et al. 2023a §2.3, 2023b §2.2); Pythia 2M at 70M-12B (Biderman et al. 2023);
* a mixture of experts ×E/k, so each of its E experts (k per token) sees as many tokens per
  step as a dense layer: DeepSeekMoE 16B (2.8B active, 64 experts, top 6) ran 4,608 × 4,096
  = 18.9M tokens (Dai et al. 2024 §5.1), DeepSeek-V2-Lite the same, DeepSeek-V2 (21B, 160,
  top 6) 37.7M and DeepSeek-V3 (37B, 256, top 8) 63M, against 1.4-3.5M for dense models of
  their active size by the rule above;
* by cluster: a 1F1B pipeline of p stages idles (p−1)/m of its work for m micro-batches per
  optimizer step (Narayanan et al. 2021 §2.2.1), and published runs keep m several times p
  as they add GPUs: Falcon 180B m = 4p (4,096 A100, TP8 PP8 DP64, 2,048 sequences; model
  card), Megatron-LM's weak-scaling runs m = 8-24·p (Narayanan et al. 2021, Table 1),
  DeepSeek-V3 m = 7.5p (15,360 sequences over 128 PP16 pipelines; DeepSeek-AI 2024 §4.2,
  §3.2); Llama 3 405B ran m = p = 16 at 16,384 H100 (16M tokens) with an interleaved
  schedule to shrink the bubble instead (Dubey et al. 2024 §3.3.2, §3.4.1);
* capped at the batches the largest published runs used: dense runs at Llama 3 405B's final
  16M tokens (3.8e25 FLOPs, the largest dense run with a published batch; Dubey et al. 2024
  §3.4.1), mixtures of experts at DeepSeek-V3's 63M. DeepSeek LLM's compute-optimal batch
  B_opt = 0.292·C^0.3271 (DeepSeek-AI 2024a §3.1, fitted on 1e17-3e20 FLOPs) is not a ceiling:
  it matches DeepSeek's own 67B (18.9M tokens at 8e23 FLOPs) but extrapolates to 55-68M tokens
  for a 405B model, over three times what Llama 3 ran (4M → 8M → 16M over the run); past
  the critical batch a larger batch buys little progress per token (McCandlish et al. 2018).

Fine-tuning keeps a fixed batch: NeMo's SFT and LoRA recipes use 32 packed sequences of
4,096 tokens (NeMo 24.07 performance summary), whatever the cluster.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from recommender.models import Architecture
from recommender.workload import Method, Workload

if TYPE_CHECKING:  # parallelism's search reads the batch rule
    from recommender.estimation.parallelism import Parallel

__all__ = [
    "FINETUNE_BATCH_TOKENS",
    "MAX_DENSE_BATCH_TOKENS",
    "MAX_MOE_BATCH_TOKENS",
    "MICROBATCHES_PER_STAGE",
    "SIZE_BATCH_TOKENS",
    "ceiling_tokens",
    "default_batch_tokens",
    "pretrain_batch_tokens",
    "size_batch_tokens",
]

# 2M tokens at 7B, ×(N/7B)^(1/3): 0.52M at 125M, 1.1M at 1.3B, 4.2M at 70B, through GPT-3's
# Table 2.1 (0.5M / 1M / 2M) and Llama 1/2's 4M at 65-70B
SIZE_BATCH_TOKENS = 2_097_152
SIZE_BATCH_PARAMS = 7e9  # the size that batch is quoted at (GPT-3 6.7B: 2M; ours: 7e9)
SIZE_BATCH_EXPONENT = 1 / 3  # ours: the fit through the GPT-3 and Llama rows above
# Llama 3 405B's final batch: 16M tokens (Dubey et al. 2024 §3.4.1)
MAX_DENSE_BATCH_TOKENS = 16_777_216
# DeepSeek-V3's final batch: 15,360 sequences × 4,096 tokens (DeepSeek-AI 2024 §4.2)
MAX_MOE_BATCH_TOKENS = 15_360 * 4_096
# Falcon 180B's m = 4p (model card: TP8 PP8 DP64, 2,048 sequences); Megatron-LM 8-24p
MICROBATCHES_PER_STAGE = 4
# NeMo 24.07 SFT/LoRA: global batch 32 × 4,096 packed tokens (performance summary)
FINETUNE_BATCH_TOKENS = 131_072


def size_batch_tokens(model: Architecture) -> float:
    """The batch a run of this size starts from, by its active parameters (×E/k for a
    mixture of experts)."""
    dense = SIZE_BATCH_TOKENS * (model.active_params / SIZE_BATCH_PARAMS) ** SIZE_BATCH_EXPONENT
    if model.experts > 1:
        dense *= model.experts / model.experts_per_token
    return float(dense)


def ceiling_tokens(model: Architecture) -> float:
    """The largest batch assumed: the largest batch a published run of its kind used."""
    return float(MAX_MOE_BATCH_TOKENS if model.experts > 1 else MAX_DENSE_BATCH_TOKENS)


def pretrain_batch_tokens(
    model: Architecture, *, pipelines: int, microbatch_tokens: float, stages: int
) -> float:
    """Global batch of a pretraining run on ``pipelines`` data-parallel replicas of
    ``stages`` pipeline stages: the size rule, grown so each pipeline gets
    ``MICROBATCHES_PER_STAGE`` micro-batches of ``microbatch_tokens`` per stage (one without
    a pipeline), at most the ceiling; never less than one micro-batch per replica."""
    one_round = pipelines * microbatch_tokens
    fill = one_round * (MICROBATCHES_PER_STAGE * stages if stages > 1 else 1)
    wanted = max(size_batch_tokens(model), fill)
    return max(min(wanted, ceiling_tokens(model)), one_round)


def default_batch_tokens(workload: Workload, parallel: Parallel, gpus: int) -> float:
    """The global batch, in tokens, of ``workload`` on ``gpus`` GPUs split as ``parallel``
    when it states none: the pretraining rule above for its data-parallel replicas of
    ``micro_batch × seq_len`` tokens each, else the fine-tuning batch."""
    if workload.method is Method.PRETRAIN:
        return pretrain_batch_tokens(
            workload.model,
            pipelines=max(gpus // parallel.replica, 1),
            microbatch_tokens=float(workload.micro_batch * workload.seq_len),
            stages=parallel.pp,
        )
    return float(FINETUNE_BATCH_TOKENS)
