"""Text → tokens for the workload parser.

The text arrives as the user typed it: Slack's markup (mentions, links, ``&lt;``) is decoded
once, by the Slack face (``bot.listeners.answers.slack_text``). Tokens are slices of the text
(so every token is a substring of the input); each also has a normalised form for matching:
NFKC, case-folded, ``_`` and dashes folded to ``-``, digit-group commas removed, no spaces.
"""

from __future__ import annotations

import bisect
import re
import unicodedata
from dataclasses import dataclass

__all__ = ["Tokens", "tokenize"]


@dataclass(frozen=True, slots=True)
class Tokens:
    raw: tuple[str, ...]  # slices of the text, as typed
    norm: tuple[str, ...]  # normalised forms, no spaces inside
    text: str  # the normalised forms joined by single spaces
    starts: tuple[int, ...]  # offset of each token in ``text``

    def index_after(self, offset: int) -> int:
        """The index of the first token that starts after a match ending at ``offset``."""
        return bisect.bisect_left(self.starts, offset)


_TOKEN = re.compile(r"(?:[^\s;()\[\]{}<>\"|!?&=:+*,`“”«»]|(?<=[0-9]),(?=[0-9]{3}(?![0-9])))+")
_FOLD = str.maketrans({"’": "'", "‘": "'", "´": "'", "×": "x", "_": "-", "–": "-", "—": "-"})
_DIGIT_COMMA = re.compile(r"(?<=[0-9]),(?=[0-9]{3})")
_SPACES = re.compile(r"\s+")


def _keeps(word: str, at: int, *, leading: bool) -> bool:
    ch = word[at]
    if ch.isalnum() or ch == "$":
        return True
    # keep the sign and point of "-5 days" and ".5 days"
    return leading and ch in "-." and at + 1 < len(word) and word[at + 1].isdigit()


def _normalise(raw: str) -> str:
    s = unicodedata.normalize("NFKC", raw).casefold().translate(_FOLD)
    s = _SPACES.sub("-", _DIGIT_COMMA.sub("", s))
    return s or raw.casefold()


def tokenize(text: str) -> Tokens:
    raw: list[str] = []
    for m in _TOKEN.finditer(text):
        word, start, end = m.group(), 0, len(m.group())
        while start < end and not _keeps(word, start, leading=True):
            start += 1
        while end > start and not _keeps(word, end - 1, leading=False):
            end -= 1
        if start < end:
            raw.append(word[start:end])
    norm = tuple(_normalise(w) for w in raw)
    starts, offset = [], 0
    for n in norm:
        starts.append(offset)
        offset += len(n) + 1
    return Tokens(tuple(raw), norm, " ".join(norm), tuple(starts))
