"""torchtitan's side of a launch: each model gpufit launches with torchtitan is the flavor
torchtitan 0.2.2 defines for it, and the stage split is the priced one."""

from __future__ import annotations

import pytest

from recommender.launch.torchtitan import FLAVORS, layers_per_stage
from recommender.models import lookup_model
from tests.recommender.launch_checks import tool


@pytest.mark.parametrize("model", sorted(FLAVORS))
def test_each_flavor_is_the_model_gpufit_prices(model: str) -> None:
    """The flavor's shape (torchtitan's ``model_args``) is the architecture gpufit priced, and
    torchtitan can load its Hugging Face weights (a state-dict adapter) to fine-tune."""
    tool("torchtitan")
    from torchtitan.protocols.train_spec import get_train_spec

    flavor = FLAVORS[model]
    spec = get_train_spec(flavor.name)
    args = spec.model_args[flavor.flavor]
    arch = lookup_model(model)
    assert arch is not None
    assert (args.n_layers, args.dim, args.n_heads) == (arch.layers, arch.hidden, arch.heads)
    assert args.vocab_size == arch.vocab
    if flavor.name != "deepseek_v3":  # MLA has no grouped KV heads to compare
        assert args.n_kv_heads == arch.kv_heads
    moe = getattr(args, "moe_args", None)
    moe_enabled = getattr(args, "moe_enabled", flavor.name == "deepseek_v3")
    assert (moe.num_experts if moe is not None and moe_enabled else 1) == arch.experts
    assert spec.state_dict_adapter is not None


@pytest.mark.parametrize(
    ("layers", "stages", "per"),
    [(80, 4, 20), (126, 16, 8), (61, 8, 8), (48, 5, 10), (10, 4, 3), (9, 4, None), (94, 8, 12)],
)
def test_layers_per_stage_makes_exactly_the_stages(
    layers: int, stages: int, per: int | None
) -> None:
    """torchtitan makes ⌈layers / per stage⌉ stages; a count no value reaches is None."""
    assert layers_per_stage(layers, stages) == per
    if per is not None:
        assert -(-layers // per) == stages
