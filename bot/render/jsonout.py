"""The versioned ``--json`` documents (schema: ``docs/schema/recommendation-v1.schema.json``).

Memory is in GiB (keys end ``_gib``), money in USD (``_usd``, ``_usd_per_hour``), time in
hours (``_hours``). Adding keys is a minor change; renaming or removing one bumps
``schema_version``.
"""

from __future__ import annotations

import math
from datetime import datetime
from typing import Any

from bot.render.summary import headline
from recommender import (
    Estimate,
    Network,
    Option,
    Plan,
    PlanObjective,
    Recommendation,
    SourceInfo,
    Work,
    Workload,
    get_gpu,
    launch_spec,
    time_breakdown,
)

__all__ = ["SCHEMA_VERSION", "estimate_document", "recommendation_document"]

SCHEMA_VERSION = 1

JSON = dict[str, Any]


def _r(value: float, digits: int = 2) -> float | None:
    if not math.isfinite(value):
        return None
    return round(value, digits)


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else moment.isoformat().replace("+00:00", "Z")


def workload_doc(w: Workload) -> JSON:
    m = w.model
    return {
        "model": {
            "name": m.name,
            "params": m.params,
            "params_billions": _r(m.billions, 3),
            "known": m.known,
            "layers": m.layers,
            "hidden": m.hidden,
            "heads": m.heads,
            "kv_heads": m.kv_heads,
            "ffn": m.ffn,
            "vocab": m.vocab,
            "experts": m.experts,
            "vision_params": m.vision_params,
            "projector_params": m.projector_params,
            "image_tokens": m.image_tokens,
            "tokens_per_audio_second": m.tokens_per_audio_second,
        },
        "method": w.method.value,
        "algorithm": w.objective.value,
        "precision": w.precision.value,
        "optimizer": w.optimizer.value,
        "seq_len": w.seq_len,
        "micro_batch": w.micro_batch,
        "checkpointing": w.checkpointing,
        "sharding": None if w.sharding is None else w.sharding.value,
        "offload": None if w.offload is None else w.offload.value,
        "parallel": {
            "tp": w.tensor_parallel,
            "pp": w.pipeline_parallel,
            "cp": w.context_parallel,
            "ep": w.expert_parallel,
            "vp": w.virtual_stages,
            "search": w.model_parallel,
        },
        "hardware": None
        if w.hardware is None
        else {"gpu": w.hardware.gpu_id, "count": w.hardware.count},
        "duration_hours": w.duration_hours,
        "tokens": w.tokens,
        "budget_usd": w.budget_usd,
        "spot": w.spot.value,
        "providers": sorted(w.providers),
        "regions": list(w.regions),
        "lora_rank": w.lora_rank if not w.method.trains_all_weights else None,
        "time_value_usd_per_day": w.time_value_usd_per_day,
        "urgency": None if w.urgency is None else w.urgency.value,
        "owned_hardware": w.owned,
        "dataset_tokens": w.dataset_tokens,
        "eval_tokens": w.eval_tokens,
        "assumed": list(w.assumed),
        "warnings": list(w.warnings),
        "ignored": list(w.ignored),
        "unread": list(w.unread),
        "phrases": [
            {"text": p.text, "sets": [{"field": k, "value": v} for k, v in p.sets]}
            for p in w.phrases
        ],
    }


def plan_doc(p: Plan) -> JSON:
    mem, par = p.memory, p.strategy.parallel
    return {
        "gpu": p.gpu_id,
        "gpu_name": get_gpu(p.gpu_id).name,
        "gpus": p.gpus,
        "gpus_per_node": p.gpus_per_node,
        "nodes": p.nodes,
        "strategy": p.strategy.describe(p.gpus),
        "sharding": p.strategy.sharding.value,
        "offload": p.strategy.offload.value,
        "checkpointing": p.strategy.checkpointing,
        "parallel": {
            "tp": par.tp,
            "pp": par.pp,
            "cp": par.cp,
            "ep": par.ep,
            "vp": par.vp,
            "dp": par.dp(p.gpus),
        },
        "fits": p.fits,
        "memory_per_gpu": {
            "weights_gib": _r(mem.weights_gib),
            "gradients_gib": _r(mem.gradients_gib),
            "optimizer_gib": _r(mem.optimizer_gib),
            "activations_gib": _r(mem.activations_gib),
            "overhead_gib": _r(mem.overhead_gib),
            "total_gib": _r(mem.total_gib),
        },
        "usable_gib": _r(p.usable_gib),
        "headroom_frac": _r(p.headroom_frac, 3),
        "headroom_gib": _r(p.headroom_gib),
        "safety_margin_gib": _r(p.margin_gib),
        "memory_safe": p.safe,
        "notes": list(p.notes),
    }


def launch_doc(o: Option, workload: Workload) -> JSON:
    """What ``gpufit launch`` needs to write this option's files: a
    :class:`recommender.LaunchSpec` as JSON (``launch_files(LaunchSpec(**doc))`` rebuilds them)."""
    return launch_spec(workload, o).as_dict()


def time_doc(o: Option, workload: Workload) -> JSON:
    """Where the option's training time goes on its layout (seconds per micro-step per
    GPU), and the global batch and efficiency the estimate assumed."""
    b = time_breakdown(workload, o.plan, Network.of(o.offer))
    return {
        "seconds_per_micro_step": {
            "compute": _r(b.compute_s, 5),
            "tensor_parallel": _r(b.tp_s, 5),
            "context_parallel": _r(b.cp_s, 5),
            "pipeline_parallel": _r(b.pp_s, 5),
            "data_parallel": _r(b.dp_s, 5),
            "expert_parallel": _r(b.ep_s, 5),
            "offload": _r(b.offload_s, 5),
            "pipeline_bubble": _r(b.bubble_s, 5),
            "optimizer": _r(b.optimizer_s, 5),
            "generation_and_host": _r(b.posttrain_s, 5),
        },
        "failures_frac": _r(b.failures_frac, 4),
        "checkpoint_eval_stalls_frac": _r(b.stalls_frac, 4),
        "global_batch_tokens": _r(b.global_batch_tokens, 0),
        "micro_batches_per_step": _r(b.micro_batches, 2),
        "compute_efficiency": _r(b.efficiency, 4),
        "tokens_per_second": _r(b.tokens_per_second, 1),
    }


def option_doc(o: Option, workload: Workload | None = None) -> JSON:
    """One option; with its ``workload``, the ``launch`` and ``time`` objects too."""
    offer = o.offer
    spot = None
    if o.spot is not None:
        s = o.spot
        spot = {
            "interruptions_per_hour": _r(s.interruptions_per_hour, 5),
            "mtbf_hours": _r(s.mtbf_hours, 1),
            "checkpoint_gib": _r(s.checkpoint_gib, 1),
            "checkpoint_write_s": _r(s.checkpoint_write_s, 0),
            "checkpoint_interval_hours": _r(s.checkpoint_interval_hours, 2),
            "restart_s": _r(s.restart_s, 0),
            "overhead_frac": _r(s.overhead_frac, 4),
            "expected_interruptions": _r(s.expected_interruptions, 2),
            "wait_for_capacity_hours": _r(s.wait_hours, 2),
            "wait_to_start_hours": _r(s.start_wait_hours, 2),
            "optimistic_hours": _r(s.optimistic_hours, 3),
            "pessimistic_hours": _r(s.pessimistic_hours, 3),
            "pessimistic_interruptions": _r(
                s.pessimistic.expected_interruptions if s.pessimistic else 0.0, 2
            ),
            "source": s.source,
        }
    return {
        "rank": o.rank,
        "provider": offer.provider,
        "instance_type": offer.instance_type,
        "region": offer.region,
        "zone": offer.zone or None,
        "gpu": offer.gpu_id,
        "gpus_per_node": offer.gpu_count,
        "nodes": o.nodes,
        "total_gpus": o.total_gpus,
        "spot": offer.spot,
        "interconnect": offer.link.value,
        "fabric": offer.fabric.value,
        "price_usd_per_hour": _r(o.price_usd_per_hour, 4),
        "price_usd_per_gpu_hour": _r(offer.price_usd_per_gpu_hour, 4),
        "hours": _r(o.hours, 3),
        "expected_hours": _r(o.expected_hours, 3),
        "billed_hours": _r(o.billed_hours, 3),
        "cost_usd": _r(o.cost_usd),
        "storage_usd": _r(o.storage_usd),
        "expected_cost_usd": _r(o.expected_cost_usd),
        "pessimistic_cost_usd": _r(o.pessimistic_cost_usd),
        "pessimistic_hours": _r(o.pessimistic_wall_hours, 3),
        "spot_worst_cost_usd": _r(o.spot_worst_cost_usd),
        "spot_worst_hours": _r(o.spot_worst_wall_hours, 3),
        "lead_hours": _r(o.lead_hours, 3),
        "meets_deadline": o.meets_deadline,
        "tokens": _r(o.tokens, 0),
        "usd_per_billion_tokens": _r(o.usd_per_btok),
        "hours_per_billion_tokens": _r(o.hours_per_btok, 3),
        "over_duration": o.over_duration,
        "layout": plan_doc(o.plan),
        "spot_economics": spot,
        "caveats": [
            {"kind": c.kind.value, "severity": c.severity.value, "text": c.text} for c in o.caveats
        ],
        "price_source": offer.source,
        **(
            {}
            if workload is None
            else {"launch": launch_doc(o, workload), "time": time_doc(o, workload)}
        ),
    }


def source_doc(s: SourceInfo, now: datetime) -> JSON:
    return {
        "name": s.name,
        "as_of": _iso(s.as_of),
        "fetched_at": _iso(s.fetched_at),
        "age_hours": _r(s.age_hours(now), 1),
        "rows": s.rows,
        "rejected": s.rejected,
        "rejections": list(s.rejections),
        "error": s.error,
        "bundled": s.bundled,
    }


def work_doc(work: Work) -> JSON:
    """What every option is priced for (``tokens`` null: compared per billion tokens)."""
    ref = work.reference
    reference = None
    if ref is not None:
        reference = {
            "provider": ref.offer.provider,
            "instance_type": ref.offer.instance_type,
            "gpu": ref.plan.gpu_id,
            "gpus": ref.plan.gpus,
            "nodes": ref.plan.nodes,
            "tokens_per_hour": _r(ref.tokens_per_hour, 0),
        }
    return {
        "basis": work.basis.value,
        "tokens": None if work.tokens is None else _r(work.tokens, 0),
        "duration_hours": work.duration_hours,
        "unit": "usd_per_billion_tokens",
        "reference": reference,
    }


def objective_doc(objective: PlanObjective) -> JSON:
    """What the ranking optimised (:mod:`recommender.ranking.objective`)."""
    return {
        "kind": objective.kind.value,
        "deadline_hours": objective.deadline_hours,
        "time_value_usd_per_day": objective.time_value_usd_per_day,
        "time_value_stated": objective.time_value_stated,
        "urgency": None if objective.urgency is None else objective.urgency.value,
        "budget_usd": objective.budget_usd,
        "text": objective.text,
    }


def recommendation_document(rec: Recommendation, *, query: str) -> JSON:
    """The ``gpufit ask --json`` document."""
    budget = None
    if rec.workload.budget_usd is not None:
        budget = {
            "budget_usd": rec.workload.budget_usd,
            "within_budget": rec.over_budget is None,
            "cheapest_usd": None
            if rec.over_budget is None
            else _r(rec.over_budget.cheapest.expected_cost_usd),
            "gap_usd": None if rec.over_budget is None else _r(rec.over_budget.gap_usd),
        }
    alternative = None
    if rec.alternative is not None:
        alternative = {
            "method": rec.alternative.method.value,
            "reason": rec.alternative.reason,
            "option": option_doc(rec.alternative.option),
        }
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "recommendation",
        "generated_at": _iso(rec.generated_at),
        "query": query,
        "answer": headline(rec),
        "workload": workload_doc(rec.workload),
        "hours_basis": rec.hours_basis.value,
        "work": None if rec.work is None else work_doc(rec.work),
        "feasible_options": rec.feasible,
        "options": [option_doc(o, rec.workload) for o in rec.options],
        "budget": budget,
        "alternative": alternative,
        "objective": None if rec.objective is None else objective_doc(rec.objective),
        "fastest": None if rec.fastest is None else option_doc(rec.fastest, rec.workload),
        "cheapest": None if rec.cheapest is None else option_doc(rec.cheapest, rec.workload),
        "empty_reasons": list(rec.empty_reasons),
        "layouts": [plan_doc(p) for p in rec.layouts],
        "sources": [source_doc(s, rec.generated_at) for s in rec.sources],
        "notes": list(rec.notes),
    }


def estimate_document(est: Estimate, *, query: str, now: datetime) -> JSON:
    """The ``gpufit estimate --json`` document."""
    return {
        "schema_version": SCHEMA_VERSION,
        "kind": "estimate",
        "generated_at": _iso(now),
        "query": query,
        "workload": workload_doc(est.workload),
        "hardware": None if est.hardware is None else plan_doc(est.hardware),
        "layouts": [plan_doc(p) for p in est.layouts],
    }
