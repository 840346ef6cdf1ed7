"""The precision a GPU can actually run: no bf16 before Ampere, no FP8 before Ada/Hopper.

A workload asks for a precision; a GPU without it trains in the closest regime it has, and
the plan says so. The memory of that regime is what counts on that GPU (pure bf16 becomes
fp16 mixed precision with fp32 master weights, which holds more bytes per parameter).
"""

from __future__ import annotations

from recommender.gpus import GpuSpec
from recommender.workload import Precision

__all__ = ["precision_on"]

# bf16 needs Ampere or later; V100 (Volta), T4 (Turing) and P100 (Pascal) train in fp16
# with dynamic loss scaling (Micikevicius et al. 2018; PyTorch AMP GradScaler). Pure fp16
# without an fp32 master copy diverges (the same paper, §3.1), so pure bf16 becomes fp16
# mixed precision. FP8 tensor cores exist from Ada and Hopper on (NVIDIA Transformer
# Engine docs); ``GpuSpec.supports_fp8``/``supports_bf16`` come from data/gpus.csv.
_NO_BF16_NOTE = (
    "no bf16 on this GPU (Ampere and later only): fp16 mixed precision with loss scaling "
    "and fp32 master weights{extra}"
)
_NO_FP8_NOTE = "no FP8 on this GPU (Ada/Hopper and later only): {regime} instead"


def precision_on(precision: Precision, gpu: GpuSpec) -> tuple[Precision, str | None]:
    """The precision ``gpu`` trains ``precision`` in, and a note when it differs (the note
    depends only on the two precisions, so plans that share it may share a GPU's memo)."""
    if precision is Precision.FP8_MIXED and not gpu.supports_fp8:
        if gpu.supports_bf16:
            return Precision.BF16_MIXED, _NO_FP8_NOTE.format(regime="bf16 mixed precision")
        return Precision.FP16_MIXED, _NO_FP8_NOTE.format(
            regime="fp16 mixed precision with loss scaling (no bf16 either)"
        )
    if gpu.supports_bf16 or precision in (Precision.FP32, Precision.FP16_MIXED):
        return precision, None
    extra = (
        ", which holds more memory than the pure bf16 asked for"
        if precision is Precision.BF16_TRUE
        else ""
    )
    return Precision.FP16_MIXED, _NO_BF16_NOTE.format(extra=extra)
