"""Plain-text pieces every renderer shares: money, durations, token counts, layouts, memory.

Pure functions; the terminal, Block Kit and alert renderers all call these so an answer reads
the same wherever it is shown.
"""

from __future__ import annotations

import math

from recommender import (
    Fabric,
    HoursBasis,
    IntraNode,
    Network,
    Objective,
    Offload,
    Option,
    Plan,
    Recommendation,
    Workload,
    get_gpu,
    hours_text,
    providers_described,
    time_breakdown,
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
    "time_text",
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


_LINK_NAMES = {IntraNode.NVLINK: "NVLink", IntraNode.BRIDGE: "NVLink bridges/PCIe"}
_FABRIC_NAMES = {
    Fabric.INFINIBAND: "InfiniBand",
    Fabric.EFA: "EFA",
    Fabric.ROCE: "RoCE",
    Fabric.ETHERNET: "Ethernet",
}


def _seconds(s: float) -> str:
    return f"{s:.2f} s" if s >= 1 else f"{s * 1000:.0f} ms" if s >= 0.001 else f"{s * 1e6:.0f} µs"


def _share(frac: float) -> str:
    return f"{frac * 100:.1f} %" if frac >= 0.001 else "under 0.1 %"


def time_text(option: Option, workload: Workload) -> str:
    """Where the option's step time goes on its layout (compute, each kind of exposed
    communication on the link or fabric it crosses, the pipeline bubble, the optimizer), the
    run's stalls, and the global batch and efficiency the estimate assumed."""
    plan, offer = option.plan, option.offer
    b = time_breakdown(workload, plan, Network.of(offer))
    par = plan.strategy.parallel
    link = _LINK_NAMES.get(offer.link, "PCIe")
    fabric = _FABRIC_NAMES.get(offer.fabric, link) if plan.nodes > 1 else link

    def on(span: int) -> str:  # ranks within one node talk over its link, else the fabric
        return link if span <= plan.gpus_per_node else fabric

    parts = [f"compute {_seconds(b.compute_s)}"]
    for label, degree, span, seconds in (
        ("TP", par.tp, par.tp, b.tp_s),
        ("CP", par.cp, par.tp * par.cp, b.cp_s),
        ("EP", par.ep, par.ep, b.ep_s),
        ("PP", par.pp, plan.gpus, b.pp_s),
        ("DP", par.dp(plan.gpus), plan.gpus, b.dp_s),
    ):
        if degree > 1:
            parts.append(f"{label} {_seconds(seconds)} on {on(span)}")
    if plan.strategy.offload is not Offload.NONE:
        parts.append(f"offload copies {_seconds(b.offload_s)} over PCIe")
    if par.pp > 1:
        parts.append(f"bubble {_seconds(b.bubble_s)}")
    parts.append(f"optimizer {_seconds(b.optimizer_s)}")
    if b.posttrain_s > 0.001 * b.compute_s:  # not float noise
        parts.append(f"rollouts and host overhead {_seconds(b.posttrain_s)}")
    total = b.compute_s + b.tp_s + b.cp_s + b.ep_s + b.pp_s + b.dp_s + b.offload_s
    total += b.bubble_s + b.optimizer_s + b.posttrain_s
    return (
        f"a micro-step takes {_seconds(total)}: "
        + ", ".join(parts)
        + f"; checkpoints, evaluation and data stalls {b.stalls_frac * 100:.0f} % and failures "
        f"{_share(b.failures_frac)} of the run; global batch "
        f"{tokens_text(b.global_batch_tokens)} tokens ({b.micro_batches:.0f} micro-batches per "
        f"step), matmuls at {b.efficiency * 100:.0f} % of the dense peak"
    )
