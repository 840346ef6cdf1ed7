"""Known model architectures, what they are called, and a typical architecture inferred
from a bare size (:class:`~recommender.architecture.Architecture` is the shape itself).

Every number is from the model's published ``config.json`` on the Hugging Face Hub (or its
paper where there is no Hub config); parameter counts are the total including embeddings.
A name that is not known is never guessed from a part of it: the parser asks back, or reads
the user's ``config.json`` (:mod:`recommender.hf_config`).
"""

from __future__ import annotations

import csv
import io
import math
import re
from dataclasses import replace
from functools import lru_cache
from importlib import resources

from recommender.architecture import VLM_TEXT_TOKENS, Architecture, Block

__all__ = [
    "KNOWN_MODELS",
    "Architecture",
    "Block",
    "infer_architecture",
    "lookup_family",
    "lookup_model",
    "models_named",
    "names_model",
    "unpublished_model",
]


def _m(
    name: str,
    params: float,
    layers: int,
    hidden: int,
    heads: int,
    kv_heads: int,
    ffn: int,
    vocab: int,
    *,
    tied: bool = False,
    block: Block = Block.LLAMA,
    experts: int = 1,
    experts_per_token: int = 1,
    aliases: tuple[str, ...] = (),
) -> Architecture:
    return Architecture(
        name=name,
        params=round(params),
        layers=layers,
        hidden=hidden,
        heads=heads,
        kv_heads=kv_heads,
        ffn=ffn,
        vocab=vocab,
        tied_embeddings=tied,
        block=block,
        experts=experts,
        experts_per_token=experts_per_token,
        aliases=aliases,
    )


# Sources: each model's config.json on huggingface.co (num_hidden_layers, hidden_size,
# num_attention_heads, num_key_value_heads, intermediate_size, vocab_size,
# tie_word_embeddings) and the parameter count on its model card.
KNOWN_MODELS: tuple[Architecture, ...] = (
    # meta-llama/Llama-2-{7,13,70}b-hf
    _m("Llama 2 7B", 6.74e9, 32, 4096, 32, 32, 11008, 32000, aliases=("llama-2-7b", "llama2-7b")),
    _m("Llama 2 13B", 13.0e9, 40, 5120, 40, 40, 13824, 32000, aliases=("llama-2-13b",)),
    _m("Llama 2 70B", 68.98e9, 80, 8192, 64, 8, 28672, 32000, aliases=("llama-2-70b",)),
    # meta-llama/Meta-Llama-3-8B, -70B; Llama-3.1-8B/70B/405B share the shapes
    _m("Llama 3 8B", 8.03e9, 32, 4096, 32, 8, 14336, 128256, aliases=("llama-3-8b", "llama3-8b")),
    _m("Llama 3 70B", 70.55e9, 80, 8192, 64, 8, 28672, 128256, aliases=("llama-3-70b",)),
    _m("Llama 3.1 8B", 8.03e9, 32, 4096, 32, 8, 14336, 128256, aliases=("llama-3.1-8b",)),
    _m("Llama 3.1 70B", 70.55e9, 80, 8192, 64, 8, 28672, 128256, aliases=("llama-3.1-70b",)),
    _m("Llama 3.1 405B", 405.85e9, 126, 16384, 128, 8, 53248, 128256, aliases=("llama-3.1-405b",)),
    # meta-llama/Llama-3.2-1B, -3B (tied embeddings)
    _m("Llama 3.2 1B", 1.24e9, 16, 2048, 32, 8, 8192, 128256, tied=True),
    _m("Llama 3.2 3B", 3.21e9, 28, 3072, 24, 8, 8192, 128256, tied=True),
    # mistralai/Mistral-7B-v0.1, mistralai/Mixtral-8x7B-v0.1
    _m("Mistral 7B", 7.24e9, 32, 4096, 32, 8, 14336, 32000, aliases=("mistral-7b",)),
    _m(
        "Mixtral 8x7B",
        46.7e9,
        32,
        4096,
        32,
        8,
        14336,
        32000,
        experts=8,
        experts_per_token=2,
        aliases=("mixtral-8x7b", "mixtral"),
    ),
    # Qwen/Qwen2.5-{0.5,1.5,3,7,14,32,72}B
    _m("Qwen2.5 0.5B", 0.494e9, 24, 896, 14, 2, 4864, 151936, tied=True),
    _m("Qwen2.5 1.5B", 1.54e9, 28, 1536, 12, 2, 8960, 151936, tied=True),
    _m("Qwen2.5 3B", 3.09e9, 36, 2048, 16, 2, 11008, 151936, tied=True),
    # Qwen/Qwen2.5-Math-7B is a fine-tune of it (its model card: base_model Qwen/Qwen2.5-7B)
    _m("Qwen2.5 7B", 7.62e9, 28, 3584, 28, 4, 18944, 152064, aliases=("qwen2.5-math-7b",)),
    _m("Qwen2.5 14B", 14.7e9, 48, 5120, 40, 8, 13824, 152064),
    _m("Qwen2.5 32B", 32.5e9, 64, 5120, 40, 8, 27648, 152064),
    _m("Qwen2.5 72B", 72.7e9, 80, 8192, 64, 8, 29568, 152064),
    # google/gemma-2-{2b,9b,27b} (tied embeddings, GeGLU ~ gated MLP like SwiGLU)
    _m("Gemma 2 2B", 2.61e9, 26, 2304, 8, 4, 9216, 256000, tied=True),
    _m("Gemma 2 9B", 9.24e9, 42, 3584, 16, 8, 14336, 256000, tied=True),
    _m("Gemma 2 27B", 27.2e9, 46, 4608, 32, 16, 36864, 256000, tied=True),
    # microsoft/Phi-3-mini-4k-instruct
    _m("Phi-3 mini", 3.82e9, 32, 3072, 32, 32, 8192, 32064, aliases=("phi-3-mini", "phi3-mini")),
    # tiiuae/falcon-40b (multi-query groups = 8, GeLU MLP 4h, vocab 65024)
    _m("Falcon 40B", 41.8e9, 60, 8192, 128, 8, 32768, 65024, block=Block.GPT),
    # openai-community/gpt2, gpt2-medium, gpt2-large, gpt2-xl (tied, 4h GeLU MLP)
    _m("GPT-2", 124e6, 12, 768, 12, 12, 3072, 50257, tied=True, block=Block.GPT),
    _m("GPT-2 Medium", 355e6, 24, 1024, 16, 16, 4096, 50257, tied=True, block=Block.GPT),
    _m("GPT-2 Large", 774e6, 36, 1280, 20, 20, 5120, 50257, tied=True, block=Block.GPT),
    _m("GPT-2 XL", 1.56e9, 48, 1600, 25, 25, 6400, 50257, tied=True, block=Block.GPT),
    # google-t5/t5-3b: 24 encoder + 24 decoder layers, d_model 1024, d_ff 16384, 32 heads
    _m("T5-3B", 2.85e9, 48, 1024, 32, 32, 16384, 32128, tied=True, block=Block.T5),
    # bigscience/T0_3B (T5 v1.1 LM-adapted XL): d_model 2048, d_ff 5120, 24 + 24 layers,
    # 32 heads, untied head; its gated-GeLU MLP is counted as a 2-matrix T5 MLP
    _m("T0 3B", 2.85e9, 48, 2048, 32, 32, 5120, 32128, block=Block.T5, aliases=("t0_3b", "t0-3b")),
    # bigscience/bloom-7b1 (and bloomz-7b1): 30 layers, hidden 4096, 32 heads, 4h GeLU MLP,
    # vocabulary 250880, tied embeddings
    _m(
        "BLOOM 7B1",
        7.07e9,
        30,
        4096,
        32,
        32,
        16384,
        250880,
        tied=True,
        block=Block.GPT,
        aliases=("bloom-7b1", "bloomz-7b1", "bloomz-7b"),
    ),
)


def _registry() -> tuple[Architecture, ...]:
    """The architectures in ``data/models.csv``: one row per model, each citing the
    ``config.json`` on the Hugging Face Hub its figures come from. The ``verified`` column
    (``yes``/``partly``/``no`` and the public copy checked against) is provenance for
    maintainers and is not loaded. A vision-language row's ``seq`` is, when empty, its image
    tokens plus :data:`~recommender.architecture.VLM_TEXT_TOKENS` of text."""
    text = resources.files("recommender").joinpath("data/models.csv").read_text("utf-8")
    known = {a.name for a in _BUILT_IN}
    models = []
    for row in csv.DictReader(io.StringIO(text)):
        if row["name"] in known:
            continue
        vision, image_tokens = _count(row, "vision_params"), int(_count(row, "image_tokens"))
        seq = int(row["seq"] or 0) or (image_tokens + VLM_TEXT_TOKENS if vision else 0)
        models.append(
            Architecture(
                name=row["name"],
                params=round(float(row["params"])),
                layers=int(row["layers"]),
                hidden=int(row["hidden"]),
                heads=int(row["heads"]),
                kv_heads=int(row["kv_heads"]),
                ffn=int(row["ffn"]),
                vocab=int(row["vocab"]),
                tied_embeddings=row["tied"] == "y",
                block=Block(row["block"]),
                experts=int(row["experts"]),
                experts_per_token=int(row["experts_per_token"]),
                aliases=tuple(a for a in row["aliases"].split(";") if a),
                active=round(float(row["active"])) if row["active"] else 0,
                default_seq=seq,
                note=row["note"],
                source=f"huggingface.co/{row['source']}",
                vision_params=round(vision),
                projector_params=round(_count(row, "projector_params")),
                image_tokens=image_tokens,
                vision_positions=int(_count(row, "vision_positions")),
                image_px=int(_count(row, "image_px")),
                patch_px=int(_count(row, "patch_px")),
                audio_hz=_count(row, "audio_hz"),
            )
        )
    return tuple(models)


def _count(row: dict[str, str], column: str) -> float:
    return float(row[column] or 0)


_BUILT_IN = KNOWN_MODELS
KNOWN_MODELS = _BUILT_IN + _registry()

# "-base" is a suffix only after a size ("qwen2.5-7b-base"); "whisper-base", "vit-base" and
# "wav2vec2-base" are sizes themselves, and "whisper" alone names no model.
# A context-length suffix ("phi-3-mini-4k-instruct") only joined to the name: after a space,
# "4k" is a count ("llama-3.2-3b-instruct 4k prompts").
_MODEL_SUFFIX = re.compile(
    r"[- ](hf|instruct|chat|it|v0\.\d)\b|-(4k|128k)\b|(?<=[0-9][bm])[- ]base\b"
)
# "llava-v1.6-34b" and "llava 1.6 34b", "whisper-large-v3" and "whisper large 3" are one key
_VERSION_V = re.compile(r"(?<=[-_ ])v(?=[0-9])")
_NOT_MODEL_CHAR = re.compile(r"[^a-z0-9.]+")


def _model_key(text: str) -> str:
    s = text.lower()
    # "meta-llama/Llama-2-7b-hf": the repo name; "ViT-L/16", "DiT-XL/2": the whole name
    s = s.replace("/", "") if s.rsplit("/", 1)[-1].isdigit() else s.rsplit("/", 1)[-1]
    s = _VERSION_V.sub("", _MODEL_SUFFIX.sub("", s))
    s = s.replace("meta-llama-", "llama-").replace("meta-", "")
    return _NOT_MODEL_CHAR.sub("", s.replace("+", "plus"))  # "command-r+" is "-plus"


def _model_index() -> dict[str, Architecture]:
    index: dict[str, Architecture] = {}
    for arch in KNOWN_MODELS:
        for spelling in (arch.name, *arch.aliases):
            index.setdefault(_model_key(spelling), arch)
    return index


_INDEX = _model_index()


#: Model spellings whose answer is remembered; why: the parser tries every run of up to five
#: words of a question as a model name, the same words recur from question to question, and
#: 1,024 strings of at most 2,000 characters (the parser's MAX_CHARS) stay under ~2 MB.
_SPELLINGS_KEPT = 1024


@lru_cache(maxsize=_SPELLINGS_KEPT)
def lookup_model(text: str) -> Architecture | None:
    """A known architecture for a spelling: ``llama-3-8b``, ``meta-llama/Llama-2-7b-hf``."""
    return _INDEX.get(_model_key(text))


# A family word plus a size ("llama 70b", "qwen 14b") means that family's newest model of
# that size: the order within each tuple is newest first.
_FAMILIES: dict[str, tuple[str, ...]] = {
    "llama": ("Llama 3.1", "Llama 3.2", "Llama 2"),
    "qwen": ("Qwen2.5",),
    "gemma": ("Gemma 2",),
    "mistral": ("Mistral",),
    "mixtral": ("Mixtral",),
    "falcon": ("Falcon",),
    "phi": ("Phi-3",),
    "gpt2": ("GPT-2",),
    # families from data/models.csv, after the built-in ones so earlier answers stay the same
    "llama4": ("Llama 4",),
    "qwen2": ("Qwen2",),
    "qwen3": ("Qwen3",),
    "gemma3": ("Gemma 3",),
    "deepseek": ("DeepSeek V3", "DeepSeek V2"),
    "olmo": ("OLMo 2",),
    "olmo2": ("OLMo 2",),
    "yi": ("Yi",),
    "glm": ("GLM-4",),
    "glm4": ("GLM-4",),
    "internlm": ("InternLM2.5", "InternLM2"),
    "starcoder": ("StarCoder2",),
    "starcoder2": ("StarCoder2",),
    "t5": ("T5",),
    "flant5": ("Flan-T5",),
    "whisper": ("Whisper",),
    "bert": ("BERT",),
    "roberta": ("RoBERTa",),
    # vision-language and Mistral families (issue #35)
    "llava": ("LLaVA-NeXT", "LLaVA-1.5"),
    "llavanext": ("LLaVA-NeXT",),
    "llava1.6": ("LLaVA-NeXT",),
    "llava1.5": ("LLaVA-1.5",),
    "qwenvl": ("Qwen-VL",),
    "qwen2vl": ("Qwen2-VL",),
    "qwen2.5vl": ("Qwen2.5-VL",),
    "internvl": ("InternVL2.5", "InternVL2"),
    "internvl2": ("InternVL2",),
    "internvl2.5": ("InternVL2.5",),
    "idefics": ("Idefics3", "Idefics2"),
    "paligemma": ("PaliGemma 2", "PaliGemma"),
    "paligemma2": ("PaliGemma 2",),
    "pixtral": ("Pixtral",),
    "ministral": ("Ministral",),
    "codestral": ("Codestral",),
}
# How close a stated size must be to a known model's count; the closest wins ("7b" is Llama 2
# 7B at 6.74B, "8b" Llama 3.1 8B), newest first on a tie.
_FAMILY_SIZE_TOLERANCE = 0.25  # ours: names round sizes (1.24B is "1B", 6.74B "7B")


def lookup_family(family: str, params: float) -> Architecture | None:
    """The newest known model of ``family`` ("llama", "qwen", ...) whose size is ``params``."""
    prefixes = _FAMILIES.get(family.lower().replace("-", ""))
    if not prefixes or params <= 0:
        return None
    candidates = [
        (abs(arch.params - params) / params, rank, arch)
        for rank, prefix in enumerate(prefixes)
        for arch in KNOWN_MODELS
        if arch.name.startswith(prefix + " ") or arch.name == prefix
    ]
    close = [c for c in candidates if c[0] <= _FAMILY_SIZE_TOLERANCE]
    if not close:
        return None
    return min(close, key=lambda c: (round(c[0], 2), c[1]))[2]


# Typical dense shapes by size (Llama-style), used when only "13B" is given.
# Each row is (params, layers, hidden, heads, kv_heads, ffn): Llama 2 / Llama 3 configs.
_TYPICAL: tuple[tuple[float, int, int, int, int, int], ...] = (
    (350e6, 24, 1024, 16, 16, 2816),
    (760e6, 24, 1536, 16, 16, 4096),
    (1.2e9, 16, 2048, 32, 8, 8192),
    (3.2e9, 28, 3072, 24, 8, 8192),
    (7e9, 32, 4096, 32, 8, 14336),
    (13e9, 40, 5120, 40, 40, 13824),
    (34e9, 48, 8192, 64, 8, 22016),
    (70e9, 80, 8192, 64, 8, 28672),
    (405e9, 126, 16384, 128, 8, 53248),
)
_TYPICAL_VOCAB = 32000  # Llama 2 vocabulary: a conservative middle between GPT-2 and Llama 3


def infer_architecture(params: float) -> Architecture:
    """A typical Llama-style architecture for a bare parameter count.

    Picks the nearest published shape (in log space) and rescales the layer count so the
    total matches ``params``; tiny models below ~100M params get a GPT-2-like shape.
    """
    if params < 100e6:
        hidden, heads, layers = 768, 12, max(1, round((params - 50257 * 768) / (12 * 768**2)))
        return replace(
            next(a for a in KNOWN_MODELS if a.name == "GPT-2"),
            name=f"{_fmt(params)} (inferred GPT-2-like)",
            params=round(params),
            layers=max(1, layers),
            hidden=hidden,
            heads=heads,
            kv_heads=heads,
            known=False,
            aliases=(),
        )
    base = min(_TYPICAL, key=lambda row: abs(math.log(row[0] / params)))
    _, layers, hidden, heads, kv_heads, ffn = base
    per_layer = hidden * (hidden // heads) * (2 * heads + 2 * kv_heads) + 3 * hidden * ffn
    embed = 2 * _TYPICAL_VOCAB * hidden
    layers = max(1, round((params - embed) / per_layer))
    return Architecture(
        name=f"{_fmt(params)} (inferred Llama-like)",
        params=round(params),
        layers=layers,
        hidden=hidden,
        heads=heads,
        kv_heads=kv_heads,
        ffn=ffn,
        vocab=_TYPICAL_VOCAB,
        tied_embeddings=False,
        known=False,
    )


def _fmt(params: float) -> str:
    if params >= 1e9:
        return f"{params / 1e9:.3g}B"
    return f"{params / 1e6:.3g}M"


#: Names of models whose size is not published (closed weights): asked back, never guessed
#: from the family ("mistral medium" is not Mistral 7B). Keys as :func:`_model_key` makes them.
_UNPUBLISHED: dict[str, str] = {
    "mistralmedium": "Mistral Medium",  # mistral.ai/models: API only, no open weights
    "mistralmedium3": "Mistral Medium 3",  # mistral.ai/news/mistral-medium-3: API only
    "ministral3b": "Ministral 3B",  # mistral.ai/news/ministraux: 3B weights not released
    "gpt4": "GPT-4",
    "gpt4o": "GPT-4o",
    "claude": "Claude",
    "gemini": "Gemini",
}


def names_model(text: str, arch: Architecture) -> bool:
    """Whether ``text`` spells ``arch`` by its name or an alias ("foo-vl-7b" for a model read
    from ``acme/foo-vl-7b``'s config.json)."""
    key = _model_key(text)
    return bool(key) and key in {_model_key(s) for s in (arch.name, *arch.aliases)}


def unpublished_model(text: str) -> str | None:
    """The name of a model whose size is not published, when ``text`` spells one."""
    return _UNPUBLISHED.get(_model_key(text))


def models_named(word: str) -> tuple[Architecture, ...]:
    """Known models a family word names ("llava", "vit", "whisper", "qwen2-vl", "internvl"),
    for asking back which one; empty when it names none ("code" is not Codestral)."""
    key = _model_key(word)
    if len(key) < 2 or key.isdigit():
        return ()
    return tuple(a for a in KNOWN_MODELS if _names_family(key, a.name))


def _names_family(key: str, name: str) -> bool:
    """Whether ``key`` is the family of ``name``: its name without the size ("PaliGemma 2"),
    its first word ("Mistral" of "Mistral Nemo 12B", "LLaVA" of "LLaVA-NeXT 7B"), or that
    word less its version ("internvl" of "InternVL2.5 8B")."""
    words = name.split(" ")
    family = _model_key(" ".join(words[:-1]) if len(words) > 1 else name)
    first = _model_key(re.split(r"[- ]", name)[0])
    rest = first[len(key) :]
    return key in (family, first) or (first.startswith(key) and rest[:1] in tuple("0123456789."))


def model_spellings() -> dict[str, str]:
    """Every lookup key a model or a model family is known by → a name to show.

    For typo correction (:mod:`recommender.parsing._fuzzy`): full keys (``llama38b``), and family
    and version words without the size (``llama``, ``llama3``, ``qwen2.5``) that name a model when a
    size follows.
    """
    spellings: dict[str, str] = {family: family.capitalize() for family in _FAMILIES}
    for arch in KNOWN_MODELS:
        for spelling in (arch.name, *arch.aliases):
            spellings.setdefault(_model_key(spelling), arch.name)
            words = re.split(r"[- ]", spelling)
            if len(words) > 1:
                spellings.setdefault(_model_key(" ".join(words[:-1])), " ".join(words[:-1]))
    return spellings


def family_models(family: str) -> tuple[Architecture, ...]:
    """The known models of the newest generation a family word names ("llama": Llama 3.1,
    "qwen3": Qwen3); empty when it names none."""
    for prefix in _FAMILIES.get(family.lower().replace("-", ""), ()):
        found = tuple(
            a for a in KNOWN_MODELS if a.name.startswith(prefix + " ") or a.name == prefix
        )
        if found:
            return found
    return ()
