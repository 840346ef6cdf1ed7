"""The parser's rules for the model: a known name ("llama-3-70b", "mistral 7b"), a family
word with a size ("llama 70b"), Mixtral's "8x7b", and a bare size ("13B"), which infers a
typical architecture (:func:`recommender.models.infer_architecture`)."""

from __future__ import annotations

import re

from recommender.models import infer_architecture, lookup_family, lookup_model
from recommender.parsing import _lexicon as lex
from recommender.parsing._draft import Draft
from recommender.parsing._rulekit import _bad, _number, _set
from recommender.parsing._scan import Tokens

__all__ = ["bare_size", "mixtral", "model_name"]


def model_name(toks: Tokens, i: int, st: Draft) -> int:
    for span in range(min(5, len(toks.norm) - i), 0, -1):
        if not all(w.isascii() for w in toks.norm[i + 1 : i + span]):
            continue  # lookup keys drop non-ASCII: "llama3 8b 预算" is not one name
        if span == 1 and (taken := _model_family(toks, i, st)):
            # A family word and a size say more than the word alone: "gpt2 1.5b" is GPT-2 XL,
            # though "gpt2" by itself names the 124M model.
            return taken
        arch = lookup_model(" ".join(toks.norm[i : i + span]))
        if arch is not None:
            return span if _set(st, "model", arch) else 0
    return _model_family(toks, i, st)


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
