"""Parser rules for time: a run's length in words ("two days", "overnight"), a deadline on
the calendar ("by Friday", "before the 15th", "by 12/20", "周五前"; read in ``now``'s time
zone, the asker's), and what a day of waiting is worth ("time is worth $2k/day").
Vocabulary lives in :mod:`recommender.parsing._words`."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from recommender.errors import WorkloadError
from recommender.parsing import _words as w
from recommender.parsing._draft import Draft
from recommender.parsing._rulekit import _bad, _number, _set

__all__ = ["h_deadline", "h_duration_phrase", "h_duration_words", "h_time_value"]


def _duration(st: Draft, hours: float, raw: tuple[str, ...], note: str | None) -> bool:
    if not 0 < hours <= 24 * 366:
        raise _bad(raw, "A duration must be positive and at most a year")
    if not _set(st, "duration_hours", hours):
        return False
    if note:
        st.notes.append(note)
    return True


def h_duration_words(m: re.Match[str], raw: tuple[str, ...], st: Draft) -> bool:
    count = w.NUMBER_WORDS[(m["w2"] or m["w"]).replace("-", " ")]
    hours = count * w.WORD_HOURS[m["u"]]
    note = f"read {' '.join(raw)!r} as its upper end, {hours:g} h" if m["w2"] else None
    return _duration(st, hours, raw, note)


def h_duration_phrase(m: re.Match[str], raw: tuple[str, ...], st: Draft) -> bool:
    phrase = m["p"].replace("-", " ")
    hours = w.PHRASE_HOURS[phrase]
    note = f"read {' '.join(raw)!r} as {hours:g} h (say `in 10 hours` to change)"
    return _duration(st, hours, raw, note)


#: Chinese relative days, as the English words of :data:`recommender.parsing._words.DEADLINE`.
_CJK_DAYS = {"明天": "tomorrow", "今天": "today", "今晚": "tonight"}


def _deadline_day(m: re.Match[str], now: datetime) -> datetime:
    """The day the deadline falls on (midnight at its start, in ``now``'s time zone)."""
    today = now.replace(hour=0, minute=0, second=0, microsecond=0)
    groups = m.groupdict()
    if groups.get("wd"):
        ahead = (w.WEEKDAYS[groups["wd"]] - today.weekday()) % 7
        if groups.get("next"):  # "下周五": the Friday of next week (Monday-first weeks)
            ahead = 7 - today.weekday() + w.WEEKDAYS[groups["wd"]]
        return today + timedelta(days=ahead)
    rel = _CJK_DAYS.get(groups.get("rel") or "", groups.get("rel"))
    if rel and any(word in rel for word in ("tomorrow", "tmrw", "tmr", "tomorow")):
        return today + timedelta(days=1)  # "by eod tomorrow", "by tmrw"
    if rel in ("today", "tonight", "eod") or (rel and rel.endswith("day")):
        return today
    if rel and (rel.endswith("week") or rel == "eow"):
        # "by end of week": the working week's, through Friday (ours: what EOW means at
        # work); on a weekend, the coming Friday
        friday = today + timedelta(days=(4 - today.weekday()) % 7)
        return friday + timedelta(days=7) if "next" in rel else friday
    if rel and rel.endswith("month"):
        first_next = (today.replace(day=28) + timedelta(days=4)).replace(day=1)
        return first_next - timedelta(days=1)
    if groups.get("slash"):  # "12/20" (month/day, as US Slack users write it); "20/12" too
        first, second = (int(x) for x in groups["slash"].split("/"))
        month, day = (first, second) if first <= 12 else (second, first)
        date = today.replace(month=month, day=day)
        return date if date >= today else date.replace(year=today.year + 1)
    if groups.get("dom"):  # "the 15th": this month's, or next month's when it has passed
        day = int(groups["dom"])
        if day >= today.day:
            return today.replace(day=day)
        first_next = (today.replace(day=28) + timedelta(days=4)).replace(day=1)
        return first_next.replace(day=day)
    if groups.get("iso"):
        y, mo, d = (int(x) for x in groups["iso"].split("-"))
        return today.replace(year=y, month=mo, day=d)
    mo = w.MONTHS[groups.get("mon") or groups["mon2"]]
    date = today.replace(month=mo, day=int(groups.get("d") or groups["d2"]))
    return date if date >= today else date.replace(year=today.year + 1)


def h_deadline(m: re.Match[str], raw: tuple[str, ...], st: Draft) -> bool:
    phrase = " ".join(raw)
    if st.now is None:
        raise WorkloadError(
            f"I can't read the deadline {phrase!r} without knowing today's date.",
            not_understood=raw,
            hint='Try: "13B full finetune 3 days" (say how long instead)',
        )
    try:
        day = _deadline_day(m, st.now)
    except ValueError as exc:  # "by Feb 31", "by 2026-13-01"
        raise _bad(raw, "That date does not exist") from exc
    end = day + timedelta(days=1)  # "by Friday": by the end of Friday
    weekday = m.groupdict().get("wd")
    if weekday and day <= st.now and m.group(0).startswith("before"):
        end += timedelta(days=7)  # "before Monday" said on a Monday: next Monday
    elif end - st.now <= timedelta(hours=1) and weekday:
        end += timedelta(days=7)  # "by Friday" late on a Friday: next Friday
    hours = (end - st.now).total_seconds() / 3600
    if hours <= 0:
        raise _bad(raw, "That deadline has passed")
    zone = st.now.tzname() or "UTC"
    note = (
        f"deadline {phrase!r}: end of {day:%a %d %b %Y} ({zone}), {hours:.0f} h from "
        f"{st.now:%a %d %b %H:%M}"
    )
    return _duration(st, hours, raw, note)


def h_time_value(m: re.Match[str], raw: tuple[str, ...], st: Draft) -> bool:
    """``time is worth $2k/day``: what a day of waiting counts for in the ranking."""
    per_day = _number(m["n"], raw) * {"k": 1e3, "m": 1e6}.get(m["u"] or "", 1.0)
    if not 0 <= per_day <= 1e7:
        raise _bad(raw, "A day's worth must be between $0 and $10M")
    return _set(st, "time_value", per_day)
