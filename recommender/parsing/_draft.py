"""What the parser has understood so far, and how it becomes a :class:`Workload`.

:class:`Draft` holds each field as stated (``None`` when not). :func:`finish` applies the
defaults (recording each in ``assumed``), resolves words that depend on the method (plain
``bf16`` is mixed precision for a full fine-tune, pure bf16 for LoRA), and validates.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from recommender.errors import WorkloadError
from recommender.estimation.finetune_speed import objective_range
from recommender.estimation.frameworks import (
    NO_FRAMEWORK,
    allocation_notes,
    describe,
    most_users_framework,
    unsharded_accumulation,
)
from recommender.estimation.frameworks import defaults as framework_defaults
from recommender.estimation.posttrain import SPECS
from recommender.models import Architecture
from recommender.parsing import _lexicon as lex
from recommender.parsing._scan import holds_quantity
from recommender.workload import (
    Framework,
    HardwareRequest,
    LossKernel,
    MemorySavers,
    Method,
    Objective,
    Offload,
    Optimizer,
    Phrase,
    Precision,
    Sharding,
    SpotPolicy,
    Urgency,
    Workload,
)

__all__ = ["Draft", "finish"]


@dataclass(slots=True)
class Draft:
    """What the rules have understood so far (``None``: not stated)."""

    model: Architecture | None = None
    method: Method | None = None
    fine_tune: bool = False  # a generic "fine-tune" was said (full unless LoRA/QLoRA is)
    four_bit: bool | None = None
    precision: str | None = None  # a word class, resolved against the method at the end
    optimizer: Optimizer | None = None
    seq_len: int | None = None
    micro_batch: int | None = None
    checkpointing: bool | None = None
    sharding: Sharding | None = None
    offload: Offload | None = None
    gpu_id: str | None = None
    gpu_count: int | None = None
    duration_hours: float | None = None
    tokens: float | None = None
    budget_usd: float | None = None
    spot: SpotPolicy | None = None
    providers: set[str] = field(default_factory=set)
    excluded: set[str] = field(default_factory=set)
    regions: list[str] = field(default_factory=list)
    lora_rank: int | None = None
    lora_targets: str | None = None
    double_quant: bool | None = None
    # memory savers and post-training (issue #20 items 3-4)
    selective_checkpointing: bool = False
    loss: LossKernel | None = None
    optimizer_in_backward: bool | None = None
    paged_optimizer: bool = False
    compile: bool | None = None
    activation_offload: bool | None = None
    flash_attention: bool | None = None
    objective: Objective | None = None
    group_size: int | None = None
    precomputed_reference: bool | None = None
    #: The framework named (issue #36); its defaults fill what is not stated (finish).
    framework: Framework | None = None
    #: Model-parallel degrees and "3d parallel" (see :mod:`recommender.estimation.parallelism`).
    tp: int | None = None
    pp: int | None = None
    cp: int | None = None
    ep: int | None = None
    vp: int | None = None
    model_parallel: bool = False
    #: "we already have 4x A100": the hardware named is the team's own.
    owned: bool = False
    #: "time is worth $2k/day" (``no rush``: 0).
    time_value: float | None = None
    #: "cheapest" / "asap".
    urgency: Urgency | None = None
    ignored: list[str] = field(default_factory=list)
    # Read by recommender.parsing._rules_lang: the time deadlines count from, a dataset's size, and
    # what the reader should know about how a word was read ("read 'lroa' as LoRA").
    now: datetime | None = None
    examples: float | None = None
    #: Tokens in one pass over the stated dataset (examples × their length).
    dataset_tokens: float | None = None
    example_len: int | None = None
    epochs: float | None = None
    #: Examples evaluated each epoch (``2k eval examples``), and their tokens (issue #32).
    eval_examples: float | None = None
    eval_tokens: float | None = None
    notes: list[str] = field(default_factory=list)
    # what the reader must see wherever the answer is shown (a stale exchange-rate table).
    warnings: list[str] = field(default_factory=list)
    cjk: bool = False
    # Post-training as practitioners write it (issue #32; recommender.parsing._rules_post).
    completion_len: int | None = None
    prompt_len: int | None = None
    generation_gpus: int | None = None
    engine: str | None = None
    rl_framework: str | None = None
    reward_params: float | None = None
    packing: bool | None = None
    async_rollouts: bool | None = None
    global_batch: int | None = None
    grad_accum: int | None = None
    steps: int | None = None
    #: Work units (issue #35 item 3; recommender.parsing._rules_work): tokens per optimizer step,
    #: hours of audio, an image's side in pixels, a named public dataset, and whether a
    #: bare "batch 64" was said (the global batch when steps are given).
    step_tokens: float | None = None
    audio_hours: float | None = None
    image_px: tuple[int, int] | None = None
    dataset: str | None = None
    bare_batch: bool = False
    steps_per_epoch: bool = False  # "800 steps per epoch": times the epochs stated
    #: What each phrase a rule read set (Workload.phrases).
    phrases: list[Phrase] = field(default_factory=list)


_DEFAULT_PRECISION = {
    Method.PRETRAIN: (Precision.BF16_MIXED, "precision: bf16 mixed (fp32 master weights)"),
    Method.FULL: (Precision.BF16_MIXED, "precision: bf16 mixed (fp32 master weights)"),
    Method.LORA: (Precision.BF16_TRUE, "precision: pure bf16 (frozen bf16 base)"),
    Method.QLORA: (Precision.BF16_TRUE, "precision: pure bf16 (NF4 base, bf16 compute)"),
}
_STATED_PRECISION = {
    "bf16-true": Precision.BF16_TRUE,
    "bf16-mixed": Precision.BF16_MIXED,
    "mixed": Precision.BF16_MIXED,
    "fp16": Precision.FP16_MIXED,
    "fp8": Precision.FP8_MIXED,
    "fp32": Precision.FP32,
}


def _method(st: Draft, assumed: list[str]) -> Method:
    method = st.method
    if st.four_bit:
        if method in (Method.PRETRAIN, Method.FULL):
            raise WorkloadError(
                f"4-bit (NF4) weights only work with QLoRA, not {method.label}.",
                hint='Try: "llama-3-70b qlora on 2B tokens"',
            )
        return Method.QLORA
    if method is None:
        if not st.fine_tune:
            assumed.append("method: full fine-tune (say `lora` or `qlora` to change)")
        return Method.FULL
    return method


def _precision(st: Draft, method: Method, assumed: list[str]) -> Precision:
    if st.precision == "bf16":  # plain bf16: the mixed regime when all weights train
        return Precision.BF16_MIXED if method.trains_all_weights else Precision.BF16_TRUE
    if st.precision is not None:
        return _STATED_PRECISION[st.precision]
    precision, phrase = _DEFAULT_PRECISION[method]
    assumed.append(phrase)
    return precision


def _providers(st: Draft) -> frozenset[str]:
    if not st.excluded:
        return frozenset(st.providers)
    left = frozenset(st.providers or lex.ALL_PROVIDERS) - st.excluded
    if not left:
        raise WorkloadError("Every provider named was also excluded, so none is left.")
    return left


def _savers(st: Draft) -> MemorySavers:
    return MemorySavers(
        selective_checkpointing=st.selective_checkpointing,
        loss=st.loss or LossKernel.PLAIN,
        optimizer_in_backward=bool(st.optimizer_in_backward),
        paged_optimizer=st.paged_optimizer,
        compile=bool(st.compile),
        activation_offload=bool(st.activation_offload),
        flash_attention=st.flash_attention,
    )


_PRECISION_WORD = {
    Precision.BF16_TRUE: "bf16-true",
    Precision.BF16_MIXED: "bf16-mixed",
    Precision.FP32: "fp32",
}


def _apply_framework(st: Draft, method: Method, objective: Objective, *, chose_method: bool) -> str:
    """Fill what the user did not state with the named framework's defaults for the method
    (:mod:`recommender.estimation.frameworks`); the one line that says which, and how to change
    them."""
    fw = st.framework
    hidden = st.model.hidden if st.model is not None else 0
    allocs = allocation_notes(
        fw, zero3=st.sharding is Sharding.ZERO3, fp8=st.precision == "fp8", hidden=hidden
    )
    most_users = ""
    if fw is None:
        if objective is Objective.SFT or st.rl_framework is not None:
            return "; ".join([NO_FRAMEWORK, *allocs])
        # A post-training method without a framework named gets what most of its users run:
        # TRL's trainer (frameworks.most_users).
        fw = st.framework = most_users_framework(objective)
        most_users = f"framework: none named; most {objective.label} runs use TRL, so "
    multi = (st.gpu_count or 1) > 1
    params = float(st.model.params) if st.model is not None else 0.0
    d = framework_defaults(fw, method, objective, multi_gpu=multi, params=params)
    applied: list[str] = [f"{method.label} (4-bit base)"] if chose_method else []
    if st.precision is None and d.precision is not None:
        st.precision = _PRECISION_WORD[d.precision]
        applied.append(d.precision.label)
    if st.optimizer is None and d.optimizer is not None:
        st.optimizer = d.optimizer
        st.paged_optimizer = st.paged_optimizer or d.paged_optimizer
        word = "8-bit AdamW" if d.optimizer is Optimizer.ADAMW_8BIT else "AdamW"
        applied.append(("paged " if d.paged_optimizer else "") + word)
    if st.optimizer_in_backward is None and d.optimizer_in_backward:
        st.optimizer_in_backward = True
        applied.append("optimizer step in backward")
    if st.seq_len is None and d.seq_len is not None:
        st.seq_len = d.seq_len
        applied.append(f"seq {d.seq_len}")
    if st.micro_batch is None and d.micro_batch is not None:
        st.micro_batch = d.micro_batch
        applied.append(f"micro-batch {d.micro_batch}")
    if st.checkpointing is None and d.checkpointing is not None:
        st.checkpointing = d.checkpointing
        st.selective_checkpointing = d.selective_checkpointing
        kind = "selective " if d.selective_checkpointing else ""
        applied.append(f"{kind}activation checkpointing" if d.checkpointing else "no checkpointing")
    if st.activation_offload is None and d.activation_offload:
        st.activation_offload = True
        applied.append("checkpoints offloaded to host RAM")
    if st.loss is None and d.loss is not LossKernel.PLAIN:
        st.loss = d.loss
        applied.append(f"{d.loss.value} cross-entropy")
    if st.compile is None and d.compile:
        st.compile = True
        applied.append("torch.compile")
    if not method.trains_all_weights:
        if st.lora_rank is None and d.lora_rank is not None:
            st.lora_rank = d.lora_rank
            applied.append(f"LoRA r={d.lora_rank}")
        if st.lora_targets is None and d.lora_targets is not None:
            st.lora_targets = d.lora_targets
            where = "attention" if d.lora_targets == "attention" else "all linear layers"
            applied.append(f"LoRA on {where}")
    if st.sharding is None and d.sharding is not None and multi:
        st.sharding = d.sharding
        applied.append(d.sharding.value.upper())
    full = (Sharding.ZERO3, Sharding.FSDP, Sharding.HSDP)
    if st.offload is None and d.offload is not None and multi and st.sharding in full:
        st.offload = d.offload
        applied.append("parameters and optimizer offloaded to the CPU")
    if (st.gpu_count or 2) > 1 and unsharded_accumulation(fw, st.sharding or Sharding.FSDP):
        applied.append("under FSDP gradients accumulate unsharded (no_sync), whole on every GPU")
    if st.sharding is Sharding.ZERO3 or st.precision == "fp8":
        zero3 = st.sharding is Sharding.ZERO3
        applied += allocation_notes(fw, zero3=zero3, fp8=st.precision == "fp8", hidden=hidden)
    line = describe(fw, applied, d.source)
    if most_users:  # the framework was assumed: naming another is the other way to change it
        line = f"{most_users}{line}, or name another framework (e.g. `torchtune`, `openrlhf`)"
    return line


def _objective(st: Draft, method: Method, assumed: list[str]) -> Objective:
    objective = st.objective or Objective.SFT
    if objective is Objective.SFT:
        return objective
    if method is Method.PRETRAIN:
        raise WorkloadError(f"{objective.label} is a post-training method, not pretraining.")
    spec = SPECS[objective]
    held = []
    if spec.sequences == 2 and not spec.value:
        held.append("chosen + rejected per sample" if objective is not Objective.KTO else "")
    if objective is Objective.KTO:
        held.append("a KL completion per sample")
    if spec.reference and st.precomputed_reference:
        held.append("reference log-probs precomputed (no reference model held)")
    elif spec.reference:
        held.append(
            "a frozen reference model"
            if method.trains_all_weights
            else "the base with adapters off as reference"
        )
    if spec.reward:
        held.append("a frozen reward model")
    if spec.value:
        held.append("a trained value model of the same size")
    if objective is Objective.GRPO:
        held.append(f"a group of {st.group_size or 8} completions per prompt and their KV cache")
        if st.group_size is None:
            held[-1] += " (say `group 16` to change)"
    elif spec.generates:
        held.append("the KV cache of its rollouts")
    assumed.append(f"{objective.label} holds " + ", ".join(h for h in held if h))
    return objective


def finish(st: Draft, text: str) -> Workload:
    """The validated Workload, with every applied default recorded in ``assumed``."""
    ignored = tuple(dict.fromkeys(st.ignored))
    if st.model is None:
        listed = f" Not understood: {', '.join(ignored)}." if ignored else ""
        raise WorkloadError(
            "I could not find a model: give a size like `13B` or a name like `llama-3-8b`."
            + listed,
            not_understood=ignored,
        )
    assumed: list[str] = list(dict.fromkeys(st.notes))
    chose_method = False
    if st.framework is not None and st.method is None and not st.four_bit:
        row = framework_defaults(st.framework, Method.FULL, Objective.SFT, multi_gpu=False)
        if row.method is not None:  # Unsloth loads the base in 4 bits: QLoRA
            st.method, chose_method = row.method, True
    method = _method(st, assumed)
    objective = _objective(st, method, assumed)
    if method is not Method.PRETRAIN:
        low, high = objective_range(objective, method)
        assumed.append(
            f"time: ×{low:g} to ×{high:g} of the estimate, a fine-tune's range (the "
            "pessimistic hours, a deadline and a budget use its top)"
        )
    assumed.append(_apply_framework(st, method, objective, chose_method=chose_method))
    precision = _precision(st, method, assumed)
    if st.optimizer is None:
        assumed.append("optimizer: AdamW")
    if st.seq_len is None:
        assumed.append("seq 2048 (say `seq 8k` to change)")
    if st.micro_batch is None:
        assumed.append("micro-batch 1")
    sharding = st.sharding
    if st.offload is Offload.PARAMS and sharding is None:
        sharding = Sharding.ZERO3
        assumed.append("sharding: ZeRO-3 (parameter offload needs it)")
    if method in (Method.LORA, Method.QLORA):
        if st.lora_rank is None:
            assumed.append("LoRA rank 16 (say `r=64` to change)")
        if st.lora_targets is None:
            assumed.append("LoRA on all linear layers")
    if st.spot is None:
        assumed.append("spot allowed (say `no spot` or `spot only` to change)")
    if st.owned and (st.gpu_id is None or st.gpu_count is None):
        raise WorkloadError(
            "You said you have GPUs: say which and how many, so I can time the job on them.",
            hint='Try: "llama-3-8b lora on 2B tokens, we already have 4x A100"',
        )
    if st.owned:
        assumed.append(
            "your GPUs: priced at $0 rental, up to 8 to a node, nodes joined over InfiniBand"
        )
    try:
        hardware = (
            None
            if st.gpu_id is None and st.gpu_count is None
            else HardwareRequest(gpu_id=st.gpu_id, count=st.gpu_count)
        )
        return Workload(
            model=st.model,
            method=method,
            precision=precision,
            optimizer=st.optimizer or Optimizer.ADAMW,
            seq_len=st.seq_len or 2048,
            micro_batch=st.micro_batch or 1,
            checkpointing=st.checkpointing,
            sharding=sharding,
            offload=st.offload,
            hardware=hardware,
            duration_hours=st.duration_hours,
            tokens=st.tokens,
            budget_usd=st.budget_usd,
            time_value_usd_per_day=st.time_value,
            urgency=st.urgency,
            dataset_tokens=st.dataset_tokens,
            eval_tokens=st.eval_tokens,
            owned=st.owned,
            spot=st.spot or SpotPolicy.ALLOW,
            providers=_providers(st),
            regions=tuple(st.regions),
            lora_rank=st.lora_rank or 16,
            lora_targets=st.lora_targets or "all",
            nf4_double_quant=True if st.double_quant is None else st.double_quant,
            savers=_savers(st),
            objective=objective,
            precomputed_reference=bool(st.precomputed_reference) and SPECS[objective].reference,
            framework=st.framework,
            group_size=st.group_size or 8,
            completion_len=st.completion_len,
            generation_gpus=st.generation_gpus or 0,
            engine=st.engine,
            rl_framework=st.rl_framework,
            reward_params=st.reward_params,
            packing=st.packing,
            async_rollouts=bool(st.async_rollouts),
            tensor_parallel=st.tp,
            pipeline_parallel=st.pp,
            context_parallel=st.cp,
            expert_parallel=st.ep,
            virtual_stages=st.vp,
            model_parallel=st.model_parallel,
            assumed=tuple(assumed),
            readings=tuple(dict.fromkeys(st.notes)),
            warnings=tuple(dict.fromkeys(st.warnings)),
            ignored=ignored,
            phrases=tuple(st.phrases),
            unread=tuple(word for word in ignored if holds_quantity(word)),
            text=text,
        )
    except ValueError as exc:
        reason = str(exc)
        raise WorkloadError(f"{reason[:1].upper()}{reason[1:]}.", not_understood=ignored) from exc
