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
