"""Issue #35 item 1: vision-language, speech and image models, Mistral's and Llama's names,
read as meant; their vision tower, projector, image tokens and audio rate counted; and a model
word that is not known asked back, never read from a part of it."""

from __future__ import annotations

import pytest

from recommender import WorkloadError, parse_workload
from recommender.models import KNOWN_MODELS, Architecture, lookup_model


def _model(name: str) -> Architecture:
    model = lookup_model(name)
    assert model is not None, name
    return model


# ------------------------------------------------------------------ names read as meant

READINGS = [
    # vision-language
    ("llava 1.6 34b", "LLaVA-NeXT 34B"),
    ("llava-v1.5-13b", "LLaVA-1.5 13B"),
    ("llava-hf/llava-1.5-7b-hf", "LLaVA-1.5 7B"),
    ("llava-hf/llava-v1.6-mistral-7b-hf", "LLaVA-NeXT Mistral 7B"),
    ("llava-next-34b", "LLaVA-NeXT 34B"),
    ("llava 13b", "LLaVA-NeXT 13B"),  # a family and a size: its newest model of the size
    ("qwen-vl", "Qwen-VL 7B"),
    ("qwen2-vl-7b", "Qwen2-VL 7B"),
    ("Qwen/Qwen2.5-VL-72B-Instruct", "Qwen2.5-VL 72B"),
    ("internvl2-8b", "InternVL2 8B"),
    ("OpenGVLab/InternVL2_5-38B", "InternVL2.5 38B"),
    ("internvl 8b", "InternVL2.5 8B"),
    ("idefics2-8b", "Idefics2 8B"),
    ("HuggingFaceM4/Idefics3-8B-Llama3", "Idefics3 8B"),
    ("paligemma 3b", "PaliGemma 3B"),
    ("paligemma-3b-pt-448", "PaliGemma 3B 448"),
    ("paligemma2-10b", "PaliGemma 2 10B"),
    ("llama 3.2 vision 11b", "Llama 3.2 11B Vision"),
    ("llama 3.2 11b vision", "Llama 3.2 11B Vision"),
    ("meta-llama/Llama-3.2-90B-Vision-Instruct", "Llama 3.2 90B Vision"),
    ("pixtral 12b", "Pixtral 12B"),
    # speech
    ("whisper large-v3", "Whisper large-v3"),
    ("openai/whisper-small", "Whisper small"),
    ("whisper base", "Whisper base"),
    ("wav2vec2 base", "wav2vec2 base"),
    ("facebook/wav2vec2-large-960h-lv60-self", "wav2vec2 large"),
    ("hubert large", "HuBERT large"),
    ("facebook/hubert-xlarge-ll60k", "HuBERT xlarge"),
    # image
    ("vit-l/14", "ViT-L/14"),
    ("ViT-B/32", "ViT-B/32"),
    ("vit-b/16", "ViT-B/16"),
    ("vit-g/14", "ViT-g/14"),
    ("ViT-G/14", "ViT-G/14"),  # the capital G is the gigantic one (arXiv:2106.04560)
    ("vit-bigg-14", "ViT-G/14"),
    ("vit-huge", "ViT-H/14"),
    ("sdxl", "SDXL"),
    ("stable diffusion xl", "SDXL"),
    ("sd 1.5", "Stable Diffusion 1.5"),
    ("flux dev", "Flux.1 dev"),
    # Mistral's and Llama's names
    ("mistral small", "Mistral Small 24B"),
    ("mistral-small-2409", "Mistral Small 22B"),
    ("mistral large", "Mistral Large 123B"),
    ("mistral nemo", "Mistral Nemo 12B"),
    ("codestral", "Codestral 22B"),
    ("ministral 8b", "Ministral 8B"),
    ("mathstral", "Mathstral 7B"),
    ("devstral", "Mistral Small 24B"),
    ("mistral small 3.1", "Mistral Small 3.1 24B"),  # its vision encoder counted
    ("mistralai/Mistral-Small-3.2-24B-Instruct-2506", "Mistral Small 3.1 24B"),
    ("mistral 7b v0.3", "Mistral 7B"),
    ("llama 3 70b", "Llama 3 70B"),
    ("llama 3 8b", "Llama 3 8B"),
    ("llama 3.1 405b", "Llama 3.1 405B"),
    ("llama 3.3 70b", "Llama 3.3 70B"),
    ("llama 3.2 1b", "Llama 3.2 1B"),
    ("Llama 3 70B", "Llama 3 70B"),
    ("facebook/opt-1.3b", "OPT 1.3B"),
    ("code llama 34b", "Code Llama 34B"),  # was a Llama-like 34B with "code" not understood
]


def test_deepspeed_chats_actor_is_the_named_model() -> None:
    """ "OPT-1.3b actor" was a Llama-like 1.3B inferred from the size in the name."""
    w = parse_workload("DeepSpeed-Chat step 3 OPT-1.3b actor opt-350m critic on 1 A6000")
    assert w.model.name == "OPT 1.3B"
    assert w.reward_params == 350e6
    assert "actor" not in w.ignored


@pytest.mark.parametrize(("name", "expected"), READINGS)
def test_a_model_name_reads_as_meant(name: str, expected: str) -> None:
    w = parse_workload(f"{name} lora 2 days")
    assert w.model.name == expected
    assert w.model.known
    assert name.split()[0] not in w.ignored


# ------------------------------------------------------------------ asked back, never guessed


@pytest.mark.parametrize(
    ("text", "word"),
    [
        ("foo-vl-7b lora 2 days", "foo-vl-7b"),  # an unknown name with a size inside
        ("fine-tune Molmo 7B lora", "Molmo"),  # a name before a size: not a Llama-like 7B
        ("molmo2 7b lora 2 days", "molmo2"),
        # issue #35: a vision-language model was read as 1M parameters
        ("fine-tune llava on 1M image-text pairs for 2 days", "llava"),
        ("fine-tune whisper on 2B tokens", "whisper"),  # which Whisper: tiny … large-v3
        ("mistral lora 2 days", "mistral"),  # was read as Mixtral 8x7B (one edit away)
        ("vit pretrain 2 days", "vit"),
        ("hubert fine-tune 2 days", "hubert"),
        ("paligemma2 lora 2 days", "paligemma2"),
        # a size the family never had: no text-only shape stands in for an image model
        ("llava 20b lora 2 days", "llava"),
        ("whisper 3b fine-tune 2 days", "whisper"),
        ("qwen2-vl 13b lora 2 days", "qwen2-vl"),
    ],
)
def test_a_model_word_not_known_asks_back(text: str, word: str) -> None:
    with pytest.raises(WorkloadError) as err:
        parse_workload(text)
    assert err.value.not_understood == (word,)
    assert word in err.value.message
    assert (err.value.hint or "").startswith("Try: ")
    assert "--model-config" in (err.value.hint or "")


@pytest.mark.parametrize("text", ["mistral medium lora", "ministral 3b lora", "gpt-4o lora"])
def test_a_model_whose_size_is_not_published_asks_back(text: str) -> None:
    with pytest.raises(WorkloadError, match="not published") as err:
        parse_workload(text)
    assert (err.value.hint or "").startswith("Try: ")


@pytest.mark.parametrize(
    "text",
    [
        "budget 13B lora",
        "custom 7b lora 2 days",
        "my 7b lora",
        "pretrain a LLaMA-style 7B for 2 days",  # a kind of model, not a name
        "train a GPT 7B lora 2 days",
        "Train MoE 7B 2 days",
    ],
)
def test_a_plain_word_before_a_size_leaves_it_a_size(text: str) -> None:
    """Only a name-like word (a digit, an inner hyphen, a capital past the first word) stops
    a bare size from inferring a shape."""
    w = parse_workload(text)
    assert not w.model.known
    assert w.model.params in (7e9, 13e9)


@pytest.mark.parametrize(
    ("typo", "kept"), [("llava", "Llama"), ("mistral", "Mixtral"), ("Molmo", "OLMo")]
)
def test_a_real_name_is_not_corrected_to_its_neighbour(typo: str, kept: str) -> None:
    with pytest.raises(WorkloadError) as err:
        parse_workload(f"fine-tune {typo} lora 2 days")
    assert kept not in err.value.message.split("?")[0]


# ------------------------------------------------------------------ what is counted

VISION_LANGUAGE = [m for m in KNOWN_MODELS if m.vision_params]


def test_every_vision_language_model_counts_its_tower_projector_and_image_tokens() -> None:
    assert len(VISION_LANGUAGE) >= 30
    for m in VISION_LANGUAGE:
        assert m.projector_params > 0, m.name
        assert m.image_tokens > 0, m.name
        assert m.vision_positions > 0, m.name
        assert m.language_params + m.vision_params + m.projector_params == m.params, m.name
        assert m.default_seq == m.image_tokens + 512, m.name
        assert "image" in m.note, m.name


@pytest.mark.parametrize(
    ("name", "tokens", "positions"),
    [
        # (336 / 14)² patches; CLIP's class token is the 577th position (LLaVA drops it)
        ("LLaVA-1.5 7B", (336 // 14) ** 2, (336 // 14) ** 2 + 1),
        # AnyRes at 672 px: 2×2 tiles of 336 plus the whole image
        ("LLaVA-NeXT 34B", 5 * (336 // 14) ** 2, 5 * ((336 // 14) ** 2 + 1)),
        # 448-px tiles of (448 / 14)² patches, pixel-shuffled 4 to 1; 2×2 tiles + a thumbnail
        ("InternVL2 8B", 5 * (448 // 14) ** 2 // 4, 5 * ((448 // 14) ** 2 + 1)),
        # one token per 28×28 px after the 2×2 merge
        ("Qwen2-VL 7B", (672 // 28) ** 2, (672 // 14) ** 2),
        ("PaliGemma 3B", (224 // 14) ** 2, (224 // 14) ** 2),
        ("PaliGemma 3B 448", (448 // 14) ** 2, (448 // 14) ** 2),
        # 4×4 tiles of 364 px plus the whole image, pixel-shuffled 4 to 1
        ("Idefics3 8B", 17 * (364 // 14) ** 2 // 4, 17 * (364 // 14) ** 2),
        ("Qwen-VL 7B", 256, (448 // 14) ** 2),  # 256 learned queries (arXiv:2308.12966)
    ],
)
def test_image_tokens_follow_the_published_geometry(name: str, tokens: int, positions: int) -> None:
    m = _model(name)
    assert (m.image_tokens, m.vision_positions) == (tokens, positions)


@pytest.mark.parametrize(
    ("name", "card_billions"),
    [
        # the totals on each model's Hugging Face card
        ("LLaVA-1.5 7B", 7.06),
        ("LLaVA-NeXT 34B", 34.8),
        ("Qwen2-VL 7B", 8.29),
        ("Qwen2.5-VL 3B", 3.75),
        ("InternVL2 1B", 0.94),
        ("InternVL2 8B", 8.08),
        ("InternVL2 26B", 25.5),
        ("Idefics2 8B", 8.4),
        ("PaliGemma 3B", 2.92),
        ("Llama 3.2 11B Vision", 10.6),
    ],
)
def test_totals_match_the_model_cards(name: str, card_billions: float) -> None:
    m = _model(name)
    assert m.billions == pytest.approx(card_billions, rel=0.015)


def test_the_vision_tower_costs_flops_per_patch_not_per_token() -> None:
    """A LLaVA-1.5 example (576 image + 512 text tokens) runs CLIP over 577 positions and the
    projector over 576 tokens: per token that is less than the tower's whole size; InternViT-6B
    over 5 tiles of 1,025 patches costs more per token than its size."""
    llava = _model("LLaVA-1.5 7B")
    vision = llava.vision_params * 577 + llava.projector_params * 576
    assert llava.active_params == llava.language_params + round(vision / 1088)
    assert llava.language_params < llava.active_params < llava.params
    intern = _model("InternVL2 26B")
    assert intern.active_params > intern.params


def test_audio_hours_become_tokens_at_the_feature_rate() -> None:
    """Whisper: 3,000 mel frames per 30 s halved by the conv stem, 50 a second; wav2vec 2.0 and
    HuBERT: a 20-ms stride, 50 a second (781 frames in a 15.6-s crop); a text model has none."""
    whisper, wav2vec, hubert = (
        _model(n) for n in ("whisper-large-v3", "wav2vec2-base", "hubert-large")
    )
    assert whisper.tokens_per_audio_second == 50
    assert 1000 * 3600 * whisper.tokens_per_audio_second == 180e6  # 1,000 hours
    assert wav2vec.tokens_per_audio_second == hubert.tokens_per_audio_second == 50
    assert wav2vec.default_seq == (250_000 - 400) // 320 + 1  # fairseq's max_sample_size crop
    assert _model("llama-3-8b").tokens_per_audio_second == 0


def test_images_become_tokens_at_the_patch_size() -> None:
    b16, l14, llava, llama = (
        _model(n) for n in ("vit-b/16", "vit-l/14", "llava-1.5-7b", "llama-3-8b")
    )
    assert b16.tokens_per_image() == b16.tokens_per_image(224) == 14 * 14 + 1
    assert b16.tokens_per_image(384) == 24 * 24 + 1
    assert l14.tokens_per_image(336) == 24 * 24 + 1
    assert llava.tokens_per_image(1024) == 576  # LLaVA-1.5 resizes every image to 336 px
    assert llama.tokens_per_image() == 0


def test_the_answer_states_what_an_example_holds() -> None:
    w = parse_workload("qwen2-vl-7b lora on 10k samples")
    assert w.seq_len == 576 + 512
    assert any("576 image tokens" in note for note in w.assumed)
    assert w.tokens == 10_000 * (576 + 512)


def test_a_plain_word_is_no_family_by_its_first_letters() -> None:
    """ "code" begins "Codestral" but names no family: it is not asked about as one."""
    w = parse_workload("code assistant 13B lora 2 days")
    assert w.model.params == 13e9


def test_image_and_audio_rows_agree_with_their_geometry() -> None:
    """A ViT's tokens are its patches at its resolution plus the class token; Whisper's
    example is its 30-s window at its rate (arXiv:2212.04356 §2.2)."""
    vits = [m for m in KNOWN_MODELS if m.patch_px and not m.vision_params]
    assert len(vits) >= 10
    for m in vits:
        assert m.image_tokens == (m.image_px // m.patch_px) ** 2 + 1, m.name
        assert m.default_seq == m.image_tokens, m.name
    whispers = [m for m in KNOWN_MODELS if m.name.startswith("Whisper")]
    assert len(whispers) == 5
    for m in whispers:
        assert m.default_seq == 30 * m.tokens_per_audio_second, m.name
