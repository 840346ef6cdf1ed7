"""The training workload: what the user wants to run, with every default made explicit.

:class:`Workload` is the validated, frozen result of parsing free text (see
:mod:`recommender.parsing.parse`). Anything the user states overrides a default; each default
that was applied is recorded in ``assumed`` so the reply can show it, and each word that
was not understood is recorded in ``ignored`` so nothing is silently dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from recommender.models import Architecture

__all__ = [
    "MAX_BUDGET_USD",
    "MAX_GPU_COUNT",
    "MAX_TOKENS",
    "MIN_BUDGET_USD",
    "Framework",
    "HardwareRequest",
    "LossKernel",
    "MemorySavers",
    "Method",
    "Objective",
    "Offload",
    "Optimizer",
    "Phrase",
    "Precision",
    "Sharding",
    "SpotPolicy",
    "Urgency",
    "Workload",
]


#: The range of a money budget: from a cent (less buys no GPU-second anywhere, and a figure
#: such as 1E-323 is a typo) to $1B (a larger figure is a unit error).
MIN_BUDGET_USD = 0.01
MAX_BUDGET_USD = 1e9
#: The largest token budget a workload may carry: 1e15 tokens, ~65× the 15T of the largest
#: published pretraining runs (Llama 3, §3.1), so a larger figure is a typo or a unit error.
MAX_TOKENS = 1e15


class Method(StrEnum):
    PRETRAIN = "pretrain"
    FULL = "full"  # full fine-tune (SFT)
    LORA = "lora"
    QLORA = "qlora"

    @property
    def trains_all_weights(self) -> bool:
        return self in (Method.PRETRAIN, Method.FULL)

    @property
    def label(self) -> str:
        return {
            Method.PRETRAIN: "pretraining",
            Method.FULL: "full fine-tune",
            Method.LORA: "LoRA",
            Method.QLORA: "QLoRA",
        }[self]


class Precision(StrEnum):
    """Numeric regime of training (weights, gradients and optimizer states)."""

    BF16_MIXED = "bf16-mixed"  # bf16 compute, fp32 master weights (AMP)
    FP16_MIXED = "fp16-mixed"  # fp16 compute + loss scaling, fp32 master weights
    BF16_TRUE = "bf16-true"  # everything in bf16 ("pure bf16")
    FP32 = "fp32"
    FP8_MIXED = "fp8-mixed"  # FP8 matmuls (Transformer Engine), bf16/fp32 states

    @property
    def compute_bytes(self) -> float:
        """Bytes per element of the compute dtype, in which weights, gradients and activations
        are held: fp32 is 4 bytes, bf16/fp16 2 (IEEE 754 binary32/binary16; bfloat16). FP8
        training keeps them 16-bit too: FP8 copies and scales are counted apart (fp8.py)."""
        return 4.0 if self is Precision.FP32 else 2.0

    @property
    def label(self) -> str:
        return {
            Precision.BF16_MIXED: "bf16 mixed",
            Precision.FP16_MIXED: "fp16 mixed",
            Precision.BF16_TRUE: "pure bf16",
            Precision.FP32: "fp32",
            Precision.FP8_MIXED: "fp8 mixed",
        }[self]


class Optimizer(StrEnum):
    ADAMW = "adamw"
    ADAMW_8BIT = "adamw-8bit"
    SGD = "sgd"  # plain SGD, no state
    SGD_MOMENTUM = "sgd-momentum"
    ADAFACTOR = "adafactor"
    LION = "lion"


class Sharding(StrEnum):
    """How model states are split across data-parallel ranks."""

    DDP = "ddp"
    ZERO1 = "zero1"
    ZERO2 = "zero2"
    ZERO3 = "zero3"
    FSDP = "fsdp"  # FULL_SHARD ≡ ZeRO-3
    FSDP_GRAD_OP = "fsdp-grad-op"  # SHARD_GRAD_OP ≡ ZeRO-2
    HSDP = "hsdp"  # HYBRID_SHARD: ZeRO-3 inside a node, replicated across nodes

    @property
    def shards_params(self) -> bool:
        """Partitions the parameters (ZeRO-3, FSDP FULL_SHARD, HSDP inside a node; ZeRO
        paper §5, P_os+g+p)."""
        return self in (Sharding.ZERO3, Sharding.FSDP, Sharding.HSDP)

    @property
    def shards_grads(self) -> bool:
        """Partitions the gradients (ZeRO-2 and FSDP SHARD_GRAD_OP too: P_os+g)."""
        return self.shards_params or self in (Sharding.ZERO2, Sharding.FSDP_GRAD_OP)

    @property
    def shards_optimizer(self) -> bool:
        """Partitions the optimizer states (ZeRO-1 too: P_os)."""
        return self.shards_grads or self is Sharding.ZERO1

    @property
    def pytorch_fsdp(self) -> bool:
        """Run by PyTorch FSDP (FULL_SHARD, SHARD_GRAD_OP, HYBRID_SHARD), not DeepSpeed ZeRO."""
        return self in (Sharding.FSDP, Sharding.FSDP_GRAD_OP, Sharding.HSDP)


class Offload(StrEnum):
    NONE = "none"
    OPTIMIZER = "optimizer"  # optimizer states (and their step) on the CPU
    PARAMS = "params"  # optimizer states and parameters on the CPU (ZeRO-3/FSDP only)


class Objective(StrEnum):
    """The training objective: supervised (SFT/pretraining) or a post-training method.

    Orthogonal to :class:`Method`, which says which weights train (all, LoRA, QLoRA): "DPO
    with QLoRA" is ``Method.QLORA`` and ``Objective.DPO``. Memory and FLOPs per objective are
    in :mod:`recommender.estimation.posttrain`.
    """

    SFT = "sft"  # next-token loss on one sequence (also pretraining)
    DPO = "dpo"  # paired chosen/rejected + frozen reference (Rafailov et al. 2023)
    IPO = "ipo"  # DPO's pairs and reference, another loss (Azar et al. 2023)
    KTO = "kto"  # unpaired + KL batch + frozen reference (Ethayarajh et al. 2024)
    ORPO = "orpo"  # paired, no reference (Hong et al. 2024)
    SIMPO = "simpo"  # paired, no reference (Meng et al. 2024)
    PPO = "ppo"  # policy, value, reference and reward models + generation (Ouyang et al. 2022)
    GRPO = "grpo"  # policy, reference, a group of sampled completions (Shao et al. 2024)

    @property
    def label(self) -> str:
        return {Objective.SFT: "SFT", Objective.SIMPO: "SimPO"}.get(self, self.value.upper())


class Framework(StrEnum):
    """The training framework the user named; its documented defaults for the method are
    applied where the user states nothing (:mod:`recommender.estimation.frameworks`)."""

    TORCHTUNE = "torchtune"
    HF = "hf"  # Hugging Face Trainer / TRL (SFTTrainer, DPOTrainer, GRPOTrainer)
    AXOLOTL = "axolotl"
    UNSLOTH = "unsloth"
    LITGPT = "litgpt"
    DEEPSPEED = "deepspeed"  # DeepSpeed's own engine and config defaults
    MEGATRON = "megatron"  # Megatron-LM / NeMo (Megatron-Core)
    TORCHTITAN = "torchtitan"
    LLM_FOUNDRY = "llm-foundry"

    @property
    def label(self) -> str:
        return {
            Framework.TORCHTUNE: "torchtune",
            Framework.HF: "HF Trainer/TRL",
            Framework.AXOLOTL: "Axolotl",
            Framework.UNSLOTH: "Unsloth",
            Framework.LITGPT: "LitGPT",
            Framework.DEEPSPEED: "DeepSpeed",
            Framework.MEGATRON: "Megatron-LM/NeMo",
            Framework.TORCHTITAN: "torchtitan",
            Framework.LLM_FOUNDRY: "llm-foundry",
        }[self]


class LossKernel(StrEnum):
    """How the cross-entropy over the vocabulary is computed."""

    PLAIN = "plain"  # full logits, fp32 upcast and fp32 gradient (eager PyTorch)
    CHUNKED = "chunked"  # torchtune CEWithChunkedOutputLoss: fp32 upcast one chunk at a time
    FUSED = "fused"  # Liger FusedLinearCrossEntropy: the logits are never materialised


@dataclass(frozen=True, slots=True)
class MemorySavers:
    """Memory savers the user stated; each changes the estimate by a sourced amount
    (:mod:`recommender.estimation.activations`, :mod:`recommender.estimation.memory`,
    ``docs/estimator.md``)."""

    #: Checkpointing keeps matmul and attention outputs, recomputes elementwise ops
    #: (applies when the strategy checkpoints).
    selective_checkpointing: bool = False
    loss: LossKernel = LossKernel.PLAIN
    #: The optimizer steps each parameter as its gradient is ready (torchtune
    #: optimizer_in_bwd): no full gradient buffer.
    optimizer_in_backward: bool = False
    #: bitsandbytes paged optimizer: states in CUDA unified memory, evicted to host RAM.
    paged_optimizer: bool = False
    compile: bool = False
    #: Saved activations move to host RAM during forward (torchtune OffloadActivations).
    activation_offload: bool = False
    #: The attention kernel the user named: ``True`` a fused one (flash attention, SDPA),
    #: ``False`` eager attention (s² scores kept and moved through HBM); ``None``: the
    #: model's default (:class:`recommender.estimation.activations.Kernels`).
    flash_attention: bool | None = None

    @property
    def labels(self) -> tuple[str, ...]:
        """Plain words for each saver that is on."""
        out: list[str] = []
        if self.selective_checkpointing:
            out.append("selective activation checkpointing")
        if self.loss is LossKernel.CHUNKED:
            out.append("chunked cross-entropy")
        elif self.loss is LossKernel.FUSED:
            out.append("fused linear cross-entropy (Liger)")
        if self.optimizer_in_backward:
            out.append("optimizer step in backward")
        if self.paged_optimizer:
            out.append("paged optimizer")
        if self.compile:
            out.append("torch.compile")
        if self.activation_offload:
            out.append("activation offloading")
        if self.flash_attention is False:
            out.append("eager attention (no fused kernel)")
        return tuple(out)


NO_SAVERS = MemorySavers()


#: A value a phrase set: a number, a word, a flag.
Value = str | float | bool


@dataclass(frozen=True, slots=True)
class Phrase:
    """Words of the question that one rule read, and what they set: ``("2B tokens",
    (("tokens", 2e9),))``. Every number of the question is in a phrase that set something,
    or in :attr:`Workload.ignored` (issue #35 item 5: never a silent drop). ``sets`` names
    the parser's fields (``tokens``, ``budget_usd``, ``examples``, ``steps``, ``objective``,
    ...); ``note`` is the line a phrase that changes nothing added to ``assumed``;
    ``restated`` marks a phrase that repeats a value already read."""

    text: str
    sets: tuple[tuple[str, Value], ...]


class Urgency(StrEnum):
    """How the user weighed time against money in words (``cheapest``, ``asap``); the
    objective (:mod:`recommender.ranking.objective`) turns it into a value of a day."""

    CHEAPEST = "cheapest"  # "cheapest", "as cheap as possible", "lowest cost": cost alone
    FASTEST = "fastest"  # "asap", "fastest", "urgent": a day of waiting weighs heavily


class SpotPolicy(StrEnum):
    ALLOW = "allow"  # show spot and on-demand, with the spot caveats
    ONLY = "only"
    NEVER = "never"  # the job cannot be interrupted


#: The largest cluster a request may name: 65,536 GPUs, room above the largest published
#: pretraining run (Llama 3 405B on 16,384 H100, Dubey et al. 2024 §3.3) and Meta's two
#: 24,576-GPU clusters ("Building Meta's GenAI infrastructure", 2024) (ours: 2^16)
MAX_GPU_COUNT = 65_536


@dataclass(frozen=True, slots=True)
class HardwareRequest:
    """Hardware the user named: ``on 8x H100`` (gpu + count), ``single gpu`` (count only)."""

    gpu_id: str | None
    count: int | None

    def __post_init__(self) -> None:
        if self.gpu_id is None and self.count is None:
            raise ValueError("a hardware request names a GPU, a count or both")
        if self.count is not None and not 1 <= self.count <= MAX_GPU_COUNT:
            raise ValueError(f"GPU count must be between 1 and {MAX_GPU_COUNT}")


@dataclass(frozen=True, slots=True)
class Workload:
    """A validated training job. ``None`` on a strategy field means "choose for me"."""

    model: Architecture
    method: Method
    precision: Precision
    optimizer: Optimizer
    seq_len: int
    micro_batch: int
    #: ``True``/``False`` when the user said so; ``None`` lets the search decide.
    checkpointing: bool | None = None
    sharding: Sharding | None = None
    offload: Offload | None = None
    hardware: HardwareRequest | None = None
    #: Wall-clock duration to price, in hours; with ``tokens`` it is a deadline instead.
    duration_hours: float | None = None
    tokens: float | None = None
    budget_usd: float | None = None
    spot: SpotPolicy = SpotPolicy.ALLOW
    providers: frozenset[str] = frozenset()
    #: Region prefixes such as ``us-east`` or ``eu``; empty means anywhere.
    regions: tuple[str, ...] = ()
    lora_rank: int = 16
    #: Which linear layers carry adapters: ``attention`` (q,k,v,o) or ``all`` linear layers.
    lora_targets: str = "all"
    nf4_double_quant: bool = True
    #: Memory savers the user stated (issue #20 item 3).
    savers: MemorySavers = NO_SAVERS
    #: Post-training objective (issue #20 item 4); ``SFT`` for plain training.
    objective: Objective = Objective.SFT
    #: DPO/IPO/KTO with the reference log-probs computed before training (TRL
    #: ``precompute_ref_log_probs=True``): no reference model is held while training.
    precomputed_reference: bool = False
    #: The framework the user named (``None``: not stated;
    #: :mod:`recommender.estimation.frameworks`).
    framework: Framework | None = None
    #: GRPO: completions sampled per prompt (TRL GRPOConfig.num_generations default 8).
    group_size: int = 8
    #: Post-training as practitioners describe it (issue #32;
    #: :mod:`recommender.estimation.rollout`). Tokens generated per sample (GRPO/PPO rollouts);
    #: ``None``: half the sequence.
    completion_len: int | None = None
    #: GPUs of the layout set aside for generation ("6 training GPUs + 2 vLLM GPUs").
    generation_gpus: int = 0
    #: Generation engine: ``"vllm"`` or ``"hf"`` (HF ``generate``); ``None``: the framework's.
    engine: str | None = None
    #: RL/post-training framework named (``openrlhf``, ``verl``, ``deepspeed-chat``,
    #: ``open-r1``): how it generates rollouts; the trainer itself is ``framework``.
    rl_framework: str | None = None
    #: Reward (and PPO critic) model parameters when they differ from the policy's.
    reward_params: float | None = None
    #: Examples packed into full sequences (``packing``) or padded (``None``: not said).
    packing: bool | None = None
    #: Rollouts generated while the previous batch trains (async RL: OpenRLHF/verl options).
    async_rollouts: bool = False
    #: Model-parallel degrees the user fixed (``tp 8``, ``pp 4``, ``cp 2``, ``ep 8``, ``vp 5``);
    #: ``None`` lets the search decide (see :mod:`recommender.estimation.parallelism`).
    tensor_parallel: int | None = None
    pipeline_parallel: int | None = None
    context_parallel: int | None = None
    expert_parallel: int | None = None
    virtual_stages: int | None = None
    #: ``3d parallel``: split the model (TP/PP/CP) even where sharding alone would fit.
    model_parallel: bool = False
    #: ``time is worth $2k/day`` (``no rush``: 0); ``None`` takes the default of
    #: :mod:`recommender.ranking.objective`.
    time_value_usd_per_day: float | None = None
    #: ``cheapest`` / ``asap`` in words; a stated time value wins over it.
    urgency: Urgency | None = None
    #: ``we already have 4x A100``: :attr:`hardware` is owned, priced at $0 rental.
    owned: bool = False
    #: Tokens in one pass over the dataset the user stated (``100k samples of 512 tokens``):
    #: what a budget alone buys is also said in epochs of it.
    dataset_tokens: float | None = None
    #: Tokens of one evaluation pass (``2k eval examples``), run once an epoch; ``None``: no
    #: evaluation while training (HF TrainingArguments ``eval_strategy`` defaults to "no").
    eval_tokens: float | None = None
    assumed: tuple[str, ...] = ()
    #: The first of ``assumed``: how words of the question were read (a calendar deadline's
    #: hour, a currency's rate, a corrected spelling), as opposed to the defaults applied.
    readings: tuple[str, ...] = ()
    #: What the reader must see wherever the answer is shown, e.g. a budget converted at an
    #: exchange-rate table over :data:`recommender.pricing.fx.STALE_AFTER_DAYS` old.
    warnings: tuple[str, ...] = ()
    ignored: tuple[str, ...] = ()
    #: Each phrase a rule read and what it set, in the order of the question.
    phrases: tuple[Phrase, ...] = ()
    #: The words of :attr:`ignored` that hold a number or a currency: the answer was given
    #: without them, so the CLI exits 3 (``bot.cli.EXIT_UNREAD``) and every face lists them.
    unread: tuple[str, ...] = ()
    text: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if not 1 <= self.seq_len <= 10_000_000:
            raise ValueError("sequence length must be between 1 and 10M tokens")
        if not 1 <= self.micro_batch <= 65_536:
            raise ValueError("micro-batch must be between 1 and 65536")
        if self.duration_hours is not None and not 0 < self.duration_hours <= 24 * 366:
            raise ValueError("duration must be between a minute and a year")
        if self.tokens is not None and not 0 < self.tokens <= MAX_TOKENS:
            raise ValueError("token budget must be positive and below 1e15")
        if self.budget_usd is not None and not (
            MIN_BUDGET_USD <= self.budget_usd <= MAX_BUDGET_USD
        ):
            raise ValueError("budget must be between a cent and $1B")
        if self.time_value_usd_per_day is not None and not (
            0 <= self.time_value_usd_per_day <= 1e7
        ):
            raise ValueError("the value of a day must be between $0 and $10M")
        if self.owned and (
            self.hardware is None or self.hardware.gpu_id is None or self.hardware.count is None
        ):
            raise ValueError("owned hardware names a GPU and a count")
        if not 1 <= self.group_size <= 1024:
            raise ValueError("GRPO group size must be between 1 and 1024")
        if self.completion_len is not None and not 1 <= self.completion_len <= 10_000_000:
            raise ValueError("completion length must be between 1 and 10M tokens")
        if not 0 <= self.generation_gpus <= 4096:
            raise ValueError("generation GPUs must be between 0 and 4096")
        if self.reward_params is not None and not 1e6 <= self.reward_params <= 1e13:
            raise ValueError("a reward model must have between 1M and 10T parameters")
        if not 1 <= self.lora_rank <= 4096:
            raise ValueError("LoRA rank must be between 1 and 4096")
        for what, degree, high in (
            ("tensor", self.tensor_parallel, 8),  # one HGX/DGX node: TP never crosses nodes
            ("pipeline", self.pipeline_parallel, 1024),
            ("context", self.context_parallel, 1024),
            ("expert", self.expert_parallel, 1024),
            ("interleaved pipeline", self.virtual_stages, 1024),
        ):
            if degree is not None and not 1 <= degree <= high:
                raise ValueError(f"{what} parallel degree must be between 1 and {high}")
        if self.virtual_stages not in (None, 1) and self.pipeline_parallel == 1:
            raise ValueError("an interleaved schedule needs pipeline parallelism")
        if self.offload is Offload.PARAMS and self.sharding not in (
            None,
            Sharding.ZERO3,
            Sharding.FSDP,
            Sharding.HSDP,
        ):
            raise ValueError("parameter offload needs ZeRO-3 or FSDP full sharding")

    @property
    def deadline_hours(self) -> float | None:
        """With a token budget, a stated duration is a deadline to finish within."""
        return self.duration_hours if self.tokens is not None else None

    @property
    def interruptible(self) -> bool:
        return self.spot is not SpotPolicy.NEVER
