"""The model registry in ``recommender/data/models.csv``: real architectures, each citing the
config it comes from, found by the names people use (issue #21)."""

from __future__ import annotations

import pytest

from recommender import models
from recommender.models import KNOWN_MODELS, Block, lookup_model
from recommender.parsing.parse import parse_workload


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("llama-3.3-70b", "Llama 3.3 70B"),
        ("llama-4-scout", "Llama 4 Scout 17B-16E"),
        ("llama 4 maverick", "Llama 4 Maverick 17B-128E"),
        ("qwen2-72b", "Qwen2 72B"),
        ("qwen3 8b", "Qwen3 8B"),
        ("Qwen/Qwen3-30B-A3B", "Qwen3 30B-A3B"),
        ("qwen3-235b-a22b", "Qwen3 235B-A22B"),
        ("gemma 3 27b", "Gemma 3 27B"),
        ("mistral-nemo", "Mistral Nemo 12B"),
        ("mixtral 8x22b", "Mixtral 8x22B"),
        ("8x22b", "Mixtral 8x22B"),
        ("deepseek-v3", "DeepSeek V3"),
        ("deepseek r1", "DeepSeek R1"),
        ("phi-4", "Phi-4"),
        ("phi-3.5-moe", "Phi-3.5 MoE"),
        ("falcon-180b", "Falcon 180B"),
        ("olmo 7b", "OLMo 2 7B"),
        ("yi-34b", "Yi 34B"),
        ("glm-4-9b", "GLM-4 9B"),
        ("internlm2.5-7b", "InternLM2.5 7B"),
        ("command-r-plus", "Command R+ 104B"),
        ("starcoder2 15b", "StarCoder2 15B"),
        ("bert-base-uncased", "BERT base"),
        ("roberta-large", "RoBERTa large"),
        ("deberta-v3-large", "DeBERTa-v3 large"),
        ("flan-t5-xl", "Flan-T5 XL"),
        ("vit-l/16", "ViT-L/16"),
        ("clip-vit-large-patch14", "CLIP ViT-L/14"),
        ("siglip-so400m", "SigLIP so400m"),
        ("whisper-large-v3", "Whisper large-v3"),
        ("sd1.5", "Stable Diffusion 1.5"),
        ("sdxl", "SDXL"),
        ("sd3-medium", "SD3 Medium"),
        ("flux-dev", "Flux.1 dev"),
        ("dit-xl/2", "DiT-XL/2"),
    ],
)
def test_names_find_the_real_architecture(text: str, name: str) -> None:
    assert parse_workload(f"{text} lora").model.name == name


def test_8x22b_is_not_8x7b() -> None:
    m = parse_workload("mixtral 8x22b lora").model
    assert (m.hidden, m.layers, m.experts, m.experts_per_token) == (6144, 56, 8, 2)


def test_every_registry_model_cites_its_source() -> None:
    """Every row of data/models.csv cites the config it was read from (the built-in models
    name theirs in comments in models.py)."""
    registry = KNOWN_MODELS[len(models._BUILT_IN) :]
    assert registry
    for m in registry:
        assert m.source.startswith("huggingface.co/"), m.name
        assert "config.json" in m.source, m.name


def test_mixtures_of_experts_use_the_published_active_count() -> None:
    for name, active in [
        ("deepseek-v3", 37e9),
        ("llama-4-maverick", 17e9),
        ("qwen3-30b-a3b", 3.3e9),
    ]:
        model = lookup_model(name)
        assert model is not None
        assert model.experts > 1
        assert model.active_params == active


def test_no_alias_is_a_bare_number() -> None:
    """An alias like "16" (from "ViT-B/16") would make any "16" a model name."""
    for m in KNOWN_MODELS:
        for alias in m.aliases:
            assert not alias.replace(".", "").isdigit()
    assert lookup_model("16") is None
    assert lookup_model("2") is None


@pytest.mark.parametrize(
    ("text", "seq", "note"),
    [
        ("vit-l/16 full finetune", 197, "224×224"),
        ("whisper-large-v3 full finetune", 1500, "per second"),
        ("sdxl full finetune", 4096, "coarse approximation"),
    ],
)
def test_non_llms_state_their_approximation(text: str, seq: int, note: str) -> None:
    w = parse_workload(text)
    assert w.seq_len == seq
    assert any(note in a for a in w.assumed)
    assert w.model.block in (Block.GPT, Block.T5)


def test_images_count_as_examples() -> None:
    w = parse_workload("dit-xl/2 pretrain 1m images 2 epochs")
    assert w.tokens == 1e6 * 256 * 2


def test_every_registry_row_says_whether_it_was_verified() -> None:
    """Each row of models.csv states yes/partly/no and, unless no, where it was checked."""
    import csv
    from importlib import resources

    text = resources.files("recommender").joinpath("data/models.csv").read_text("utf-8")
    for row in csv.DictReader(text.splitlines()):
        verdict = row["verified"]
        assert verdict == "no" or verdict.startswith(("yes", "partly")), row["name"]
        if verdict != "no":
            assert ":" in verdict, row["name"]
