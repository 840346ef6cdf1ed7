"""The training workload: what the user wants to run, with every default made explicit.

:class:`Workload` is the validated, frozen result of parsing free text (see
:mod:`recommender.parse`). Anything the user states overrides a default; each default
that was applied is recorded in ``assumed`` so the reply can show it, and each word that
was not understood is recorded in ``ignored`` so nothing is silently dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from recommender.models import Architecture

__all__ = [
    "HardwareRequest",
    "Method",
    "Offload",
    "Optimizer",
    "Precision",
    "Sharding",
    "SpotPolicy",
    "Workload",
]


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


class Offload(StrEnum):
    NONE = "none"
    OPTIMIZER = "optimizer"  # optimizer states (and their step) on the CPU
    PARAMS = "params"  # optimizer states and parameters on the CPU (ZeRO-3/FSDP only)


class SpotPolicy(StrEnum):
    ALLOW = "allow"  # show spot and on-demand, with the spot caveats
    ONLY = "only"
    NEVER = "never"  # the job cannot be interrupted


@dataclass(frozen=True, slots=True)
class HardwareRequest:
    """Hardware the user named: ``on 8x H100`` (gpu + count), ``single gpu`` (count only)."""

    gpu_id: str | None
    count: int | None

    def __post_init__(self) -> None:
        if self.gpu_id is None and self.count is None:
            raise ValueError("a hardware request names a GPU, a count or both")
        if self.count is not None and not 1 <= self.count <= 4096:
            raise ValueError("GPU count must be between 1 and 4096")


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
    #: Model-parallel degrees the user fixed (``tp 8``, ``pp 4``, ``cp 2``, ``ep 8``, ``vp 5``);
    #: ``None`` lets the search decide (see :mod:`recommender.parallelism`).
    tensor_parallel: int | None = None
    pipeline_parallel: int | None = None
    context_parallel: int | None = None
    expert_parallel: int | None = None
    virtual_stages: int | None = None
    #: ``3d parallel``: split the model (TP/PP/CP) even where sharding alone would fit.
    model_parallel: bool = False
    assumed: tuple[str, ...] = ()
    ignored: tuple[str, ...] = ()
    text: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if not 1 <= self.seq_len <= 10_000_000:
            raise ValueError("sequence length must be between 1 and 10M tokens")
        if not 1 <= self.micro_batch <= 65_536:
            raise ValueError("micro-batch must be between 1 and 65536")
        if self.duration_hours is not None and not 0 < self.duration_hours <= 24 * 366:
            raise ValueError("duration must be between a minute and a year")
        if self.tokens is not None and not 0 < self.tokens <= 1e15:
            raise ValueError("token budget must be positive and below 1e15")
        if self.budget_usd is not None and not 0 < self.budget_usd <= 1e9:
            raise ValueError("budget must be positive and below $1B")
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
