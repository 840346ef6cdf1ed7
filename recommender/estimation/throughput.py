"""Training time from a token budget: tokens ÷ the layout's tokens per second.

The rate comes from :mod:`recommender.estimation.steptime`: one micro-step's time from the
workload's FLOPs at an achievable share of the dense peak (by GPU generation and hidden size), the
HBM-bound weight reads at small batches, QLoRA's dequantisation, the sharding and offload traffic
over the actual links (partly hidden behind compute), the amortised optimizer step, and a goodput
factor for whole runs (checkpoints, evaluation, failures at scale).

FLOPs per token are 6·N for full training (forward 2N, backward 4N; Kaplan et al. 2020),
4·N for LoRA/QLoRA (frozen weights need no weight gradient), plus 2·N when full activation
checkpointing re-runs the forward, plus causal attention with flash kernels, 6·L·h·s (half
of PaLM's 12·L·h·s, Chowdhery et al. 2022, App. B), ×4/3 with recomputation. N is the
parameters a token passes through, without the untied input embedding (a lookup).
"""

from __future__ import annotations

from dataclasses import dataclass

from recommender.estimation.steptime import (
    StepTime,
    TimeBreakdown,
    dense_tflops,
    hw_flops_per_token,
    step_time,
)
from recommender.estimation.topology import Plan
from recommender.gpus import GpuSpec, IntraNode, get_gpu
from recommender.pricing.offers import Fabric, Offer
from recommender.workload import Precision, Workload

__all__ = [
    "Network",
    "flops_per_token",
    "mfu",
    "peak_tflops",
    "plan_step",
    "time_breakdown",
    "tokens_per_hour",
    "train_hours",
]

# ------------------------------------------------------------------ FLOPs


def flops_per_token(workload: Workload, *, checkpointing: bool) -> float:
    """Executed FLOPs per trained token (with recomputation, that is hardware FLOPs)."""
    dense, attention = hw_flops_per_token(workload, checkpointing)
    return dense + attention


def peak_tflops(gpu: GpuSpec, precision: Precision) -> float:
    """Dense peak TFLOP/s for the precision: the FP8 peak where the GPU has FP8, else the
    16- or 32-bit rate its matmuls run at (:func:`recommender.estimation.steptime.dense_tflops`)."""
    if precision is Precision.FP8_MIXED and gpu.supports_fp8 and gpu.fp8_tflops:
        return float(gpu.fp8_tflops)
    return dense_tflops(gpu, precision)


@dataclass(frozen=True, slots=True)
class Network:
    """How a layout's GPUs talk: the link inside a node, and the fabric (with its rate, Gbit/s
    per node, where the offer states one) between nodes."""

    link: IntraNode
    fabric: Fabric
    fabric_gbps: float | None = None

    @classmethod
    def of(cls, offer: Offer) -> Network:
        """The network an offer's instances have."""
        return cls(offer.link, offer.fabric, offer.fabric_gbps)

    @classmethod
    def typical(cls, link: IntraNode, *, fast_fabric: bool) -> Network:
        """A network known only as fast or not: InfiniBand, or plain Ethernet."""
        return cls(link, Fabric.INFINIBAND if fast_fabric else Fabric.ETHERNET)


def plan_step(
    workload: Workload,
    plan: Plan,
    network: Network,
    *,
    global_batch_tokens: float | None = None,
) -> StepTime:
    """One micro-step of ``plan`` on ``network``."""
    return step_time(
        workload,
        get_gpu(plan.gpu_id),
        plan.strategy,
        gpus=plan.gpus,
        nodes=plan.nodes,
        link=network.link,
        fabric=network.fabric,
        fabric_gbps=network.fabric_gbps,
        global_batch_tokens=global_batch_tokens,
    )


def time_breakdown(workload: Workload, plan: Plan, network: Network) -> TimeBreakdown:
    """Where the chosen layout's time goes, with the global batch and efficiency assumed."""
    return plan_step(workload, plan, network).breakdown()


def mfu(workload: Workload, plan: Plan, network: Network) -> float:
    """Model FLOPs utilisation the step model implies (no recompute, end to end)."""
    step = plan_step(workload, plan, network)
    peak = peak_tflops(get_gpu(plan.gpu_id), workload.precision) * 1e12 * plan.gpus
    return step.tokens_per_second * flops_per_token(workload, checkpointing=False) / peak


def tokens_per_hour(
    workload: Workload,
    plan: Plan,
    network: Network,
    *,
    global_batch_tokens: float | None = None,
) -> float:
    """Training tokens the whole layout processes per hour, averaged over a whole run."""
    step = plan_step(workload, plan, network, global_batch_tokens=global_batch_tokens)
    return step.tokens_per_second * 3600


def train_hours(
    workload: Workload,
    plan: Plan,
    network: Network,
    *,
    global_batch_tokens: float | None = None,
) -> float | None:
    """Hours to train on the workload's token budget; ``None`` without a budget."""
    if workload.tokens is None:
        return None
    rate = tokens_per_hour(workload, plan, network, global_batch_tokens=global_batch_tokens)
    return workload.tokens / rate
