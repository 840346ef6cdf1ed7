"""What the parser has understood so far, and how it becomes a :class:`Workload`.

:class:`Draft` holds each field as stated (``None`` when not). :func:`finish` applies the
defaults (recording each in ``assumed``), resolves words that depend on the method (plain
``bf16`` is mixed precision for a full fine-tune, pure bf16 for LoRA), and validates.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from recommender import _lexicon as lex
from recommender.errors import WorkloadError
from recommender.models import Architecture
from recommender.posttrain import SPECS
from recommender.workload import (
    HardwareRequest,
    LossKernel,
    MemorySavers,
    Method,
    Objective,
    Offload,
    Optimizer,
    Precision,
    Sharding,
    SpotPolicy,
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
    objective: Objective | None = None
    group_size: int | None = None
    #: Model-parallel degrees and "3d parallel" (see :mod:`recommender.parallelism`).
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
    ignored: list[str] = field(default_factory=list)
    # Read by recommender._rules_lang: the time deadlines count from, a dataset's size, and
    # what the reader should know about how a word was read ("read 'lroa' as LoRA").
    now: datetime | None = None
    examples: float | None = None
    example_len: int | None = None
    epochs: float | None = None
    notes: list[str] = field(default_factory=list)
    cjk: bool = False


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
    )


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
    if spec.reference:
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
    method = _method(st, assumed)
    precision = _precision(st, method, assumed)
    objective = _objective(st, method, assumed)
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
            owned=st.owned,
            spot=st.spot or SpotPolicy.ALLOW,
            providers=_providers(st),
            regions=tuple(st.regions),
            lora_rank=st.lora_rank or 16,
            lora_targets=st.lora_targets or "all",
            nf4_double_quant=True if st.double_quant is None else st.double_quant,
            savers=_savers(st),
            objective=objective,
            group_size=st.group_size or 8,
            tensor_parallel=st.tp,
            pipeline_parallel=st.pp,
            context_parallel=st.cp,
            expert_parallel=st.ep,
            virtual_stages=st.vp,
            model_parallel=st.model_parallel,
            assumed=tuple(assumed),
            ignored=ignored,
            text=text,
        )
    except ValueError as exc:
        reason = str(exc)
        raise WorkloadError(f"{reason[:1].upper()}{reason[1:]}.", not_understood=ignored) from exc
