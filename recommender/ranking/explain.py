"""What an answer says about itself: the objective and the work it priced, how far the
first plan is from the deadline, and, when there is no option, each cause by name."""

from __future__ import annotations

from collections.abc import Sequence

from recommender import providers
from recommender.estimation.memory import HEADROOM_FRAC, HEADROOM_MIN_GIB
from recommender.estimation.topology import Plan
from recommender.gpus import get_gpu
from recommender.pricing.catalog import Catalog
from recommender.pricing.costing import Option
from recommender.ranking.objective import ObjectiveKind, PlanObjective
from recommender.ranking.selection import Fitted, allows_shape, in_regions
from recommender.ranking.work import HoursBasis, Work
from recommender.units import hours_text
from recommender.workload import SpotPolicy, Workload

__all__ = ["answer_notes", "fmt_tokens", "nodes_text", "why_empty"]

#: How to add prices, said whenever the catalog lacks what was asked for.
_ADD_CATALOG = (
    "add prices with `--catalog FILE_OR_URL` or GPUFIT_FEEDS (SkyPilot vms.csv, gpuhunt "
    "CSV or gpufit JSON; docs/feed-format.md)"
)


def answer_notes(
    work: Work,
    chosen: Sequence[Option],
    *,
    any_safe: bool,
    objective: PlanObjective,
    owned_plan: Plan | None = None,
    unbounded: Option | None = None,
    dataset_tokens: float | None = None,
) -> list[str]:
    """What the answer is priced for, and a word when the first plan misses the deadline,
    what the plan within a budget gives up (against ``unbounded``, the first plan without
    the budget), when the team's GPUs cannot hold the job, or
    when no plan keeps the memory margin."""
    notes: list[str] = []
    if owned_plan is not None and not owned_plan.fits:
        notes.append(
            f"your {owned_plan.gpus}× {get_gpu(owned_plan.gpu_id).name} cannot hold this job "
            f"({owned_plan.memory.total_gib:.0f} GiB per GPU needed, "
            f"{owned_plan.usable_gib:.0f} usable): the options are rented"
        )
    if work.basis is HoursBasis.BUDGET and chosen:
        first = chosen[0]
        epochs = (
            f" ({first.tokens / dataset_tokens:,.1f} epochs of your dataset)"
            if dataset_tokens
            else ""
        )
        notes.append(
            f"${objective.budget_usd or 0:,.0f} buys {fmt_tokens(first.tokens)} tokens{epochs} "
            f"in {hours_text(first.wall_hours)} on #1; each option is priced for what the "
            "budget buys on it (say `on 2B tokens` to price set work)"
        )
    elif work.basis is HoursBasis.DEFAULT and objective.kind is not ObjectiveKind.OWNED_HARDWARE:
        notes.append(
            "no duration or token budget given: options are ranked by cost per billion "
            "tokens trained; totals are for one day of running "
            "(say `2 days` or `on 2B tokens`)"
        )
    elif work.basis is HoursBasis.DURATION and work.reference is not None:
        ref, tokens = work.reference, work.tokens or 0.0
        late = sum(o.over_duration for o in chosen)
        marked = f"; {late} shown take longer and are marked" if late else ""
        if work.budget_capped:
            bought = (
                f"what the budget buys within {hours_text(work.duration_hours or 0.0)} on "
                f"{nodes_text(ref.plan)} (reference): {fmt_tokens(tokens)} tokens"
            )
        else:
            bought = (
                f"{hours_text(work.duration_hours or 0.0)} ≈ {fmt_tokens(tokens)} tokens on "
                f"{nodes_text(ref.plan)} (reference)"
            )
        notes.append(
            f"{bought}; every option is priced for that work{marked}. "
            "Say `on 2B tokens` to set the work yourself"
        )
    deadline = objective.deadline_hours
    if chosen and deadline is not None and not chosen[0].meets_deadline:
        first = chosen[0]
        notes.append(
            f"no plan meets the {hours_text(deadline)} deadline: the fastest takes "
            f"{hours_text(first.pessimistic_finish_hours)} at worst on {nodes_text(first.plan)} "
            f"(${first.expected_cost_usd:,.0f}); more nodes no longer speed it up enough"
        )
    budget = objective.budget_usd
    if chosen and budget is not None and objective.kind is ObjectiveKind.CHEAPEST_WITHIN_BUDGET:
        first = chosen[0]
        gives_up = ""
        if unbounded is not None and unbounded.wall_hours < first.wall_hours:
            over = unbounded.expected_cost_usd - budget
            beyond = f", ${over:,.0f} over the budget" if over > 0 else ""
            gives_up = (
                f"; it gives up time: without the budget the first plan would take "
                f"{hours_text(unbounded.wall_hours)} for ${unbounded.expected_cost_usd:,.0f}"
                f"{beyond}"
            )
        notes.append(
            f"fits the ${budget:,.0f} budget: #1 costs ${first.expected_cost_usd:,.0f} "
            f"(${first.pessimistic_cost_usd:,.0f} at worst) and takes "
            f"{hours_text(first.wall_hours)}{gives_up}"
        )
    if chosen and not any_safe:
        notes.append(
            f"no layout keeps the memory safety margin ({HEADROOM_FRAC * 100:.0f} % of GPU "
            f"memory, at least {HEADROOM_MIN_GIB:.0f} GiB) for this job: the options shown "
            "are tight"
        )
    return notes


def why_empty(
    workload: Workload,
    catalog: Catalog,
    fitted: Sequence[Fitted],
    bests: Sequence[Option],
    holding: Sequence[Plan],
    objective: PlanObjective,
) -> tuple[str, ...]:
    """Each cause of an answer with no option, one line each: the GPU or the cloud is not in
    the catalog; the filters leave no offer; the job fits on no allowed offer (with the
    closest layout); the budget buys none (with the cheapest plan)."""
    offers = [g.offers[0] for g in catalog.groups]
    loaded = ", ".join(s.name for s in catalog.sources) or "none"
    reasons: list[str] = []
    hw = workload.hardware
    if hw is not None and hw.gpu_id is not None and all(o.gpu_id != hw.gpu_id for o in offers):
        reasons.append(
            f"no loaded catalog sells {get_gpu(hw.gpu_id).name} (catalogs: {loaded}); "
            + _ADD_CATALOG
        )
    sold = {o.provider.lower() for o in offers}
    missing = sorted(p for p in workload.providers if p not in sold)
    if missing and not sold & set(workload.providers):
        names = ", ".join(_cloud_name(p) for p in missing)
        reasons.append(
            f"no loaded catalog has prices from {names} (catalogs: {loaded}; "
            f"clouds priced: {', '.join(sorted(sold)) or 'none'}); " + _ADD_CATALOG
        )
    allowed = [
        g.offers[0]
        for g in catalog.groups
        if allows_shape(workload, g.offers[0]) and any(in_regions(workload, o) for o in g.offers)
    ]
    if not reasons and not allowed:
        reasons.append(f"your filters leave no offer: {_filters(workload)}; relax one of them")
    if allowed and not fitted:
        closest = min(holding, key=lambda p: p.gpus, default=None)
        near = (
            f"; the smallest layout that holds it is {closest.describe()}"
            if closest is not None
            else "; no GPU gpufit knows holds it on up to 2,048 nodes"
        )
        shapes = f"{len(allowed)} instance shape{'s' if len(allowed) != 1 else ''}"
        where = (
            f"on the {hw.count} GPU{'s' if hw.count != 1 else ''} you named ({shapes})"
            if hw is not None and hw.count is not None
            else f"in any offer allowed ({shapes}, on as many nodes as their fabric allows)"
        )
        reasons.append(f"the job does not fit in the memory {where}{near}")
    if fitted and bests and objective.budget_usd is not None:
        cheapest = min(bests, key=lambda p: p.expected_cost_usd)
        reasons.append(
            f"no plan fits the ${objective.budget_usd:,.0f} budget: the cheapest is "
            f"${cheapest.expected_cost_usd:,.0f} on {nodes_text(cheapest.plan)} "
            f"({cheapest.offer.provider}, {hours_text(cheapest.wall_hours)})"
        )
    if not reasons:
        reasons.append("no offer in the catalog can run this job as asked")
    return tuple(reasons)


def _cloud_name(provider_id: str) -> str:
    """A cloud as the user may know it: ``DigitalOcean`` for ``do``; the id where the name
    only capitalises it (``aws``), as the list of clouds priced spells them."""
    name = providers.get(provider_id).name
    return provider_id if name.lower() == provider_id else name


def _filters(workload: Workload) -> str:
    parts: list[str] = []
    if workload.providers:
        parts.append("clouds " + ", ".join(sorted(workload.providers)))
    if workload.regions:
        parts.append("regions " + ", ".join(workload.regions))
    if workload.spot is SpotPolicy.ONLY:
        parts.append("spot only")
    elif workload.spot is SpotPolicy.NEVER:
        parts.append("no spot")
    hw = workload.hardware
    if hw is not None:
        gpu = get_gpu(hw.gpu_id).name if hw.gpu_id is not None else "any GPU"
        count = f"{hw.count}× " if hw.count is not None else ""
        parts.append(f"hardware {count}{gpu}")
    return "; ".join(parts) or "none stated"


def nodes_text(plan: Plan) -> str:
    """``8× H100 SXM 80GB`` or ``3 nodes × 8 H100 SXM 80GB``."""
    name = get_gpu(plan.gpu_id).name
    if plan.nodes > 1:
        return f"{plan.nodes} nodes × {plan.gpus_per_node} {name}"
    return f"{plan.gpus}× {name}"


def fmt_tokens(tokens: float) -> str:
    for unit, scale in (("T", 1e12), ("B", 1e9), ("M", 1e6)):
        if tokens >= scale:
            return f"{tokens / scale:.1f}{unit}"
    return f"{tokens:.0f}"
