"""Test data builders with sensible defaults: override only what a test is about."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from recommender.models import KNOWN_MODELS, Architecture, infer_architecture, lookup_model
from recommender.offers import Catalog, Fabric, Offer, SourceInfo
from recommender.workload import Method, Optimizer, Precision, Workload

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)
AS_OF = datetime(2026, 11, 20, 0, 0, tzinfo=UTC)
SOURCE = "test feed"


def model(name: str | float = "Llama 3 8B") -> Architecture:
    """A known architecture by name, or an inferred one from a parameter count."""
    if isinstance(name, str):
        arch = lookup_model(name)
        assert arch is not None, name
        return arch
    return infer_architecture(name)


def workload(**overrides: Any) -> Workload:
    """A full fine-tune of Llama 3 8B, bf16 mixed AdamW, seq 2048, micro-batch 1."""
    m = overrides.pop("model", None)
    arch = model(m) if not isinstance(m, Architecture) and m is not None else m
    base = Workload(
        model=arch or KNOWN_MODELS[3],
        method=Method.FULL,
        precision=Precision.BF16_MIXED,
        optimizer=Optimizer.ADAMW,
        seq_len=2048,
        micro_batch=1,
    )
    return replace(base, **overrides)


def offer(**overrides: Any) -> Offer:
    """One on-demand 8×H100 SXM instance on AWS at $55/h in us-east-1."""
    base = Offer(
        provider="aws",
        instance_type="p5.48xlarge",
        gpu_id="H100-SXM-80GB",
        gpu_count=8,
        price_usd_per_hour=55.0,
        spot=False,
        region="us-east-1",
        fabric=Fabric.EFA,
        fabric_gbps=3200,
        source=SOURCE,
    )
    return replace(base, **overrides)


def catalog(*offers: Offer, as_of: datetime = AS_OF, error: str | None = None) -> Catalog:
    names = sorted({o.source for o in offers} or {SOURCE})
    sources = tuple(
        SourceInfo(name=n, as_of=as_of, fetched_at=as_of, rows=len(offers), error=error)
        for n in names
    )
    return Catalog(tuple(offers), sources)
