"""An architecture read from a Hugging Face Hub ``config.json`` the user gives, for a model
gpufit does not know (``gpufit ask --model-config path/to/config.json``).

Pure: the caller reads and decodes the file (``bot/``), this module reads the mapping. The
keys are the ``transformers`` configuration attributes (``PretrainedConfig`` subclasses:
``num_hidden_layers``, ``hidden_size``, ``num_attention_heads``, ``num_key_value_heads``,
``intermediate_size``, ``vocab_size``, ``tie_word_embeddings``; GPT-2's ``n_layer``,
``n_embd``, ``n_head``, ``n_inner``; T5's ``d_model``, ``num_layers``, ``d_ff``). A
vision-language config's ``text_config`` (InternVL: ``llm_config``) is the language model
and its ``vision_config`` the vision tower. Configs carry no parameter count, so it is
counted from the shapes, and the answer says so.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from recommender.architecture import AUDIO_WINDOW_S, VLM_TEXT_TOKENS, Architecture, Block
from recommender.errors import WorkloadError

__all__ = ["architecture_from_config"]

#: ``model_type`` values whose blocks are LayerNorm + a 2-matrix GeLU MLP (GPT-like).
_GPT_TYPES = frozenset(
    {"gpt2", "gpt_neox", "gptj", "gpt_bigcode", "bloom", "falcon", "opt", "bert", "roberta"}
    | {"vit", "clip_vision_model", "siglip_vision_model", "wav2vec2", "hubert"}
)
#: Encoder-decoder types, counted as one stack of encoder plus decoder layers.
_SEQ2SEQ_TYPES = frozenset({"t5", "mt5", "umt5", "bart", "mbart", "whisper"})
#: Types whose ``PretrainedConfig`` default ties the embeddings when the file does not say
#: (``tie_word_embeddings`` defaults to True in ``PretrainedConfig`` and to False in the
#: Llama-style configs that override it).
_TIED_BY_DEFAULT = _GPT_TYPES | _SEQ2SEQ_TYPES | {"gemma", "gemma2", "gemma3_text"}
#: wav2vec 2.0 and HuBERT read 16 kHz audio (arXiv:2006.11477 §4.2; ``sampling_rate`` 16000
#: in their preprocessor_config.json), one position per product of ``conv_stride``.
_WAV2VEC_SAMPLE_HZ = 16_000
#: ``Wav2Vec2Config`` / ``HubertConfig`` default ``conv_stride`` (transformers).
_WAV2VEC_STRIDES = (5, 2, 2, 2, 2, 2, 2)
#: ``WhisperConfig`` default ``max_source_positions`` (transformers).
_WHISPER_POSITIONS = 1500
_HINT = (
    "Try: the model's config.json from the Hugging Face Hub (Files tab), or a known name "
    '("llama 3 70b", "qwen2-vl-7b").'
)


def architecture_from_config(config: Mapping[str, object], name: str) -> Architecture:
    """The architecture a ``config.json`` describes, named ``name``.

    Raises:
        WorkloadError: the config lacks a shape gpufit needs, or its figures are not sizes.
    """
    text = _section(config, "text_config") or _section(config, "llm_config") or config
    kind = str(text.get("model_type") or config.get("model_type") or "")
    seq2seq = kind in _SEQ2SEQ_TYPES
    layers = _size(text, name, "num_hidden_layers", "n_layer", "num_layers", "encoder_layers")
    if seq2seq:
        layers += _size(text, name, "num_decoder_layers", "decoder_layers", default=layers)
    hidden = _size(text, name, "hidden_size", "n_embd", "d_model")
    heads = _size(
        text, name, "num_attention_heads", "n_head", "num_heads", "encoder_attention_heads"
    )
    kv_heads = _size(text, name, "num_key_value_heads", "multi_query_group_num", default=heads)
    # GPT-2's n_inner null means 4 × n_embd (transformers GPT2Config)
    ffn = _size(
        text, name, "intermediate_size", "n_inner", "d_ff", "encoder_ffn_dim", default=4 * hidden
    )
    # an image or audio encoder has no vocabulary: a 1-row embedding counts nothing
    no_vocab = 1 if kind in _GPT_TYPES - {"gpt2", "gpt_neox", "gptj", "gpt_bigcode"} else None
    vocab = _size(text, name, "vocab_size", "padded_vocab_size", default=no_vocab)
    experts = _size(text, name, "num_local_experts", "num_experts", "n_routed_experts", default=1)
    per_token = _size(text, name, "num_experts_per_tok", "moe_topk", default=1)
    if experts > 1:
        ffn = _size(text, name, "moe_intermediate_size", default=ffn)
    head_dim = _size(text, name, "head_dim", "d_kv", default=hidden // heads)
    tied = bool(text.get("tie_word_embeddings", kind in _TIED_BY_DEFAULT))
    block = Block.T5 if seq2seq else Block.GPT if kind in _GPT_TYPES else Block.LLAMA
    if heads % kv_heads:
        raise WorkloadError(
            f"The config.json for {name!r} has {heads} attention heads and {kv_heads} "
            "key-value heads; the first must be a multiple of the second.",
            hint=_HINT,
        )
    matrices = 2 if block is not Block.LLAMA else 3
    attn = hidden * head_dim * (2 * heads + 2 * kv_heads)
    per_layer = attn + matrices * hidden * ffn * experts + (hidden * experts if experts > 1 else 0)
    # two norms a layer, each a weight and (LayerNorm) a bias: 4 × hidden at most
    language = layers * (per_layer + 4 * hidden) + vocab * hidden * (1 if tied else 2)
    vision = _section(config, "vision_config")
    vision_params = projector = image_tokens = patch = image_px = 0
    if vision:
        # Qwen2-VL's vision hidden_size is its output width; embed_dim is the tower's
        vh = _size(vision, name, "embed_dim", "hidden_size", "width")
        vffn = _size(vision, name, "intermediate_size", default=4 * vh)  # ViT's 4× MLP
        # ours: a config without them is read as CLIP ViT-L/14-336, LLaVA's tower (14 px, 336)
        patch = _size(vision, name, "patch_size", default=14)
        image_px = _size(vision, name, "image_size", default=patch * 24)
        positions = (image_px // patch) ** 2
        image_tokens = max(1, positions // _merged(config, vision))
        vlayers = _size(vision, name, "num_hidden_layers", "depth", "layers")
        # a ViT layer: 4 attention matrices and a 2-matrix MLP; plus patch and position
        # embeddings (arXiv:2010.11929 §3.1)
        vision_params = (
            vlayers * (4 * vh * vh + 2 * vh * vffn) + (3 * patch * patch + positions) * vh
        )
        projector = vh * hidden + hidden * hidden  # a 2-layer MLP, as LLaVA's
    params = language + vision_params + projector
    if not 1e6 <= params <= 1e13:
        raise WorkloadError(
            f"The config.json for {name!r} counts to {params:,} parameters; a model gpufit "
            "sizes has from 1M to 10T.",
            hint=_HINT,
        )
    how = "parameters counted from its shapes"
    if vision:
        how += (
            f"; vision tower and a 2-layer projector counted as a ViT of {vlayers} layers, "
            f"{image_tokens:,} image tokens per {image_px}-px image plus "
            f"{VLM_TEXT_TOKENS} text tokens (say `seq N` to change)"
        )
    audio = _audio_hz(text, kind, name)
    return Architecture(
        name=name,
        params=params,
        layers=layers,
        hidden=hidden,
        heads=heads,
        kv_heads=kv_heads,
        ffn=ffn,
        vocab=vocab,
        tied_embeddings=tied,
        block=block,
        experts=experts,
        experts_per_token=per_token,
        default_seq=image_tokens + VLM_TEXT_TOKENS if vision else 0,
        note=f"read from the config.json given: {how}; an approximation",
        source="the config.json given",
        vision_params=vision_params,
        projector_params=projector,
        image_tokens=image_tokens,
        vision_positions=(image_px // patch) ** 2 if vision else 0,
        image_px=image_px,
        patch_px=patch,
        audio_hz=audio,
    )


def _audio_hz(config: Mapping[str, object], kind: str, name: str) -> float:
    """An audio encoder's positions per second, from the config's own shapes (the model
    table's ``audio_hz`` is the same figure for the models gpufit knows): Whisper's
    ``max_source_positions`` over its 30-s window (``AUDIO_WINDOW_S``), wav2vec 2.0's
    sample rate over its total conv stride."""
    if kind == "whisper":
        positions = _size(config, name, "max_source_positions", default=_WHISPER_POSITIONS)
        return positions / AUDIO_WINDOW_S
    if kind in ("wav2vec2", "hubert"):
        strides = config.get("conv_stride", _WAV2VEC_STRIDES)
        if not isinstance(strides, list | tuple) or not all(
            isinstance(s, int) and not isinstance(s, bool) and s >= 1 for s in strides
        ):
            raise WorkloadError(
                f"The config.json for {name!r} has a conv_stride that is not a list of "
                "positive whole numbers.",
                hint=_HINT,
            )
        return _WAV2VEC_SAMPLE_HZ / math.prod(strides)
    return 0.0


def _merged(config: Mapping[str, object], vision: Mapping[str, object]) -> int:
    """Patches merged into one image token: Qwen2-VL's ``spatial_merge_size`` 2 (2×2),
    InternVL's ``downsample_ratio`` 0.5 and Idefics3's ``scale_factor`` 2 (pixel shuffle)."""
    merge = vision.get("spatial_merge_size") or config.get("scale_factor")
    ratio = config.get("downsample_ratio")
    if isinstance(merge, int) and not isinstance(merge, bool) and 1 <= merge <= 8:
        return merge * merge
    if isinstance(ratio, float) and 0.1 <= ratio <= 1:
        return round(1 / (ratio * ratio))
    return 1


def _section(config: Mapping[str, object], key: str) -> Mapping[str, object] | None:
    value = config.get(key)
    return value if isinstance(value, Mapping) and value else None


def _size(config: Mapping[str, object], name: str, *keys: str, default: int | None = None) -> int:
    """The first of ``keys`` the config sets, as a positive whole number."""
    for key in keys:
        value = config.get(key)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int | float) or value != int(value):
            raise WorkloadError(
                f"The config.json for {name!r} has {key} = {value!r}; I need a whole number.",
                hint=_HINT,
            )
        if not 0 < value <= 10**9:
            raise WorkloadError(
                f"The config.json for {name!r} has {key} = {value!r}, which is not a size.",
                hint=_HINT,
            )
        return int(value)
    if default is not None:
        return default
    raise WorkloadError(
        f"The config.json for {name!r} does not say {keys[0]}, so I can't size the model.",
        not_understood=(keys[0],),
        hint=_HINT,
    )
