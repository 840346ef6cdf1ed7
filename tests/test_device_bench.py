"""The GPU bench's models are gpufit's own, and every recorded case can be costed."""

from __future__ import annotations

import pytest

from bench import device_compare, device_steps
from recommender.models import lookup_model

#: config.json field names for the figures gpufit's model table holds
_FIELDS = {
    "hidden": ("hidden_size", "n_embd"),
    "layers": ("num_hidden_layers", "n_layer"),
    "heads": ("num_attention_heads", "n_head"),
    "vocab": ("vocab_size",),
}


@pytest.mark.parametrize("name", sorted(device_steps.CONFIGS))
def test_each_config_is_the_model_gpufit_costs(name: str) -> None:
    arch = lookup_model(name)
    assert arch is not None
    config = device_steps.CONFIGS[name]
    for attribute, keys in _FIELDS.items():
        (value,) = (config[k] for k in keys if k in config)
        assert getattr(arch, attribute) == pytest.approx(value, rel=0.01), attribute


def test_every_recorded_case_is_costed() -> None:
    env, rows = device_compare.rows(device_compare.RESULTS)
    assert env["gpu"] == "NVIDIA H200"
    names = {case.name for case in device_steps.CASES}
    assert {r.name for r in rows} <= names
    assert len(rows) == len(device_steps.CASES)
    for row in rows:
        assert row.measured_step_s > 0
        if row.name.startswith(("lora", "full", "pretrain")):
            assert row.estimated_reserved > 0
            assert row.estimated_step_s > 0


@pytest.mark.parametrize(
    "name",
    [
        "lora-8b-s4096-b2-autocast",
        "lora-8b-s2048-b4-ckpt-autocast",
        "lora-8b-s4096-b2-bf16ad",
        "lora-8b-s2048-b4-ckpt-bf16ad",
    ],
)
def test_a_lora_step_as_stacks_run_it_is_within_15_percent_of_the_h200(name: str) -> None:
    """HF Trainer's autocast over PEFT's fp32 adapters, and bf16 adapters: the adapters'
    elementwise traffic (recommender.estimation.finetune_speed) is what closes the gap."""
    _, rows = device_compare.rows(device_compare.RESULTS)
    (row,) = (r for r in rows if r.name == name)
    assert row.estimated_step_s == pytest.approx(row.measured_step_s, rel=0.15)
