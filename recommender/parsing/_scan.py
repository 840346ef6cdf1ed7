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

from recommender.parsing import _foreign
from recommender.parsing import _words as _w

__all__ = ["Tokens", "holds_quantity", "tokenize"]


@dataclass(frozen=True, slots=True)
class Tokens:
    raw: tuple[str, ...]  # slices of the text, as typed
    norm: tuple[str, ...]  # normalised forms, no spaces inside
    text: str  # the normalised forms joined by single spaces
    starts: tuple[int, ...]  # offset of each token in ``text``

    def index_after(self, offset: int) -> int:
        """The index of the first token that starts after a match ending at ``offset``."""
        return bisect.bisect_left(self.starts, offset)


# "&" splits words, but not one word ("q&a", "r&d"); a comma splits them, but not digit groups
_TOKEN = re.compile(
    r"(?:[^\s;()\[\]{}<>\"|!?&=:+*,`“”«»]|(?<=[0-9]),(?=[0-9]{3}(?![0-9]))"
    r"|(?<=[A-Za-z])&(?=[A-Za-z])|(?<=[0-9])\*(?=10\^)"  # and "3*10^8"
    r"|(?<=[A-Za-z])\+(?![^\s,;.)]))+"  # and a name's "+" ("Command R+")
)
_FOLD = str.maketrans(
    {"’": "'", "‘": "'", "´": "'", "×": "x", "_": "-", "–": "-", "—": "-", "@": "at"}
)
_DIGIT_COMMA = re.compile(r"(?<=[0-9]),(?=[0-9]{3})")
_DIGIT_SPACE = re.compile(r"(?<=[0-9])\s(?=[0-9]{3}(?![0-9]))")  # a space-grouped number
_SPACES = re.compile(r"\s+")
_POWER = re.compile(r"^(?:(?P<m>[0-9]+(?:\.[0-9]+)?)-?[*x]-?)?10\^(?P<e>[0-9]{1,2})(?=[a-z]*$)")
_TEN_TO = re.compile(r"10\^[0-9]{1,2}")
_DECIMAL = re.compile(r"[0-9]+(?:\.[0-9]+)?")
_CURRENCY = "$€£¥￥"  # kept on a token's edge: "€500", "500€"


def holds_quantity(word: str) -> bool:
    """Whether a word of the question holds a number or money: a digit in any script
    ("3", "３"), a Chinese numeral ("两", "万") or a currency sign. Such a word is never
    dropped: a rule reads it or the answer lists it as not understood (issue #35 item 5)."""
    if any(ch.isdigit() or ch in _CURRENCY or ch in "￥" for ch in word):
        return True
    numerals = word.rstrip("".join(_w.CJK_CARD_COUNTERS))  # "两张": two cards
    return bool(numerals) and all(ch in _NUMERALS for ch in numerals)


def _keeps(word: str, at: int, *, leading: bool) -> bool:
    ch = word[at]
    if ch.isalnum() or ch in _CURRENCY:
        return True
    if not leading and ch == "+" and at > 0 and word[at - 1].isalpha():
        return True  # a name's "+" ("Command R+")
    # keep the sign and point of "-5 days" and ".5 days"
    return leading and ch in "-." and at + 1 < len(word) and word[at + 1].isdigit()


def _powers(raw: list[str], text: str) -> list[str]:
    """``raw`` with "2.5 x 10^8" (or "×", "*") joined into one word, a slice of ``text``."""
    out: list[str] = []
    for word in raw:
        if _TEN_TO.fullmatch(word) and out:
            times = out[-2:] if len(out) > 1 and out[-1] in ("x", "X", "×") else out[-1:]
            if _DECIMAL.fullmatch(times[0]) and (m := _slice(times[0], word, text)) is not None:
                del out[-len(times) :]
                out.append(m)
                continue
        out.append(word)
    return out


def _slice(first: str, last: str, text: str) -> str | None:
    m = re.search(re.escape(first) + r"\s*[xX×*]\s*" + re.escape(last), text)
    return m.group() if m else None


def _normalise(raw: str) -> str:
    s = unicodedata.normalize("NFKC", raw).casefold().translate(_FOLD)
    s = _SPACES.sub("-", _DIGIT_COMMA.sub("", _DIGIT_SPACE.sub("", s)))
    s = _POWER.sub(lambda m: f"{m['m'] or '1'}e{m['e']}", s)  # "3*10^8", "10^9": 3e8, 1e9
    return s or raw.casefold()


def tokenize(text: str) -> Tokens:
    raw: list[str] = []
    for m in _TOKEN.finditer(text):
        word, start, end = m.group(), 0, len(m.group())
        if word == "@":  # "60k prefs @ 2048": at (a mention's "@" is part of its name)
            raw.append(word)
            continue
        while start < end and not _keeps(word, start, leading=True):
            start += 1
        while end > start and not _keeps(word, end - 1, leading=False):
            end -= 1
        if start < end:
            raw.extend(_split_cjk(word[start:end]))
    raw = _foreign.grouped_thousands(raw, text, zeros_only=True)  # "40 000 samples"
    raw = _powers(raw, text)  # "2.5 x 10^8"
    norm = tuple(_w.CJK_ENGLISH.get(w) or _cjk_number(w) or _normalise(w) for w in raw)
    if _foreign.reads_foreign(norm):  # Spanish, German, French: read through English words
        raw = _foreign.grouped_thousands(raw, text)
        norm = tuple(_foreign.translate(_cjk_number(w) or _normalise(w)) for w in raw)
    starts, offset = [], 0
    for n in norm:
        starts.append(offset)
        offset += len(n) + 1
    return Tokens(tuple(raw), norm, " ".join(norm), tuple(starts))


# ------------------------------------------------------------------ Chinese
# Chinese is written without spaces ("用两张4090微调两天"), so a token is cut where Chinese
# meets other script, and a run of Chinese into the longest known words
# (``_words.CJK_WORDS``), numeral runs and counters, else single characters. Every piece is
# still a slice of the text. A run of numerals ("两", "二十") is normalised to its digits, and
# a count with a card counter ("两张", "8块") to "2x"/"8x", the way "2x H100" is written.

_CJK = "\u3000-\u303f\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff01-\uff0f"
_CJK_RUN = re.compile(rf"[{_CJK}]+|[^{_CJK}]+")
_CJK_CHAR = re.compile(rf"[{_CJK}]")
_NUMERALS = "".join((*_w.CJK_DIGITS, *_w.CJK_UNITS))
_CJK_WORD = re.compile(
    # a count of cards ("两张", "8块"), but not a magnitude and 块 ("1万块" is 10,000 yuan)
    rf"(?![百千万萬亿億]+块)"
    rf"(?:[0-9]+|[{_NUMERALS}]+)(?:{'|'.join(sorted(_w.CJK_CARD_COUNTERS))})(?![{_NUMERALS}])"
    r"(?<!个(?=月|小时|星期))"  # "一个月", "两个小时": a duration word, 个 is part of it
    rf"|[{_NUMERALS}]+"
    rf"|{'|'.join(sorted((*_w.CJK_WORDS, *_w.CJK_ENGLISH), key=len, reverse=True))}"
    rf"|{'|'.join(sorted((k for k in _w.WEEKDAYS if not k.isascii()), key=len, reverse=True))}"
    rf"|{'|'.join(sorted((k for k in _w.PHRASE_HOURS if not k.isascii()), key=len, reverse=True))}"
    r"|."
)


def _split_cjk(word: str) -> list[str]:
    if word.isascii():
        return [word]
    pieces: list[str] = []
    for run in _CJK_RUN.findall(word):
        if _CJK_CHAR.match(run[0]) or run[0] in _NUMERALS:
            pieces.extend(_CJK_WORD.findall(run))
        else:
            pieces.append(run)
    # "2张": the digits come as their own run; join them with a counter that follows, and
    # "3万", "1.5亿", "￥3万" with the magnitude that follows (one amount, one token).
    joined: list[str] = []
    for piece in pieces:
        last = joined[-1] if joined else ""
        if last == "预算" and len(piece) > 1 and piece.endswith("块"):  # "预算两千块": 2,000 yuan
            joined.extend((piece[:-1], "块"))
            continue
        # "预算5000块": after "budget", 块 is yuan, not cards
        money = piece == "块" and len(joined) > 1 and joined[-2] == "预算"
        counter = last.isdigit() and piece in _w.CJK_CARD_COUNTERS and not money
        magnitude = _MAGNITUDE.fullmatch(piece) or _MAGNITUDE_COUNTED.fullmatch(piece)
        if counter or (_AMOUNT.fullmatch(last) and magnitude):  # "1" "万个": one count
            joined[-1] += piece
        else:
            joined.append(piece)
    # full-width punctuation ("，", "。") separates, as ASCII punctuation does
    return [p for p in joined if p.strip() and not all(_is_punct(c) for c in p)]


def _is_punct(ch: str) -> bool:
    return unicodedata.category(ch)[0] in "PZ"


_UNIT_CHARS = "".join(_w.CJK_UNITS)
_AMOUNT = re.compile(r"[$€£¥￥]?[0-9]+(?:\.[0-9]+)?")
_MAGNITUDE = re.compile(rf"[{_UNIT_CHARS}]+")
_MAGNITUDE_COUNTED = re.compile(rf"[{_UNIT_CHARS}]+个")
_DIGITS_MAGNITUDE = re.compile(
    rf"(?P<sym>[$€£¥￥]?)(?P<n>[0-9]+(?:\.[0-9]+)?)(?P<u>[{_UNIT_CHARS}]+)"
)


def cjk_value(numerals: str) -> int | None:
    """The value of a run of Chinese numerals: 两 → 2, 十二 → 12, 二十 → 20, 三万 → 30000,
    十万 → 100000, 两万五千 → 25000, 一亿五千万 → 150000000. 十, 百 and 千 count within a
    section; 万 and 亿 multiply the whole section before them."""
    total, section, current = 0, 0, None
    for ch in numerals:
        if ch in _w.CJK_DIGITS:
            current = _w.CJK_DIGITS[ch] if current is None else current * 10 + _w.CJK_DIGITS[ch]
        elif ch in _BIG_UNITS:
            section += current or 0
            total += (section or 1) * _w.CJK_UNITS[ch]
            section, current = 0, None
        elif ch in _w.CJK_UNITS:
            section += (1 if current is None else current) * _w.CJK_UNITS[ch]
            current = None
        else:
            return None
    return total + section + (current or 0)


_BIG_UNITS = frozenset({"万", "萬", "亿", "億"})


def _cjk_number(token: str) -> str | None:
    if m := _DIGITS_MAGNITUDE.fullmatch(token):  # "3万" → 30000, "1.5亿" → 150000000
        amount = float(m["n"])
        for unit in m["u"]:
            amount *= _w.CJK_UNITS[unit]
        return m["sym"] + f"{amount:.15g}"
    counted = token[-1:] in _w.CJK_CARD_COUNTERS and len(token) > 1
    body = token[:-1] if counted else token
    if counted and _DIGITS_MAGNITUDE.fullmatch(body):  # "1万个": 10,000 of them
        return _cjk_number(body)
    if body.isascii() or not body:
        value = int(body) if counted and body.isdigit() else None
    else:
        value = cjk_value(body)
    if value is None:
        return None
    # a card counter ("两张", "8块") is written "2x" as "2x H100" is; 个 counts anything
    # ("2个epoch", "四个 H100"): the number alone
    return f"{value}x" if counted and token[-1] != "个" else str(value)
