"""The parser's rules for the model: a known name ("llama-3-70b", "llava 1.6 34b", "vit-l/14"),
a family word with a size ("llama 70b"), Mixtral's "8x7b", and a bare size ("13B"), which
infers a typical architecture (:func:`recommender.models.infer_architecture`).

A name that is not known is never read from a part of it: :func:`ask_back` stops the answer
when a word no rule took names a model ("llava" alone, "foo-vl-7b", "Molmo 7B") and no known
model (or ``config.json``) was given, and says what would work.
"""

from __future__ import annotations

import re

from recommender.errors import WorkloadError
from recommender.models import (
    family_models,
    infer_architecture,
    lookup_family,
    lookup_model,
    models_named,
    names_model,
    unpublished_model,
)
from recommender.parsing import _lexicon as lex
from recommender.parsing._draft import Draft
from recommender.parsing._rulekit import _bad, _number, _set
from recommender.parsing._scan import Tokens

__all__ = ["ask_back", "bare_size", "mixtral", "model_name"]

#: How to give a model gpufit does not know; the end of every question it asks back.
CONFIG_HINT = (
    "or pass its Hugging Face config.json (`gpufit ask --model-config path/to/config.json`), "
    'or give just the size for a typical Llama-like shape ("7B lora 2 days").'
)

# "ViT-G/14" (gigantic, 1.8B) and "ViT-g/14" (giant, 1.0B) differ only in case, which the
# lookup keys drop: the capital G, as typed, is the gigantic one (arXiv:2106.04560 Table 2).
_VIT_GIGANTIC = re.compile(r"(?i:vit)-?G(?:/|-|$)")


def model_name(toks: Tokens, i: int, st: Draft) -> int:
    for span in range(min(5, len(toks.norm) - i), 0, -1):
        if not all(w.isascii() for w in toks.norm[i + 1 : i + span]):
            continue  # lookup keys drop non-ASCII: "llama3 8b 预算" is not one name
        text = " ".join(toks.norm[i : i + span])
        if (closed := unpublished_model(text)) is not None:
            raise WorkloadError(
                f"{closed}'s size is not published, so I can't size its training.",
                not_understood=tuple(toks.raw[i : i + span]),
                hint=f'Try: an open model ("mistral-small-24b lora"), {CONFIG_HINT}',
            )
        if st.model is not None and names_model(text, st.model):
            return span  # the model named again, or as its config.json names it
        if span == 1 and (taken := _model_family(toks, i, st)):
            # A family word and a size say more than the word alone: "gpt2 1.5b" is GPT-2 XL,
            # though "gpt2" by itself names the 124M model.
            return taken
        if _VIT_GIGANTIC.match(toks.raw[i]):
            text = "vit-bigg-14"
        arch = lookup_model(text)
        if arch is not None:
            if not _set(st, "model", arch):
                return 0
            # "OPT-1.3b actor" (DeepSpeed-Chat's words): the model is the policy
            return span + (i + span < len(toks.norm) and toks.norm[i + span] in _ROLE)
    return _model_family(toks, i, st) or _size_family(toks, i, st) or _vit_at(toks, i, st)


#: Words after a model name that say it is the policy being trained.
_ROLE = frozenset({"actor", "policy"})


_FAMILY_SIZE = re.compile(r"(?P<n>[0-9]+(?:\.[0-9]+)?)(?P<u>[bm])")


def _model_family(toks: Tokens, i: int, st: Draft) -> int:
    """``llama 70b``: a family word and a size name that family's newest model of the size."""
    if i + 1 >= len(toks.norm):
        return 0
    size = _FAMILY_SIZE.fullmatch(toks.norm[i + 1])
    if size is None:
        return 0
    params = float(size["n"]) * (1e9 if size["u"] == "b" else 1e6)
    arch = lookup_family(toks.norm[i], params)
    return 2 if arch is not None and _set(st, "model", arch) else 0


def _size_family(toks: Tokens, i: int, st: Draft) -> int:
    """``124M gpt-2``, ``a 7b llama``: a size and then a family word, as ``llama 70b``."""
    article = 1 if toks.norm[i] in ("a", "an") else 0
    j = i + article
    if j + 1 >= len(toks.norm) or (size := _FAMILY_SIZE.fullmatch(toks.norm[j])) is None:
        return 0
    params = float(size["n"]) * (1e9 if size["u"] == "b" else 1e6)
    arch = lookup_family(toks.norm[j + 1], params)
    return 2 + article if arch is not None and _set(st, "model", arch) else 0


#: A Hugging Face ViT name with its resolution: ``google/vit-base-patch16-384``.
_VIT_AT = re.compile(r"(?:google/)?(?P<base>vit-[a-z]+-patch[0-9]+)-(?P<px>[0-9]{3,4})(?:-in21k)?")


def _vit_at(toks: Tokens, i: int, st: Draft) -> int:
    """A ViT named with a resolution its table row is not at: the model, and its images at
    that resolution (``vit-base-patch16-384``: ViT-B/16 at 384 px)."""
    m = _VIT_AT.fullmatch(toks.norm[i])
    arch = lookup_model(f"{m['base']}-224") if m else None
    if m is None or arch is None or not _set(st, "model", arch):
        return 0
    px = int(m["px"])
    return 1 if _set(st, "image_px", (px, px)) else 0


def mixtral(m: re.Match[str], raw: tuple[str, ...], st: Draft) -> bool:
    return _set(st, "model", lookup_model("mixtral-8x7b"))


def bare_size(m: re.Match[str], raw: tuple[str, ...], st: Draft) -> bool:
    params = _number(m["n"], raw) * lex.SIZE_UNITS.get(m.groupdict().get("u") or "", 1.0)
    if not 1e6 <= params <= 1e13:
        raise _bad(raw, "A model size must be between 1M and 10T parameters")
    if st.model is not None:
        return False
    st.model = infer_architecture(params)
    return True


# ------------------------------------------------------------------ names not known

#: What a model name is made of ("llava", "qwen2.5-vl", "internvl2_5"), as normalised.
_NAME = re.compile(r"[a-z][a-z0-9._/-]*")
#: A word with a size inside it: "foo-vl-7b", "mymodel_13b-chat" (a size alone is read).
_SIZED_NAME = re.compile(r"(?=.*[a-z].*[-_])[a-z0-9._-]*[0-9](?:\.[0-9]+)?[bm](?:[-_][a-z0-9._]+)?")
#: English words that begin a model family's name ("Stable Diffusion", "Code Llama", "OPT"),
#: or say what kind of model a size is ("a custom 7b"): never read as a name.
_ENGLISH = frozenset(
    """
    stable opt code command clip clips base large small medium custom dense own new internal
    private proprietary in-house decoder decoder-only transformer gpt llm vlm moe model
    """.split()  # noqa: SIM905 (a word list reads better as text)
)
#: "LLaMA-style 7B", "GPT-like 1B": a kind of model, whose size is a size.
_KIND_SUFFIX = ("-style", "-like", "-based", "-sized", "-ish", "-only", "-type")


def ask_back(toks: Tokens, unknown: list[int], st: Draft) -> None:
    """Stop, naming the word, when a word no rule took names a model and no known model was
    read: a family word alone ("llava", "whisper", "vit"), a name with a size inside it
    ("foo-vl-7b"), or a name before a bare size ("Molmo 7B", "foo-vl 7b"). A bare size or
    nothing would otherwise price a model the user did not mean (issue #35: "fine-tune llava
    on 1M image-text pairs" was priced as a 1M-parameter model)."""
    if st.model is not None and st.model.known:
        return
    for i in unknown:
        word, raw = toks.norm[i], toks.raw[i]
        if not _NAME.fullmatch(word):
            continue  # "<@U123>", "$5", "(see": not a name
        newest = family_models(word)  # the family's newest generation is named first
        family = () if word in _ENGLISH else models_named(word)
        family = tuple(sorted(family, key=lambda a: a not in newest))
        if family:
            names = ", ".join(f"`{a.name}`" for a in family[:6])
            more = f" (and {len(family) - 6} more)" if len(family) > 6 else ""
            raise WorkloadError(
                f"Which {raw} model? I know {names}{more}; I won't guess the size.",
                not_understood=(raw,),
                hint=f'Try: "{family[0].name} lora 2 days", {CONFIG_HINT}',
            )
        if _SIZED_NAME.fullmatch(word) or _names_the_size(toks, i, st):
            name = raw if _SIZED_NAME.fullmatch(word) else f"{raw} {toks.raw[i + 1]}"
            raise WorkloadError(
                f"I don't know the model {name!r}, so I won't guess its size or shape.",
                not_understood=(raw,),
                hint=f'Try: a known name ("qwen2-vl-7b", "llama 3 70b"), {CONFIG_HINT}',
            )


def _names_the_size(toks: Tokens, i: int, st: Draft) -> bool:
    """Whether the word at ``i`` is a name standing before the bare size the model was
    inferred from: it has a digit or an inner hyphen ("molmo2 7b", "foo-vl 7b"), or a capital
    past the first word ("fine-tune Molmo 7B"). A plain word ("budget 13B", "custom 7b")
    leaves the size a size."""
    size = _FAMILY_SIZE.fullmatch(toks.norm[i + 1]) if i + 1 < len(toks.norm) else None
    word, raw = toks.norm[i], toks.raw[i]
    if size is None or st.model is None or word in _ENGLISH or word.endswith(_KIND_SUFFIX):
        return False
    if sum(c.isalpha() for c in word) < 2:
        return False  # "U123 7B" (a Slack user id) is not a model name
    named = any(c.isdigit() for c in word) or "-" in word.strip("-") or (i > 0 and raw[0].isupper())
    params = float(size["n"]) * (1e9 if size["u"] == "b" else 1e6)
    return named and abs(st.model.params - params) <= 1e-6 * params
