"""The parser rule for a well-known public dataset named as the work (issue #35 item 3):
"the whole of Alpaca", "on all of UltraChat 200k", "on the Pile", its published size from
:mod:`recommender.parsing._datasets`; an unknown name after "the whole of" is asked about,
and a corpus named after a token count ("10B tokens fineweb-edu") is their source.
"""

from __future__ import annotations

import re

from recommender.errors import WorkloadError
from recommender.parsing import _lexicon as lex
from recommender.parsing._datasets import Dataset, Unit, find_dataset
from recommender.parsing._draft import Draft
from recommender.parsing._rulekit import _set
from recommender.parsing._scan import Tokens

__all__ = ["named_dataset"]

#: "the whole of", "all of", "the entire", "the full": a dataset's name follows.
_WHOLE = ("the whole of", "whole of", "all of", "the entire", "entire", "the full", "full")
_ON = ("on", "over", "with", "using")
#: Names too common as words to read without "the whole of" or the dataset's own casing.
_ONLY_AFTER_WHOLE = frozenset({"math", "pile"})
_DATASET_NOUN = frozenset({"dataset", "set", "corpus", "data", "split", "train", "thing"})


def named_dataset(toks: Tokens, i: int, st: Draft) -> int:
    """``the whole of Alpaca``, ``on all of UltraChat 200k``, ``on the Pile``: the dataset's
    published size. After "the whole of" or "all of" a name we do not know is asked about."""
    norm, j = toks.norm, i
    if norm[j] in _ON and j + 1 < len(norm):
        j += 1
    whole = ""
    for phrase in _WHOLE:
        words = tuple(phrase.split(" "))
        if norm[j : j + len(words)] == words:
            whole, j = phrase, j + len(words)
            break
    if j < len(norm) and norm[j] == "the" and j + 1 < len(norm):
        j += 1
    found = find_dataset(norm[j:])
    if found is None:
        if whole in ("the whole of", "whole of", "all of") and j < len(norm):
            _ask_unknown(toks, j)
        return 0
    dataset, span = found
    if not whole and norm[j] in _ONLY_AFTER_WHOLE:
        cased = toks.raw[j] == dataset.name  # "MATH", as the dataset is written
        the_pile = norm[j] == "pile" and j > i and norm[j - 1] == "the"
        if not (cased or the_pile):
            return 0
    end = j + span
    while end < len(norm) and norm[end] in _DATASET_NOUN:
        end += 1
    end = _restated(toks, end, dataset)
    if not _apply(dataset, st):
        if dataset.unit is not Unit.TOKENS or st.tokens is None or whole:
            return 0
        # "10B tokens fineweb-edu": where the tokens stated come from, not its whole size
        st.notes.append(f"{dataset.name}: read as the source of the {st.tokens:,.0f} tokens stated")
        return end - i
    return end - i


_RESTATED = re.compile(
    r"(?:all |the )?(?P<n>[0-9]+(?:\.[0-9]+)?) ?(?P<u>h|hrs?|hours|[kmbt]|bn|billion|trillion)?"
    r"(?: (?:of )?(?:audio|speech|tok(?:en)?s|images|examples|samples|pairs|prompts|rows))?(?= |$)"
)


def _restated(toks: Tokens, end: int, dataset: Dataset) -> int:
    """Past the dataset's size when the question restates it: "LibriSpeech (all 960
    hours)", "SlimPajama 627B tokens". A different figure is left for the rules to read."""
    if end >= len(toks.norm):
        return end
    m = _RESTATED.match(toks.text, toks.starts[end])
    if m is None:
        return end
    unit = m["u"] or ""
    scale = lex.TOKEN_UNITS.get(unit, 1.0) if unit[:1] not in ("h", "") else 1.0
    if abs(float(m["n"]) * scale - dataset.size) > 0.02 * dataset.size:
        return end
    return toks.index_after(m.end())


def _ask_unknown(toks: Tokens, j: int) -> None:
    word, after = toks.norm[j], toks.norm[j + 1] if j + 1 < len(toks.norm) else ""
    if word in lex.FILLER or word in ("our", "my", "your", "it", "them"):
        return
    looks_named = any(c in word for c in "-_/.") or after in ("", *_DATASET_NOUN)
    if looks_named:
        raise WorkloadError(
            f"I don't know the dataset {toks.raw[j]!r}, so I can't tell how big it is.",
            not_understood=(toks.raw[j],),
            hint='Say its size: "on 50k samples of 512 tokens" or "on 2B tokens".',
        )


def _apply(dataset: Dataset, st: Draft) -> bool:
    if dataset.unit is Unit.TOKENS:
        taken = _set(st, "tokens", dataset.size)
    elif dataset.unit is Unit.AUDIO_HOURS:
        taken = _set(st, "audio_hours", dataset.size)
    else:
        taken = _set(st, "examples", dataset.size)
    if not taken or not _set(st, "dataset", dataset.name):
        return False
    st.notes.append(f"{dataset.name}: {dataset.size:,.0f} {dataset.unit.value} ({dataset.source})")
    return True
