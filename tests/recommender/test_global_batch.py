"""The global batch rule (recommender/estimation/global_batch.py) against the batches published runs
used."""

from __future__ import annotations

import pytest

from recommender.estimation.global_batch import (
    ceiling_tokens,
    pretrain_batch_tokens,
    size_batch_tokens,
)
from recommender.parsing.parse import parse_workload
from recommender.workload import MAX_GPU_COUNT, HardwareRequest
from tests.factories import model


@pytest.mark.parametrize(
    ("name", "published"),
    [
        ("GPT-2", 0.5e6),  # GPT-3 Table 2.1: 125M at 0.5M tokens
        ("Llama 2 7B", 2e6),  # GPT-3 6.7B: 2M; Llama 2 7B: 4M (within ×2)
        ("Llama 2 70B", 4e6),  # Llama 2 70B: 4M tokens
    ],
)
def test_size_rule_follows_published_batches(name: str, published: float) -> None:
    assert size_batch_tokens(model(name)) == pytest.approx(published, rel=0.5)


def test_batch_grows_with_the_cluster_and_fills_the_pipeline() -> None:
    """More data-parallel pipelines get a larger batch: each keeps 4 micro-batches per stage."""
    m = model("Llama 3.1 405B")
    small = pretrain_batch_tokens(m, pipelines=8, microbatch_tokens=8192, stages=16)
    large = pretrain_batch_tokens(m, pipelines=128, microbatch_tokens=8192, stages=16)
    assert small < large
    assert large / (128 * 8192) >= 16  # m ≥ p: the 1F1B pipeline is full


def test_batch_is_capped_but_never_below_one_micro_batch_per_replica() -> None:
    m = model("Llama 2 7B")
    capped = pretrain_batch_tokens(m, pipelines=2048, microbatch_tokens=4096, stages=8)
    assert capped == ceiling_tokens(m) == 16_777_216  # Llama 3's final batch
    huge = pretrain_batch_tokens(m, pipelines=16_384, microbatch_tokens=4096, stages=1)
    assert huge == 16_384 * 4096


def test_the_largest_dense_models_keep_llama_3s_16m_ceiling() -> None:
    """Llama 3 405B ran at most 16M tokens (Dubey et al. 2024 §3.4.1) on 16,384 H100, where
    DeepSeek LLM's compute-optimal batch law would give 55M: the published batch holds."""
    m = model("Llama 3.1 405B")
    assert ceiling_tokens(m) == 16_777_216
    at_16k = pretrain_batch_tokens(m, pipelines=512, microbatch_tokens=8192, stages=4)
    assert at_16k == 16_777_216


def test_mixtures_of_experts_get_deepseek_v3s_ceiling() -> None:
    assert ceiling_tokens(model("DeepSeek V3")) == 15_360 * 4096


def test_16384_gpu_requests_are_accepted() -> None:
    """Llama 3 405B trained on 16,384 H100 (Dubey et al. 2024 §3.3)."""
    w = parse_workload("pretrain llama 3.1 405b on 16384x H100 15T tokens")
    assert w.hardware is not None
    assert w.hardware.count == 16_384
    with pytest.raises(ValueError, match="between 1 and"):
        HardwareRequest(gpu_id=None, count=MAX_GPU_COUNT + 1)


@pytest.mark.parametrize(
    ("name", "published"),
    [
        ("DeepSeek V2 Lite", 4608 * 4096),  # DeepSeek-V2 report: V2-Lite 4,608 × 4,096
        ("DeepSeek V2", 9216 * 4096),  # final batch 9,216 × 4,096
        ("DeepSeek V3", 15_360 * 4096),  # final batch 15,360 × 4,096 (the MoE ceiling)
    ],
)
def test_moe_batches_follow_deepseeks(name: str, published: float) -> None:
    """Experts see dense-like tokens per step: the size rule ×E/k, within ×2 of DeepSeek's."""
    m = model(name)
    batch = min(size_batch_tokens(m), ceiling_tokens(m))
    assert published / 2 <= batch <= published * 2
