"""Plain-text pieces every renderer shares: money, durations, token counts, layouts, memory.

Pure functions; the terminal, Block Kit and alert renderers all call these so an answer reads
the same wherever it is shown.
"""

from __future__ import annotations

import math

from recommender import (
    HoursBasis,
    Objective,
    Option,
    Plan,
    Recommendation,
    Workload,
    get_gpu,
    hours_text,
    providers_described,
)

__all__ = [
    "describe_workload",
    "finish_text",
    "free_text",
    "layout_text",
    "memory_text",
    "money",
    "per_btok_text",
    "scaling_lines",
    "tokens_text",
    "training_text",
    "up_to_text",
]


def money(usd: float) -> str:
    if usd >= 100:
        return f"${usd:,.0f}"
    return f"${usd:,.2f}"


def tokens_text(tokens: float) -> str:
    for unit, scale in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if tokens >= scale:
            return f"{tokens / scale:.1f}{unit}"
    return f"{tokens:.0f}"


def per_btok_text(usd: float) -> str:
    """``$41 per B tokens``: an option's cost per unit of work."""
    if not math.isfinite(usd):
        return "- per B tokens"
    return f"{money(usd)} per B tokens"


def finish_text(option: Option, basis: HoursBasis) -> str:
    """Time to finish the work (``5.7B tokens in 2.1 d``), with the pessimistic hours where
    they differ (``, up to 4.2 d``: a fine-tune's range top, spot's worst case); on the
    default basis, where options differ in what they train, the time for one billion
    tokens."""
    if basis is HoursBasis.DEFAULT:
        return f"1B tokens in {hours_text(option.hours_per_btok)}"
    # A budget alone (each option trains what it buys) or set work: what and how long.
    return f"{tokens_text(option.tokens)} tokens in {hours_text(option.wall_hours)}" + up_to_text(
        option
    )


def up_to_text(option: Option) -> str:
    """``, up to 4.2 d``: the option's pessimistic hours, when they read differently from
    the expected ones ("" otherwise)."""
    worst = hours_text(option.pessimistic_wall_hours)
    return f", up to {worst}" if worst != hours_text(option.wall_hours) else ""


def free_text(plan: Plan) -> str:
    """Memory left free per GPU, ``15.2 GiB free (19 %)``, or that it is under the margin."""
    free = max(plan.headroom_gib, 0.0)
    if plan.safe:
        return f"{free:.1f} GiB free ({plan.headroom_frac * 100:.0f} %)"
    return f"only {free:.1f} GiB free, under the {plan.margin_gib:.1f} GiB safety margin"


def training_text(w: Workload) -> str:
    """Which weights train, and with which algorithm when it is not plain SFT: ``LoRA``,
    ``DPO · QLoRA`` (issue #35: the algorithm is its own field, shown beside the method)."""
    if w.objective is Objective.SFT:
        return w.method.label
    return f"{w.objective.label} · {w.method.label}"


def describe_workload(w: Workload) -> str:
    parts = [w.model.name, training_text(w), w.precision.label, w.optimizer.value]
    parts.append(f"seq {w.seq_len}, micro-batch {w.micro_batch}")
    if w.hardware is not None:
        count = w.hardware.count
        if w.hardware.gpu_id is not None:
            gpu = get_gpu(w.hardware.gpu_id).name
            parts.append(f"on {count}× {gpu}" if count else f"on {gpu}")
        elif count is not None:
            parts.append("on a single GPU" if count == 1 else f"on {count} GPUs")
    if w.tokens is not None:
        parts.append(f"{tokens_text(w.tokens)} tokens")
    if w.duration_hours is not None:
        label = "deadline" if w.tokens is not None else "for"
        parts.append(f"{label} {hours_text(w.duration_hours)}")
    if w.budget_usd is not None:
        parts.append(f"budget {money(w.budget_usd)}")
    if w.spot.value != "allow":
        parts.append(f"spot: {w.spot.value}")
    if w.providers:
        parts.append("providers: " + providers_described(w.providers))
    if w.regions:
        parts.append("regions: " + ", ".join(w.regions))
    return " · ".join(parts)


def layout_text(plan: Plan) -> str:
    """``8× H100 SXM 80GB, ZeRO-2`` or ``2 nodes × 8 H100 SXM 80GB, FSDP full shard``."""
    nodes = f"{plan.nodes} nodes × {plan.gpus_per_node}" if plan.nodes > 1 else f"{plan.gpus}×"
    return f"{nodes} {get_gpu(plan.gpu_id).name}, {plan.strategy.describe(plan.gpus)}"


def memory_text(plan: Plan) -> str:
    """Per-GPU memory with its breakdown and the headroom left."""
    m = plan.memory
    return (
        f"{m.total_gib:.1f} of {plan.usable_gib:.1f} GiB per GPU "
        f"(weights {m.weights_gib:.1f}, gradients {m.gradients_gib:.1f}, optimizer "
        f"{m.optimizer_gib:.1f}, activations {m.activations_gib:.1f}, overhead "
        f"{m.overhead_gib:.1f}; headroom {plan.headroom_frac * 100:.0f} %)"
    )


def scaling_lines(rec: Recommendation) -> list[str]:
    """The fastest sensible plan and the cheapest one, when they differ from the first."""
    out: list[str] = []
    for label, option in (("fastest sensible", rec.fastest), ("cheapest", rec.cheapest)):
        if option is None:
            continue
        o = option.offer
        kind = o.kind
        out.append(
            f"{label}: {layout_text(option.plan)} on {o.provider} {o.instance_type} ({kind}), "
            f"{hours_text(option.wall_hours)} for {money(option.expected_cost_usd)}"
        )
    return out
