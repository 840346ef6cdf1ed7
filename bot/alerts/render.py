"""Alert, digest, confirmation and listing messages: pure functions → :class:`Message`.

``text`` is always sent too: it is the notification and screen-reader fallback. Every message
goes through the one Block Kit limit guard (:func:`bot.render.limits.fit_message`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from bot.alerts.evaluate import MIN_REPEAT_DROP_FRAC, REARM_MARGIN_FRAC, PricePoint, WatchState
from bot.alerts.model import Watch, fmt_usd
from bot.render.blocks import escape_mrkdwn
from bot.render.limits import SECTION_TEXT_MAX, Block, Message, fit_message, truncate
from bot.render.safe import public_source_name
from recommender import SourceInfo

#: Lines of a listing are packed into sections below Slack's 3000-character section limit.
SECTION_CHARS = SECTION_TEXT_MAX - 100  # room for escaping growth

__all__ = [
    "render_alert",
    "render_confirmation",
    "render_digest",
    "render_watches",
]

esc = escape_mrkdwn


def _section(text: str) -> Block:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text, "verbatim": True}}


def _context(lines: Sequence[str]) -> Block:
    return {
        "type": "context",
        "elements": [{"type": "mrkdwn", "text": line, "verbatim": True} for line in lines[:10]],
    }


def _provenance(point: PricePoint, sources: Sequence[SourceInfo], now: datetime) -> str:
    for s in sources:
        if s.name == point.offer.source:
            age = s.age_hours(now)
            name = esc(public_source_name(s.name))
            return f"prices from {name}, as of {s.as_of:%Y-%m-%d %H:%M} UTC ({age:.0f} h old)"
    return "price source unknown"


def render_alert(
    watch: Watch,
    *,
    verdict: str,
    old_price_usd: float | None,
    new: PricePoint,
    sources: Sequence[SourceInfo],
    now: datetime,
) -> Message:
    """The price-drop alert: what crossed, old → new, where, and the small print."""
    what = esc(watch.spec.label())
    before = fmt_usd(old_price_usd) + new.basis.unit if old_price_usd is not None else "—"
    if verdict == "deeper":
        head = f":chart_with_downwards_trend: *Even cheaper:* {what}"
    else:
        head = f":chart_with_downwards_trend: *Price drop:* {what}"
    moved = f"{before} → *{new.label()}*"
    where = esc(new.where())
    lines = [head, f"{moved} on {where}"]
    if new.hours is not None:
        lines.append(
            f"expected {new.hours:,.0f} h to finish on {new.nodes * new.offer.gpu_count} GPUs"
        )
    text = "\n".join(lines)
    rearm = watch.threshold.usd * (1 + REARM_MARGIN_FRAC)
    small = [
        f"watch `{watch.id}` · {_provenance(new, sources, now)}",
        *(f":warning: {esc(c)}" for c in new.caveats),
        f"next alert after the price recovers above {fmt_usd(rearm)}"
        f" or falls another {MIN_REPEAT_DROP_FRAC:.0%} · `/gpufit unwatch {watch.id}` to stop",
    ]
    plain = f"Price drop: {what}: {esc(before)} → {esc(new.label())} on {where}"
    return fit_message([_section(text), _context(small)], plain)


#: Longest label a listing line shows: a workload watch's label quotes the workload as typed
#: (up to 2,000 characters), and 50 such lines overflowed the message, so the listing showed
#: 12 of 50 watches (issue #34). 50 lines of this fit the message budget with room.
LISTING_LABEL_CHARS = 120  # ours


def _state_line(watch: Watch, state: WatchState | None) -> str:
    label = f"`{watch.id}` {esc(truncate(watch.spec.label(), LISTING_LABEL_CHARS))}"
    if watch.disabled_reason is not None:
        return (
            f":no_entry: {label}\n    disabled: {esc(watch.disabled_reason)}"
            f" · `/gpufit watch enable {watch.id}` once fixed"
        )
    bits: list[str] = []
    if state is not None and state.last_price_usd is not None:
        bits.append(f"now {fmt_usd(state.last_price_usd)}{watch.threshold.basis.unit}")
    elif state is not None:
        bits.append("no matching offer yet")
    if state is not None and not state.armed:
        bits.append("alerted; re-arms after it recovers")
    if watch.daily_digest:
        bits.append("daily digest")
    bits.append(f"by <@{esc(watch.created_by)}>")
    return f":eyes: {label}\n    " + " · ".join(bits)


def render_watches(
    watches: Sequence[tuple[Watch, WatchState | None]],
) -> Message:
    """This channel's watches, enabled and disabled (with why)."""
    if not watches:
        text = "No watches in this channel. Try `/gpufit watch 8xH100 below $20/h`."
        return fit_message([_section(text)], text)
    lines = [_state_line(w, s) for w, s in watches]
    blocks: list[Block] = [_section(f"*Watches in this channel ({len(watches)})*")]
    chunk: list[str] = []
    for line in lines:
        if sum(len(x) + 1 for x in chunk) + len(line) > SECTION_CHARS:
            blocks.append(_section("\n".join(chunk)))
            chunk = []
        chunk.append(line)
    if chunk:
        blocks.append(_section("\n".join(chunk)))
    blocks.append(_context(["`/gpufit unwatch ID` removes one"]))
    plain = f"{len(watches)} watches: " + ", ".join(w.id for w, _ in watches)
    return fit_message(blocks, plain)


def render_confirmation(watch: Watch, current: PricePoint | None) -> Message:
    """The reply to a new watch: what it watches and where the price is now."""
    lines = [f":eyes: Watching {esc(watch.spec.label())} as `{watch.id}`."]
    if current is None:
        lines.append("No offer matches right now; I'll post here when one appears at that price.")
    elif current.price_usd <= watch.threshold.usd:
        lines.append(
            f"It is already there: *{current.label()}* on {esc(current.where())}. "
            "I'll post when it recovers and drops again."
        )
    else:
        lines.append(f"Now {current.label()} on {esc(current.where())}.")
    context = [f"assumed: {esc(a)}" for a in watch.spec.assumed]
    if watch.daily_digest:
        context.append("a daily digest of this watch's price will be posted here")
    context.append(f"`/gpufit unwatch {watch.id}` to stop")
    text = "\n".join(lines)
    return fit_message([_section(text), _context(context)], text)


def render_digest(
    rows: Sequence[tuple[Watch, PricePoint | None]],
    *,
    day: str,
    sources: Sequence[SourceInfo],
) -> Message:
    """The daily summary of a channel's digest watches."""
    lines = [f":newspaper: *Daily GPU price digest* ({day})"]
    for watch, point in rows:
        if point is None:
            lines.append(f"`{watch.id}` {esc(watch.spec.label())}: no matching offer")
            continue
        mark = ":white_check_mark:" if point.price_usd <= watch.threshold.usd else "·"
        lines.append(
            f"{mark} `{watch.id}` {esc(watch.spec.label())}: now *{point.label()}* "
            f"on {esc(point.where())}"
        )
    oldest = min((s.as_of for s in sources), default=None)
    context = [f"prices as of {oldest:%Y-%m-%d %H:%M} UTC" if oldest else "no price source"]
    text = "\n".join(lines)
    plain = f"Daily GPU price digest ({day}): {len(rows)} watches"
    return fit_message([_section(text), _context(context)], plain)
