"""Typo correction for the parser: a word no rule took, within a small edit distance of a
model, method or GPU name, is read as that name, and the reading is stated in the answer
("read 'lroa' as LoRA").

Distance is the optimal string alignment distance (Levenshtein plus adjacent
transpositions, Damerau 1964), so "lroa" is one edit from "lora". Thresholds: words of 4–6
characters may be one edit off, longer ones two; GPU names (short, and one digit apart from
each other: H100/H200, A10/A100) only one, and only from 5 characters. A word equally close
to two different names is left alone (then the parser reports it or asks back), and so is
any change to the digits: a version or a size is not a typo we may guess at.
"""

from __future__ import annotations

import re
from functools import cache

from recommender.gpus import try_normalize
from recommender.models import model_spellings

__all__ = ["correct", "distance"]

#: Method words the rules know → how the correction reads in the answer.
_METHODS: dict[str, str] = {
    "lora": "LoRA",
    "qlora": "QLoRA",
    "finetune": "fine-tune",
    "fine-tune": "fine-tune",
    "finetuning": "fine-tuning",
    "fine-tuning": "fine-tuning",
    "pretrain": "pretraining",
    "pretraining": "pretraining",
    "checkpointing": "checkpointing",
    "epochs": "epochs",
    "samples": "samples",
    "examples": "examples",
    "conversations": "conversations",
    # units and magnitudes (issue #35: "5 bilion tokns", "3 dayz"); a word and its plural
    # read the same, so "weks" is not "as close to two names"
    "tokens": "tokens",
    "billion": "billion",
    "million": "million",
    "thousand": "thousand",
    "trillion": "trillion",
    "hours": "hours",
    "days": "days",
    "weeks": "weeks",
    "week": "weeks",
    "months": "months",
    "month": "months",
    "minutes": "minutes",
    "epoch": "epochs",
    "steps": "steps",
    "pairs": "pairs",
    "prompts": "prompts",
    "images": "images",
}
#: Words that are never corrected: real words a few edits from a name.
_KEEP: frozenset[str] = frozenset(
    {"lord", "flora", "gamma", "glora", "full", "fully", "mini"}
    | {"ours", "says", "ways", "pays", "dads", "stops", "sheets", "token", "pages", "times"}
)


_DIGITS = re.compile(r"[^0-9]")
#: Longer words are not corrected: no name is this long, and the cost grows with the length.
_LONGEST = 24


def distance(a: str, b: str, limit: int = 3) -> int:
    """Optimal string alignment distance between ``a`` and ``b`` (``limit + 1`` when over)."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    prev2: list[int] = []
    prev = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        prev2, prev = prev, cur
    return prev[len(b)]


@cache
def _vocabulary() -> dict[str, tuple[str, str]]:
    """word → (the word to read instead, its name in the answer)."""
    vocab = {key: (key, name) for key, name in model_spellings().items() if len(key) >= 4}
    vocab.update({word: (word, label) for word, label in _METHODS.items()})
    return vocab


def _allowed(word: str) -> int:
    return 1 if len(word) <= 6 else 2


def correct(word: str) -> tuple[str, str] | None:
    """(replacement, name) for a mistyped ``word`` (its normalised form), or ``None``."""
    if not 4 <= len(word) <= _LONGEST or word in _KEEP or not any(c.isalpha() for c in word):
        return None
    # a model's spellings are keyed without dashes ("llama3.18b"): so is a word with a
    # version or size in it ("lama-3.1-8b"), and a dashed word spelt right
    dashless = word.replace("-", "")
    digits_in = any(c.isdigit() for c in word)
    key = dashless if "-" in word and (digits_in or dashless in _vocabulary()) else word
    if key in _vocabulary():
        return None  # a word spelt right is no typo: "billion" is not one edit from "million"
    limit = _allowed(key)
    digits = _DIGITS.sub("", key)
    best: dict[str, tuple[int, str]] = {}
    for candidate, (replacement, name) in _vocabulary().items():
        if _DIGITS.sub("", candidate) != digits or candidate[0] != key[0]:
            continue  # a version or a size is never "corrected": qwen2 is not qwen2.5; nor
            # is a first letter: few typos change it, and other names do (molmo, olmo)
        d = distance(key, candidate, limit)
        if 0 < d <= limit and (name not in best or d < best[name][0]):
            best[name] = (d, replacement)
    gpu = _gpu(word)
    if gpu is not None:
        best.setdefault(gpu[1], (1, gpu[0]))
    if not best:
        return None
    closest = min(d for d, _ in best.values())
    names = [name for name, (d, _) in best.items() if d == closest]
    if len(names) != 1:
        return None  # as close to two names: do not guess
    return best[names[0]][1], names[0]


def _gpu(word: str) -> tuple[str, str] | None:
    """A GPU one edit away: ``rtx4909`` → RTX 4090 (``h1000`` stays unknown: it is one edit
    from H100 and from nothing else, but 4-character ids are too close to each other)."""
    if not 5 <= len(word) <= 12 or not any(c.isdigit() for c in word):
        return None
    found: set[str] = set()
    for i in range(len(word) + 1):
        for variant in _edits(word, i):
            gpu = try_normalize(variant)
            if gpu is not None:
                found.add(gpu)
    if len(found) != 1:
        return None
    gpu_id = found.pop()
    return gpu_id, gpu_id


def _edits(word: str, i: int) -> list[str]:
    letters = "abcdefghijklmnopqrstuvwxyz0123456789"
    out = [word[:i] + word[i + 1 :]] if i < len(word) else []
    out += [word[:i] + c + word[i:] for c in letters]
    if i < len(word):
        out += [word[:i] + c + word[i + 1 :] for c in letters if c != word[i]]
    if i + 1 < len(word):
        out.append(word[:i] + word[i + 1] + word[i] + word[i + 2 :])
    return out
