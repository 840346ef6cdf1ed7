"""An architecture from a Hugging Face ``config.json`` (issue #35 item 1: a model that is not
known is read from its config when one is given). The configs below are the shape fields of
the published files; each counts to the size on the model's card."""

from __future__ import annotations

import pytest

from recommender import WorkloadError, architecture_from_config, parse_workload
from recommender.architecture import Block
from recommender.models import lookup_model

# meta-llama/Meta-Llama-3-8B config.json (shape fields)
LLAMA_3_8B = {
    "model_type": "llama",
    "num_hidden_layers": 32,
    "hidden_size": 4096,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "intermediate_size": 14336,
    "vocab_size": 128256,
    "tie_word_embeddings": False,
}
# openai-community/gpt2 config.json (n_inner null: 4 × n_embd; tied by PretrainedConfig)
GPT2 = {"model_type": "gpt2", "n_layer": 12, "n_embd": 768, "n_head": 12, "vocab_size": 50257}
# mistralai/Mixtral-8x7B-v0.1 config.json
MIXTRAL = {
    "model_type": "mixtral",
    "num_hidden_layers": 32,
    "hidden_size": 4096,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "intermediate_size": 14336,
    "vocab_size": 32000,
    "num_local_experts": 8,
    "num_experts_per_tok": 2,
}
# llava-hf/llava-1.5-7b-hf config.json: text_config (Vicuna-7B) and vision_config (CLIP L/14-336)
LLAVA = {
    "model_type": "llava",
    "text_config": {
        "model_type": "llama",
        "num_hidden_layers": 32,
        "hidden_size": 4096,
        "num_attention_heads": 32,
        "intermediate_size": 11008,
        "vocab_size": 32064,
    },
    "vision_config": {
        "hidden_size": 1024,
        "intermediate_size": 4096,
        "num_hidden_layers": 24,
        "patch_size": 14,
        "image_size": 336,
    },
}

# Qwen/Qwen2-VL-7B-Instruct config.json: the language model at the top level; its
# vision_config's hidden_size is the merger's output, embed_dim the tower's width
QWEN2_VL = {
    "model_type": "qwen2_vl",
    "num_hidden_layers": 28,
    "hidden_size": 3584,
    "num_attention_heads": 28,
    "num_key_value_heads": 4,
    "intermediate_size": 18944,
    "vocab_size": 152064,
    "tie_word_embeddings": False,
    "vision_config": {
        "depth": 32,
        "embed_dim": 1280,
        "hidden_size": 3584,
        "mlp_ratio": 4,
        "num_heads": 16,
        "patch_size": 14,
        "spatial_merge_size": 2,
    },
}


@pytest.mark.parametrize(
    ("config", "card_params", "block"),
    [
        (LLAMA_3_8B, 8.03e9, Block.LLAMA),
        (GPT2, 124e6, Block.GPT),
        (MIXTRAL, 46.7e9, Block.LLAMA),
        (LLAVA, 7.06e9, Block.LLAMA),
        (QWEN2_VL, 8.29e9, Block.LLAMA),
    ],
)
def test_a_config_counts_to_the_cards_size(
    config: dict[str, object], card_params: float, block: Block
) -> None:
    arch = architecture_from_config(config, "mine")
    assert arch.params == pytest.approx(card_params, rel=0.02)
    assert arch.block is block
    assert "config.json" in arch.note


def test_a_mixture_of_experts_config_counts_the_active_experts() -> None:
    arch = architecture_from_config(MIXTRAL, "mine")
    assert (arch.experts, arch.experts_per_token) == (8, 2)
    assert arch.active_params == pytest.approx(12.9e9, rel=0.02)  # Mixtral's card: 12.9B active


def test_a_vision_language_config_counts_its_tower_and_image_tokens() -> None:
    arch = architecture_from_config(LLAVA, "mine")
    assert arch.vision_params == pytest.approx(303e6, rel=0.02)
    assert arch.image_tokens == (336 // 14) ** 2
    assert arch.default_seq == 576 + 512
    qwen = architecture_from_config(QWEN2_VL, "mine")
    assert qwen.vision_params == pytest.approx(631e6, rel=0.02)  # the tower, not its output
    assert qwen.image_tokens * 4 == qwen.vision_positions  # 2×2 patches merged per token


# openai/whisper-small config.json (shape fields; 12 + 12 layers, 1,500 positions per 30 s)
WHISPER_SMALL = {
    "model_type": "whisper",
    "encoder_layers": 12,
    "decoder_layers": 12,
    "d_model": 768,
    "encoder_attention_heads": 12,
    "encoder_ffn_dim": 3072,
    "vocab_size": 51865,
    "max_source_positions": 1500,
}
# facebook/wav2vec2-base config.json (shape fields and the feature encoder's strides)
WAV2VEC2_BASE = {
    "model_type": "wav2vec2",
    "num_hidden_layers": 12,
    "hidden_size": 768,
    "num_attention_heads": 12,
    "intermediate_size": 3072,
    "vocab_size": 32,
    "conv_stride": [5, 2, 2, 2, 2, 2, 2],
}


@pytest.mark.parametrize(
    ("config", "known"), [(WHISPER_SMALL, "whisper-small"), (WAV2VEC2_BASE, "wav2vec2-base")]
)
def test_an_audio_config_reads_its_rate_from_its_shapes_as_the_table_states_it(
    config: dict[str, object], known: str
) -> None:
    arch = architecture_from_config(config, "mine")
    table = lookup_model(known)
    assert table is not None
    assert arch.tokens_per_audio_second == table.tokens_per_audio_second == 50
    # a config with another window or stride gets its own rate, not a family's
    faster = {**config, "max_source_positions": 3000, "conv_stride": [5, 2, 2, 2, 2, 2]}
    assert architecture_from_config(faster, "mine").tokens_per_audio_second == 100
    with pytest.raises(WorkloadError, match="conv_stride"):
        architecture_from_config({**WAV2VEC2_BASE, "conv_stride": [5, 0]}, "mine")


@pytest.mark.parametrize(
    ("config", "said"),
    [
        ({"hidden_size": 4096, "num_attention_heads": 32, "vocab_size": 8}, "num_hidden_layers"),
        ({**LLAMA_3_8B, "hidden_size": "4096"}, "hidden_size"),
        ({**LLAMA_3_8B, "num_key_value_heads": 7}, "multiple"),
        ({**LLAMA_3_8B, "num_hidden_layers": -1}, "not a size"),
        ({**LLAMA_3_8B, "num_hidden_layers": 1, "hidden_size": 8, "vocab_size": 8}, "1M"),
    ],
)
def test_a_config_it_cannot_size_is_refused_by_name(config: dict[str, object], said: str) -> None:
    with pytest.raises(WorkloadError, match=said) as err:
        architecture_from_config(config, "mine")
    assert (err.value.hint or "").startswith("Try: ")
    assert "config.json" in (err.value.hint or "")


def test_the_config_is_the_model_and_its_name_in_the_text_is_not_asked_about() -> None:
    arch = architecture_from_config(LLAMA_3_8B, "acme/foo-vl-7b")
    w = parse_workload("foo-vl-7b lora 2 days", model=arch)
    assert w.model is arch
    assert "foo-vl-7b" not in w.ignored  # the name the config gives is read, not dropped
    with pytest.raises(WorkloadError, match="foo-vl-7b"):
        parse_workload("foo-vl-7b lora 2 days")
