"""The pieces the parser's rules are made of: a rule, a regex matcher over the normalised
tokens, and handlers that record what a phrase stated (the first stated value wins)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import fields
from enum import Enum
from typing import NamedTuple

from recommender.errors import WorkloadError
from recommender.models import Architecture
from recommender.parsing._draft import Draft
from recommender.parsing._scan import Tokens, holds_quantity
from recommender.workload import Phrase, Value

__all__ = [
    "Handler",
    "Matcher",
    "_Rule",
    "_bad",
    "_number",
    "_ok",
    "_rx",
    "_set",
    "_sets",
    "_whole",
    "read_phrase",
    "snapshot",
]

Handler = Callable[[re.Match[str], tuple[str, ...], Draft], bool]
Matcher = Callable[[Tokens, int, Draft], int]


class _Rule(NamedTuple):
    name: str
    match: Matcher


# ------------------------------------------------------------------ helpers for rules


def _rx(pattern: str, handle: Handler) -> Matcher:
    """A matcher for a regex over the normalised text that ends on a token boundary."""
    compiled = re.compile(rf"(?:{pattern})(?= |$)")

    def match(toks: Tokens, i: int, st: Draft) -> int:
        m = compiled.match(toks.text, toks.starts[i])
        if m is None:
            return 0
        end = toks.index_after(m.end())
        return end - i if handle(m, toks.raw[i:end], st) else 0

    return match


def _ok(current: object, new: object) -> bool:
    """The first stated value wins; repeating it is fine, contradicting it is not."""
    return current is None or current == new


def _set(st: Draft, attr: str, value: object) -> bool:
    """Record ``value`` for ``attr``; ``False`` (the phrase is not taken) when a different
    value was stated first."""
    if not _ok(getattr(st, attr), value):
        return False
    setattr(st, attr, value)
    return True


def _sets(attr: str, value: object) -> Handler:
    """A handler for a phrase that always means the same value."""
    return lambda m, raw, st: _set(st, attr, value)


def _bad(raw: tuple[str, ...], what: str) -> WorkloadError:
    phrase = " ".join(raw)
    return WorkloadError(f"{what} (in {phrase!r}).", not_understood=raw)


#: "50.000": fifty thousand, as Europe groups thousands, or fifty? A question in Spanish,
#: German or French reads it as the former (recommender.parsing._foreign); any other is asked.
_DOT_GROUPED = re.compile(r"[1-9][0-9]{0,2}\.[0-9]{3}")


def _number(text: str, raw: tuple[str, ...]) -> float:
    if _DOT_GROUPED.fullmatch(text):
        whole = text.replace(".", "")
        word = next((w for w in raw if text in w), text)
        raise WorkloadError(
            f"Is {word!r} {int(whole):,} or {float(text):g}? I won't guess.",
            not_understood=(word,),
            hint=f'Try: "{int(whole):,}" or "{int(whole) // 1000}k" for thousands, or '
            f'"{float(text):g}".',
        )
    value = float(text)
    if not math.isfinite(value):
        raise _bad(raw, "That number is too large")
    return value


def _whole(value: float, low: float, high: float, raw: tuple[str, ...], what: str) -> int:
    if not low <= value <= high or value != int(value):
        raise _bad(raw, f"{what} must be a whole number from {low:,.0f} to {high:,.0f}")
    return int(value)


# ------------------------------------------------------------------ what a phrase set

#: The fields a phrase states (not the context: the time, the script, the phrases).
_STATED = tuple(f.name for f in fields(Draft) if f.name not in ("now", "cjk", "phrases"))
#: Those that collect (lists and sets): copied, so that a later addition shows.
_COLLECTED = frozenset(
    f.name for f in fields(Draft) if f.name in _STATED and str(f.type).startswith(("list", "set"))
)


def snapshot(st: Draft) -> dict[str, object]:
    """The draft's stated fields, copied so a later change shows (see :func:`read_phrase`)."""
    out = {name: getattr(st, name) for name in _STATED}
    for name in _COLLECTED:
        out[name] = list(out[name])
    return out


def _value(value: object) -> Value:
    if isinstance(value, Architecture):
        return value.name
    if isinstance(value, Enum):
        return str(value.value)
    if isinstance(value, bool | int | float | str):
        return value
    return str(value)


def read_phrase(st: Draft, before: dict[str, object], text: str) -> None:
    """Record the phrase ``text`` a rule just read and what it changed since ``before``."""
    sets: list[tuple[str, Value]] = []
    for name, old in before.items():
        new = getattr(st, name)
        if isinstance(new, list | set):
            added = [x for x in (sorted(new) if isinstance(new, set) else new) if x not in old]  # type: ignore[operator]
            sets += [
                (name.rstrip("s") if name in ("notes", "warnings") else name, _value(x))
                for x in added
            ]
        elif new != old and new is not None:
            sets.append((name, _value(new)))
    if not sets and any(holds_quantity(word) for word in text.split(" ")):
        sets.append(("restated", True))  # "1 epoch ... 1 epoch": the same value again
    st.phrases.append(Phrase(text=text, sets=tuple(sets)))
