"""What each training framework switches on by default, per method.

A run's memory depends as much on the framework's defaults as on the model: torchtune's
recipes checkpoint activations, chunk the loss and (on one GPU, full fine-tune) step the
optimizer in backward with paged 8-bit AdamW; TRL checkpoints and chunks the loss; Unsloth
loads the base in 4 bits and offloads its checkpoints; LitGPT chunks the loss and, on several
GPUs, checkpoints and accumulates unsharded gradients. When the user
names a framework (:class:`~recommender.workload.Framework`) and states nothing else, the
parser (:mod:`recommender.parsing._draft`) applies the row of :func:`defaults` for the method and
says so in one line (:func:`describe`); anything stated overrides it.

Each row cites the framework's own recipe or config file (the snapshot read). Without a
framework the workload keeps gpufit's plain defaults, which are plain PyTorch / Hugging Face
``Trainer`` behaviour (``TrainingArguments``: no gradient checkpointing unless needed, no
chunked or fused loss, no compile): :data:`NO_FRAMEWORK`.

Framework-specific *allocations* (not defaults a user can restate) live where they are
counted: DeepSpeed ZeRO-3 buckets in :mod:`recommender.estimation.zero3`, FP8 recipes in
:mod:`recommender.estimation.fp8`, Megatron's fp32 main gradients in :func:`fp32_main_grads`.
"""

from __future__ import annotations

from dataclasses import dataclass

from recommender.estimation.fp8 import recipe as fp8_recipe
from recommender.estimation.zero3 import zero3_config
from recommender.workload import (
    Framework,
    LossKernel,
    Method,
    Objective,
    Offload,
    Optimizer,
    Precision,
    Sharding,
)

__all__ = [
    "NO_FRAMEWORK",
    "Defaults",
    "allocation_notes",
    "defaults",
    "describe",
    "fp32_main_grads",
    "most_users_framework",
    "unsharded_accumulation",
]

#: The one line an answer carries when no framework was named (SFT and pretraining).
NO_FRAMEWORK = (
    "framework: none named, so plain PyTorch / HF Trainer defaults (no chunked loss, compile "
    "or offload; checkpointing only if needed); name one (e.g. `torchtune`, `trl`, `axolotl`, "
    "`unsloth`, `deepspeed`) to use its defaults"
)


def most_users_framework(objective: Objective) -> Framework:
    """The framework most users of a post-training method run when they name none: TRL,
    whose trainers cover every objective here (``DPOTrainer`` also for IPO, ``KTOTrainer``,
    ``ORPOTrainer``, ``CPOTrainer`` for SimPO, ``PPOTrainer``, ``GRPOTrainer``; trl/trainer/,
    snapshot f2cd577) and on which the PEFT, Axolotl and Unsloth preference recipes build
    (ours: the reading of those projects' docs; RL frameworks such as verl or OpenRLHF are
    named when used). SFT and pretraining keep :data:`NO_FRAMEWORK`."""
    if objective is Objective.SFT:
        raise ValueError("SFT has no assumed framework")
    return Framework.HF


@dataclass(frozen=True, slots=True)
class Defaults:
    """One framework's defaults for one method; ``None``/``False``: the framework leaves it
    to the user (gpufit's own default or search applies)."""

    source: str
    method: Method | None = None  # for a bare "fine-tune" (Unsloth loads 4-bit: QLoRA)
    precision: Precision | None = None
    optimizer: Optimizer | None = None
    paged_optimizer: bool = False
    optimizer_in_backward: bool = False
    seq_len: int | None = None
    micro_batch: int | None = None
    checkpointing: bool | None = None
    selective_checkpointing: bool = False
    activation_offload: bool = False
    loss: LossKernel = LossKernel.PLAIN
    compile: bool = False
    lora_rank: int | None = None
    lora_targets: str | None = None
    #: Sharding on more than one GPU (the framework's distributed recipe).
    sharding: Sharding | None = None
    offload: Offload | None = None


_TUNE = "pytorch/torchtune recipes/configs/llama3_1/"  # snapshot bd2a0fc
# torchtune's distributed LoRA recipes up to 32B turn checkpointing off (llama3_1/8B_lora,
# llama3_2/3B_lora, qwen2_5/32B_lora); those of 70B and more keep it (llama3_1/70B_lora,
# qwen2_5/72B_lora, 405B_qlora), and the 70B full recipe offloads to the CPU
# (70B_full.yaml fsdp_cpu_offload: True); ours: the split between the two sizes.
_TUNE_LARGE_PARAMS = 50e9
# llama3_1/405B_qlora.yaml: batch_size 1 (the others 2); ours: the split.
_TUNE_HUGE_PARAMS = 200e9
_TRL = "huggingface/trl trl/trainer/sft_config.py, dpo_config.py"  # snapshot f2cd577
_AXO = "axolotl-ai-cloud/axolotl examples/llama-3/"  # snapshot 067b021


def _torchtune(method: Method, objective: Objective, multi: bool, params: float) -> Defaults:
    """torchtune (snapshot bd2a0fc): ``dtype: bf16`` (pure bf16), ``batch_size: 2``,
    ``LinearCrossEntropyLoss`` (8 output chunks, counted as the chunked loss),
    ``enable_activation_checkpointing: True`` (False only in the distributed LoRA recipe),
    LoRA rank 8 on q/v/output_proj and the MLP; the single-device full recipe uses
    ``bitsandbytes.optim.PagedAdamW8bit`` with ``optimizer_in_bwd: True``; distributed
    recipes shard with FSDP2; the DPO recipes use ``batch_size: 4``, ``max_seq_len: 1024``;
    70B and larger recipes keep checkpointing on under LoRA and offload full fine-tunes."""
    peft = not method.trains_all_weights
    large = params >= _TUNE_LARGE_PARAMS
    full_single = method.trains_all_weights and not multi
    dpo = objective is not Objective.SFT
    size = "70B" if large else "8B"
    if dpo:
        recipe = f"{size}_lora_dpo.yaml" if peft else f"{size}_full_dpo.yaml"
    elif peft:
        kind = "qlora" if method is Method.QLORA else "lora"
        recipe = f"{size}_{kind}.yaml" if multi else f"8B_{kind}_single_device.yaml"
    else:
        recipe = f"{size}_full.yaml" if multi else "8B_full_single_device.yaml"
    return Defaults(
        source=_TUNE + recipe,
        precision=Precision.BF16_TRUE,
        optimizer=Optimizer.ADAMW_8BIT if full_single and not dpo else Optimizer.ADAMW,
        paged_optimizer=full_single and not dpo,
        optimizer_in_backward=full_single and not dpo,
        seq_len=1024 if dpo else None,
        micro_batch=4 if dpo else (1 if params >= _TUNE_HUGE_PARAMS else 2),
        checkpointing=not (peft and multi and not dpo and not large),
        loss=LossKernel.CHUNKED,
        lora_rank=8 if peft else None,
        lora_targets="all" if peft else None,
        sharding=Sharding.FSDP if multi else None,
        offload=Offload.PARAMS if multi and large and not peft and not dpo else None,
    )


def _hf(method: Method, objective: Objective) -> Defaults:
    """TRL's configs (snapshot f2cd577) change ``TrainingArguments``: ``gradient_checkpointing``
    and ``bf16`` default to True, ``max_length`` to 1024; SFT's ``loss_type`` defaults to
    ``"chunked_nll"`` (lm_head and cross-entropy in chunks of tokens). The micro-batch is
    ``per_device_train_batch_size = 8`` (transformers ``TrainingArguments``); PEFT's
    ``LoraConfig`` has ``r = 8`` on the model's default targets, q_proj and v_proj for Llama
    (peft ``TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING``). bf16 here is autocast:
    trained weights and adapters stay fp32 with an fp32 optimizer."""
    peft = not method.trains_all_weights
    sft = objective is Objective.SFT
    return Defaults(
        source=_TRL + " (TrainingArguments, peft LoraConfig)",
        precision=Precision.BF16_MIXED,
        optimizer=Optimizer.ADAMW,
        seq_len=1024,
        micro_batch=8,
        checkpointing=True,
        loss=LossKernel.CHUNKED if sft else LossKernel.PLAIN,
        lora_rank=8 if peft else None,
        lora_targets="attention" if peft else None,
    )


def _axolotl(method: Method) -> Defaults:
    """Axolotl's Llama 3 examples (snapshot 067b021): ``gradient_checkpointing: true``,
    ``sample_packing: true``, ``bf16: auto``; LoRA (``lora-8b.yml``): ``sequence_len: 4096``,
    ``micro_batch_size: 2``, ``lora_r: 32``, ``lora_target_linear: true``,
    ``optimizer: adamw_bnb_8bit``; QLoRA (``qlora-1b.yml``): 2048, 2, r 32,
    ``adamw_bnb_8bit``; full (``fft-8b.yaml``): 8192, 1, ``paged_adamw_8bit``."""
    if method is Method.QLORA:
        recipe, seq, batch = "qlora-1b.yml", 2048, 2
    elif method is Method.LORA:
        recipe, seq, batch = "lora-8b.yml", 4096, 2
    else:
        recipe, seq, batch = "fft-8b.yaml", 8192, 1
    peft = not method.trains_all_weights
    return Defaults(
        source=_AXO + recipe,
        precision=Precision.BF16_MIXED,
        optimizer=Optimizer.ADAMW_8BIT,
        paged_optimizer=not peft,
        seq_len=seq,
        micro_batch=batch,
        checkpointing=True,
        lora_rank=32 if peft else None,
        lora_targets="all" if peft else None,
    )


def _unsloth(method: Method) -> Defaults:
    """Unsloth (snapshot 015bdef): ``FastLanguageModel.from_pretrained(load_in_4bit=True,
    max_seq_length=2048)`` (unsloth/models/loader.py), ``get_peft_model(r=16`` on every linear
    layer, ``use_gradient_checkpointing="unsloth")`` (unsloth/models/llama.py), which
    checkpoints and offloads the kept layer inputs to host RAM; unsloth-cli.py:
    ``per_device_train_batch_size 2``, ``optim "adamw_8bit"``; its fused cross-entropy
    kernel is counted as the chunked loss."""
    peft = not method.trains_all_weights
    return Defaults(
        source="unslothai/unsloth unsloth/models/loader.py, llama.py, unsloth-cli.py",
        method=Method.QLORA,
        optimizer=Optimizer.ADAMW_8BIT,
        seq_len=2048,
        micro_batch=2,
        checkpointing=True,
        activation_offload=True,
        loss=LossKernel.CHUNKED,
        lora_rank=16 if peft else None,
        lora_targets="all" if peft else None,
    )


def _litgpt(method: Method, multi: bool) -> Defaults:
    """LitGPT (snapshot 2685705): ``litgpt/finetune/lora.py`` ``lora_r=8`` on query and value,
    ``micro_batch_size=1``, ``optimizer="AdamW"``; the config hub sets ``precision:
    bf16-true``. The loss is ``litgpt.utils.chunked_cross_entropy``: cross-entropy 128
    tokens at a time on the bf16 logits (lora.py also runs the LM head in chunks,
    ``lm_head_chunk_size=128``), so no fp32 copy of the whole logits exists: counted as the
    chunked loss. One device checkpoints nothing; several run FSDP and checkpoint every block
    (full.py ``FSDPStrategy(activation_checkpointing_policy={Block})``, lora.py
    ``ModelParallelStrategy(parallelize_fn)`` with ``checkpoint_wrapper`` on each block), and
    accumulate gradients unsharded (:func:`unsharded_accumulation`)."""
    peft = not method.trains_all_weights
    return Defaults(
        source="Lightning-AI/litgpt litgpt/finetune/lora.py, full.py; config_hub/finetune",
        precision=Precision.BF16_TRUE,
        optimizer=Optimizer.ADAMW,
        micro_batch=1,
        checkpointing=multi,
        loss=LossKernel.CHUNKED,
        lora_rank=8 if peft else None,
        lora_targets="attention" if peft else None,
        sharding=Sharding.FSDP if multi else None,
    )


_ROWS_FIXED: dict[Framework, Defaults] = {
    # deepspeed/runtime/zero/config.py (DeepSpeedZeroConfig): nothing is recomputed unless
    # the model asks; bf16 with an fp32 master in the optimizer; buckets in
    # recommender.estimation.zero3.
    Framework.DEEPSPEED: Defaults(
        source="microsoft/DeepSpeed deepspeed/runtime/zero/config.py",
        precision=Precision.BF16_MIXED,
        optimizer=Optimizer.ADAMW,
    ),
    # Megatron-LM arguments.py: bf16 accumulates and all-reduces gradients in fp32
    # (fp32_main_grads); docs/source/api-guide/dist_optimizer.md: 18 B/param, or 6 + 12/d
    # with --use-distributed-optimizer (ZeRO-1: the search may pick it); FP8 runs on
    # Transformer Engine (recommender.estimation.fp8).
    Framework.MEGATRON: Defaults(
        source="NVIDIA/Megatron-LM megatron/training/arguments.py, "
        "docs/source/api-guide/dist_optimizer.md",
        precision=Precision.BF16_MIXED,
        optimizer=Optimizer.ADAMW,
    ),
    # torchtitan/models/llama3/config_registry.py llama3_8b (snapshot b5bcd76):
    # ChunkedLossWrapper, SelectiveAC (op policy), 1 × 8192 tokens per micro-batch, FSDP2 with
    # mixed_precision_param bf16 / reduce fp32 (torchtitan/config/configs.py).
    Framework.TORCHTITAN: Defaults(
        source="pytorch/torchtitan torchtitan/models/llama3/config_registry.py, config/configs.py",
        precision=Precision.BF16_MIXED,
        optimizer=Optimizer.ADAMW,
        seq_len=8192,
        micro_batch=1,
        checkpointing=True,
        selective_checkpointing=True,
        loss=LossKernel.CHUNKED,
        sharding=Sharding.FSDP,
    ),
    # scripts/train/yamls/pretrain/mpt-7b.yaml (snapshot 8c8dd48): precision amp_bf16,
    # fsdp_config FULL_SHARD / mixed_precision PURE / activation_checkpointing true,
    # decoupled_adamw, device_train_microbatch_size 8, max_seq_len 2048.
    Framework.LLM_FOUNDRY: Defaults(
        source="mosaicml/llm-foundry scripts/train/yamls/pretrain/mpt-7b.yaml",
        precision=Precision.BF16_MIXED,
        optimizer=Optimizer.ADAMW,
        seq_len=2048,
        micro_batch=8,
        checkpointing=True,
        sharding=Sharding.FSDP,
    ),
}


def defaults(
    framework: Framework,
    method: Method,
    objective: Objective,
    *,
    multi_gpu: bool,
    params: float = 0.0,
) -> Defaults:
    """The framework's defaults for ``method`` and ``objective`` (``multi_gpu``: the user named
    more than one GPU, which picks the distributed recipe where a framework has two;
    ``params``: the model's size, where recipes differ by it)."""
    if framework is Framework.TORCHTUNE:
        return _torchtune(method, objective, multi_gpu, params)
    if framework is Framework.HF:
        return _hf(method, objective)
    if framework is Framework.AXOLOTL:
        return _axolotl(method)
    if framework is Framework.UNSLOTH:
        return _unsloth(method)
    if framework is Framework.LITGPT:
        return _litgpt(method, multi_gpu)
    return _ROWS_FIXED[framework]


def describe(framework: Framework, applied: list[str], source: str) -> str:
    """The one line an answer shows: the defaults applied, where they come from and how to
    change them."""
    what = ", ".join(applied) if applied else "nothing beyond what you stated"
    return (
        f"{framework.label} defaults ({source}): {what}; say any of them otherwise "
        "(e.g. `no checkpointing`, `plain loss`, `no compile`, `batch 4`, `seq 4k`) to change"
    )


def allocation_notes(
    framework: Framework | None, *, zero3: bool, fp8: bool, hidden: int
) -> list[str]:
    """What the framework allocates that the answer should name: DeepSpeed ZeRO-3's bucket
    sizes (:mod:`recommender.estimation.zero3`) and the FP8 recipe
    (:mod:`recommender.estimation.fp8`)."""
    out: list[str] = []
    if zero3:
        cfg = zero3_config(framework, hidden)
        out.append(
            f"ZeRO-3 buffers per {cfg.source} (reduce bucket {cfg.reduce_bucket:.3g}, prefetch "
            f"{cfg.prefetch_bucket:.3g}, max live {cfg.max_live:.3g} elements)"
        )
    if fp8:
        out.append(f"FP8 as {fp8_recipe(framework).value}")
    return out


#: Frameworks that keep an fp32 main gradient beside the 16-bit weights under mixed
#: precision: Megatron-LM forces ``accumulate_allreduce_grads_in_fp32`` for bf16
#: (megatron/training/arguments.py; dist_optimizer.md "float16 param, fp32 grads": 18 B).
_FP32_MAIN_GRADS = frozenset({Framework.MEGATRON})


def fp32_main_grads(framework: Framework | None) -> bool:
    """Whether gradients are held in fp32 under mixed precision (4 B instead of 2)."""
    return framework in _FP32_MAIN_GRADS


#: Frameworks whose default recipes accumulate gradients over micro-batches without a
#: reduce-scatter per micro-batch, so every rank keeps the unsharded gradient of all it
#: trains until the optimizer step. LitGPT: finetune/full.py, lora.py, adapter.py and
#: pretrain.py wrap each accumulating micro-batch in ``fabric.no_backward_sync``, which
#: Lightning's FSDP strategies turn into ``FullyShardedDataParallel.no_sync()`` (FSDP1:
#: "FSDP will accumulate the full model gradients (instead of gradient shards) until the
#: eventual sync", torch FSDP docs) or ``set_requires_gradient_sync(False)`` (FSDP2: "storing
#: the unsharded gradients", pytorch PR #126166); its defaults (``global_batch_size=16``,
#: ``micro_batch_size=1``) accumulate on fewer than 16 GPUs, which gpufit assumes (ours:
#: the conservative side). torchtune and torchtitan reduce-scatter every micro-batch
#: (FSDP2's default); HF Trainer's default ``gradient_accumulation_steps`` is 1.
_UNSHARDED_ACCUMULATION = frozenset({Framework.LITGPT})


def unsharded_accumulation(framework: Framework | None, sharding: Sharding) -> bool:
    """Whether the framework's PyTorch FSDP keeps whole, unsharded gradients on every rank
    between optimizer steps (on more than one data-parallel GPU). Only PyTorch FSDP: DeepSpeed's
    engine reduces every micro-batch and refuses ``no_sync`` under ZeRO-2/3
    (deepspeed/runtime/engine.py ``no_sync``)."""
    return framework in _UNSHARDED_ACCUMULATION and sharding.pytorch_fsdp
