"""Rules that belong to a typed record are written there, once (issue #37 item 3).

Bytes per element belong to :class:`Precision`, the MLP's matrix count to the
:class:`Architecture`, which shardings partition what to :class:`Sharding`, and "parameter
offload needs the parameters sharded" to :class:`Strategy`. The source scan keeps a second
copy of a rule from coming back.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from recommender import Architecture, Offload, Precision, Sharding
from recommender.estimation.model_states import lora_params
from recommender.estimation.strategies import Strategy
from recommender.models import Block
from recommender.pricing.economics import checkpoint_gib
from recommender.workload import Method
from tests.factories import model, workload

ROOT = Path(__file__).resolve().parents[2] / "recommender"


class TestPrecision:
    @pytest.mark.parametrize(
        ("precision", "nbytes"),
        [
            (Precision.FP32, 4.0),
            (Precision.BF16_MIXED, 2.0),
            (Precision.FP16_MIXED, 2.0),
            (Precision.BF16_TRUE, 2.0),
            (Precision.FP8_MIXED, 2.0),
        ],
    )
    def test_compute_bytes(self, precision: Precision, nbytes: float) -> None:
        assert precision.compute_bytes == nbytes

    @pytest.mark.parametrize(
        ("method", "precision", "per_param"),
        [
            # bf16 weights + fp32 master + AdamW m, v (ZeRO §3.1: 2 + 4 + 8; gradients unsaved)
            (Method.FULL, Precision.BF16_MIXED, 14.0),
            (Method.FULL, Precision.FP32, 12.0),  # fp32 weights + m, v
            (Method.FULL, Precision.BF16_TRUE, 6.0),  # everything bf16: 2 + 2 + 2
            (Method.LORA, Precision.BF16_MIXED, 12.0),  # fp32 adapters under AMP + m, v
            # pure bf16 adapters are bf16 in memory, so on disk too (was 4 + 4 on disk)
            (Method.LORA, Precision.BF16_TRUE, 6.0),
        ],
    )
    def test_a_checkpoint_holds_the_step_states_less_the_gradients(
        self, method: Method, precision: Precision, per_param: float
    ) -> None:
        w = workload(method=method, precision=precision)
        trained = (
            w.model.params
            if method is Method.FULL
            else lora_params(w.model, w.lora_rank, w.lora_targets)
        )
        assert checkpoint_gib(w) == pytest.approx(trained * per_param / 2**30)


class TestArchitecture:
    def test_mlp_matrices_follow_the_block(self) -> None:
        llama: Architecture = model("Llama 3 8B")
        assert llama.block is Block.LLAMA
        assert llama.mlp_matrices == 3
        gpt = model(1.5e9)
        gpt_block = Architecture(**{**_fields(gpt), "block": Block.GPT})
        assert gpt_block.mlp_matrices == 2


def _fields(arch: Architecture) -> dict[str, object]:
    return {name: getattr(arch, name) for name in arch.__dataclass_fields__}


class TestSharding:
    @pytest.mark.parametrize("sharding", list(Sharding))
    def test_each_level_includes_the_one_below(self, sharding: Sharding) -> None:
        """P_os+g+p ⊂ P_os+g ⊂ P_os (ZeRO §5)."""
        if sharding.shards_params:
            assert sharding.shards_grads
        if sharding.shards_grads:
            assert sharding.shards_optimizer

    def test_the_full_sharding_set(self) -> None:
        full = {s for s in Sharding if s.shards_params}
        assert full == {Sharding.ZERO3, Sharding.FSDP, Sharding.HSDP}
        assert {s for s in Sharding if not s.shards_optimizer} == {Sharding.DDP}

    @pytest.mark.parametrize("sharding", list(Sharding))
    @pytest.mark.parametrize("offload", list(Offload))
    def test_parameter_offload_needs_full_sharding(
        self, sharding: Sharding, offload: Offload
    ) -> None:
        ok = offload is not Offload.PARAMS or sharding.shards_params
        assert Strategy.compatible(sharding, offload) is ok
        if ok:
            Strategy(sharding, offload, checkpointing=True)
        else:
            with pytest.raises(ValueError, match="parameter offload needs"):
                Strategy(sharding, offload, checkpointing=True)


#: A second copy of each rule, as it was written before it moved to its record.
SECOND_COPIES = {
    "bytes per element": re.compile(r"(?:4\.0|4) if [\w.]*(?:precision|reg) is \w+\.FP32"),
    "MLP matrix count": re.compile(r"3 if [\w.]*block is Block\.LLAMA"),
    "full sharding set": re.compile(r"frozenset\(\{[^}]*Sharding\.(?:ZERO3|FSDP)[^}]*\}\)"),
    "offload needs sharding": re.compile(r"Offload\.PARAMS and \w+ not in"),
}
HOMES = {
    "bytes per element": "workload.py",
    "MLP matrix count": "models.py",
    "full sharding set": "workload.py",
    "offload needs sharding": "strategies.py",
}


@pytest.mark.parametrize("rule", sorted(SECOND_COPIES))
def test_each_rule_is_written_once(rule: str) -> None:
    found = [
        f"{p.relative_to(ROOT)}:{n}"
        for p in sorted(ROOT.rglob("*.py"))
        if p.name != HOMES[rule]
        for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if SECOND_COPIES[rule].search(line)
    ]
    assert found == [], f"{rule} is written again at {found}"
