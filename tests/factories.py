"""Test data builders with sensible defaults: override only what a test is about."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from recommender.errors import WorkloadError
from recommender.feeds.base import ParsedFeed
from recommender.models import KNOWN_MODELS, Architecture, infer_architecture, lookup_model
from recommender.parsing.parse import parse_workload
from recommender.pricing.catalog import Catalog
from recommender.pricing.offers import Fabric, Offer, SourceInfo
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
    return Catalog.of(tuple(offers), sources)


# ------------------------------------------------------------------ named offers
# Instance shapes the ranking, property and launch tests share (prices as listed when written).

H100_OD = offer()
H100_SPOT = offer(spot=True, price_usd_per_hour=25.0, zone="use1-az4")
A100_GCP = offer(
    provider="gcp",
    instance_type="a2-ultragpu-8g",
    gpu_id="A100-SXM-80GB",
    price_usd_per_hour=40.0,
    region="us-central1",
    fabric=Fabric.NONE,
)
L4_SINGLE = offer(
    provider="aws",
    instance_type="g6.xlarge",
    gpu_id="L4",
    gpu_count=1,
    price_usd_per_hour=0.80,
    fabric=Fabric.NONE,
)
L40S_4X = offer(
    provider="aws",
    instance_type="g6e.12xlarge",
    gpu_id="L40S",
    gpu_count=4,
    price_usd_per_hour=10.5,
    fabric=Fabric.NONE,
)
LAMBDA_H100 = offer(
    provider="lambda",
    instance_type="gpu_8x_h100_sxm5",
    price_usd_per_hour=23.92,
    region="us-east-1",
    fabric=Fabric.INFINIBAND,
)
RUNPOD_A100 = offer(
    provider="runpod",
    instance_type="1x A100 80GB",
    gpu_id="A100-SXM-80GB",
    gpu_count=1,
    price_usd_per_hour=1.9,
    fabric=Fabric.NONE,
)


def parse(extra: str, *, model: str = "13B") -> Workload:
    """Parse ``model`` followed by ``extra`` (every test phrase needs a model)."""
    return parse_workload(f"{model} {extra}".strip())


def rejected(text: str) -> WorkloadError:
    """The error the parser raises for ``text`` (the test fails if it parses)."""
    with pytest.raises(WorkloadError) as info:
        parse_workload(text)
    return info.value


def only(feed: ParsedFeed, **attrs: object) -> Offer:
    """The one offer of ``feed`` whose attributes equal ``attrs`` (fails on none or several)."""
    matches = [o for o in feed.offers if all(getattr(o, k) == v for k, v in attrs.items())]
    assert len(matches) == 1, (attrs, matches)
    return matches[0]


class Clock:
    """A settable clock: call it for the time, set ``now`` to move it."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now
