"""The working memory of full sharding: what ZeRO-3 and FSDP hold unsharded besides each
GPU's shard, as each framework allocates it.

Full sharding keeps 1/N of every state, but to compute a layer it must gather that layer's
parameters, and in backward it holds a layer's unsharded gradient until it is
reduce-scattered. How much is gathered at once is a property of the implementation:

* **PyTorch FSDP** (FSDP1 ``FULL_SHARD``, FSDP2 ``fully_shard``; torchtune, torchtitan,
  Accelerate, LitGPT, llm-foundry) gathers one wrapped unit (a decoder block, or the
  embedding) and prefetches the next: FSDP1 ``limit_all_gathers=True`` allows two in flight
  and ``backward_prefetch=BACKWARD_PRE`` fetches the next one early; FSDP2 prefetches one
  unit in forward and backward by default (torch.distributed.fsdp ``fully_shard`` docs). The
  unit's unsharded gradient exists before its reduce-scatter. FSDP2 (torchtune, torchtitan)
  also copies it into one reduce-scatter input buffer in the reduce dtype and frees the
  gradients only after the copy (``_fsdp_collectives.foreach_reduce``:
  ``reduce_scatter_input = torch.empty(..., dtype=reduce_dtype)``): torchtitan reduces in
  fp32 (``mixed_precision_reduce = "float32"``), torchtune in the bf16 it trains in; FSDP1
  (Accelerate, llm-foundry) reduce-scatters its flat gradient in place.
* **DeepSpeed ZeRO-3** gathers module by module and keeps what it fetched until the count of
  gathered elements passes ``stage3_max_live_parameters`` (default 1e9; a parameter reused
  within ``stage3_max_reuse_distance``, also 1e9, is not released), prefetches up to
  ``stage3_prefetch_bucket_size`` elements (default 5e7), and copies gradients into a
  contiguous reduce bucket of ``reduce_bucket_size`` elements in the compute dtype
  (default 5e8; ``contiguous_gradients`` is on by default) — deepspeed/runtime/zero/config.py,
  stage3.py (``__ipg_bucket_flat_buffer``). DeepSpeed's own estimator adds
  4 B × the largest module (its 16-bit parameters and gradients) on top of the shard
  (``estimate_zero3_model_states_mem_needs``). Hugging Face's integration fills the "auto"
  values from the model: ``reduce_bucket_size = h²``, ``stage3_prefetch_bucket_size =
  0.9·h²`` (transformers ``HfTrainerDeepSpeedConfig``; TRL does the same for the reference
  model); Axolotl's ``deepspeed_configs/zero3_bf16.json`` also sets ``max_live_parameters``
  and ``max_reuse_distance`` to 0.

Offloading moves the shard, not this working set: under ZeRO-Offload/Infinity the GPU keeps
the gathered modules, the prefetch and the buckets, and the host keeps the offloaded states
in pinned buffers (``offload_optimizer.pin_memory``), which :mod:`recommender.estimation.memory`
counts with DeepSpeed's ``additional_buffer_factor`` of 1.5.
"""

from __future__ import annotations

from dataclasses import dataclass

from recommender.models import Architecture
from recommender.workload import Framework, Sharding

__all__ = ["WorkingSet", "ZeroConfig", "working_set", "zero3_config"]

# DeepSpeedZeroConfig defaults (deepspeed/runtime/zero/config.py, commit 03dc2b9):
REDUCE_BUCKET = 5e8  # reduce_bucket_size, elements
PREFETCH_BUCKET = 5e7  # stage3_prefetch_bucket_size, elements
MAX_LIVE = 1e9  # stage3_max_live_parameters, elements
# transformers integrations/deepspeed.py fills "auto": reduce h², prefetch 0.9·h².
HF_PREFETCH_FRACTION = 0.9
# FSDP2 frameworks, and torchtitan's fp32 reduce dtype (torchtitan/config/configs.py
# mixed_precision_reduce = "float32"); torchtune sets no reduce dtype: its training dtype.
FSDP2_FRAMEWORKS = frozenset({Framework.TORCHTUNE, Framework.TORCHTITAN})
TORCHTITAN_REDUCE_BYTES = 4.0


@dataclass(frozen=True, slots=True)
class ZeroConfig:
    """The DeepSpeed ZeRO-3 sizes that set its working memory, in elements."""

    reduce_bucket: float
    prefetch_bucket: float
    max_live: float
    source: str


def zero3_config(framework: Framework | None, hidden: int) -> ZeroConfig:
    """The ZeRO-3 sizes a run gets: Hugging Face's "auto" values under TRL/HF Trainer and
    Axolotl (Axolotl's shipped config also sets max live to 0), DeepSpeed's own defaults
    otherwise."""
    if framework in (Framework.HF, Framework.AXOLOTL):
        axolotl = framework is Framework.AXOLOTL
        return ZeroConfig(
            reduce_bucket=float(hidden * hidden),
            prefetch_bucket=HF_PREFETCH_FRACTION * hidden * hidden,
            max_live=0.0 if axolotl else MAX_LIVE,
            source="Axolotl zero3_bf16.json with transformers' auto values"
            if axolotl
            else "transformers' auto values (HfTrainerDeepSpeedConfig)",
        )
    return ZeroConfig(REDUCE_BUCKET, PREFETCH_BUCKET, MAX_LIVE, "DeepSpeedZeroConfig defaults")


@dataclass(frozen=True, slots=True)
class WorkingSet:
    """Bytes full sharding holds unsharded on each GPU besides its shard (before tensor
    parallelism divides them)."""

    weights: float  # gathered parameters: the unit in use, the live and prefetched ones
    grads: float  # the unit's unsharded gradient (and FSDP2's reduce-scatter copy of it)
    buckets: float  # DeepSpeed's contiguous reduce bucket, the same size on every rank


def working_set(
    m: Architecture,
    sharding: Sharding,
    framework: Framework | None,
    *,
    block: int,
    block_bytes: float,
    embed_bytes: float,
    grad_bytes: float,
    trains_base: bool,
    compute_bytes: float,
) -> WorkingSet:
    """The working set of ``sharding`` for model ``m``: ``block`` parameters per decoder
    block held at ``block_bytes`` each (NF4 under QLoRA), the embedding at ``embed_bytes``;
    ``grad_bytes`` per trained parameter's gradient, none when only adapters train
    (``trains_base`` False); DeepSpeed's reduce bucket in the compute dtype
    (``compute_bytes``), FSDP2's reduce-scatter input in its reduce dtype."""
    embedding = m.vocab * m.hidden
    if sharding is not Sharding.ZERO3:  # FSDP / HSDP: a unit in use and one prefetched
        unit = max(block, embedding)
        unit_bytes = block_bytes if unit == block else embed_bytes
        staging = 0.0  # FSDP2's reduce-scatter input, beside the gradient until copied
        if framework in FSDP2_FRAMEWORKS:
            titan = framework is Framework.TORCHTITAN
            staging = TORCHTITAN_REDUCE_BYTES if titan else grad_bytes
        grads = unit * (grad_bytes + staging) if trains_base else 0.0
        return WorkingSet(unit * unit_bytes + block * block_bytes, grads, 0.0)
    cfg = zero3_config(framework, m.hidden)
    # DeepSpeed gathers per module: the largest is the embedding/LM head or one MLP matrix.
    module = max(embedding, m.hidden * m.ffn)
    module_bytes = embed_bytes if module == embedding else block_bytes
    live = max(min(cfg.max_live, float(m.params)), float(module))
    weights = module * module_bytes + (live - module + cfg.prefetch_bucket) * block_bytes
    grads = module * grad_bytes if trains_base else 0.0
    return WorkingSet(weights, grads, cfg.reduce_bucket * compute_bytes)
