"""The short Slack answer (issue #39): what a question gets first.

The answer in one bold line, the options in a fixed-width table, the #1 option's caveats
(each once, naming the other options it applies to; the spot model's sources cited once),
where the prices come from, and buttons. Everything else (the workload read, memory, each
option's layout and reasons, every caveat, the per-option Watch and Launch buttons) is the
detailed answer, :func:`bot.render.blocks.render_recommendation`, one click away behind
**Details**. A simple question's reply stays under :data:`SHORT_CHARS` characters of text.
"""

from __future__ import annotations

from bot.render.blocks import (
    ACTION_DETAILS,
    ACTION_MORE,
    ACTION_ON_DEMAND_ONLY,
    ACTION_POST,
    ACTION_SPOT_ONLY,
    _button,
    _context,
    _fallback,
    _md,
    _plain,
    _section,
    _sources_text,
    escape_mrkdwn,
)
from bot.render.limits import BUTTON_VALUE_MAX, Block, Message, fit_message, truncate
from bot.render.safe import public_caveat
from bot.render.summary import (
    caveat_lines,
    headline,
    objective_line,
    option_table,
    other_ways,
    spot_sources,
    stale_prices,
)
from bot.render.text import describe_workload
from recommender import Recommendation, Severity

__all__ = ["ECHO_MAX", "SHORT_CHARS", "render_short"]

#: Longest echo of the question in the short answer (the buttons carry the whole text).
ECHO_MAX = 100  # ours: one line
#: The most characters of text a simple question's short answer shows (issue #39: "the Slack
#: reply to a simple question is ≤ 1,500 characters"); tests hold the answers to it.
SHORT_CHARS = 1500  # ours: the figure


def _buttons(query: str, *, more: bool, ephemeral: bool) -> list[Block]:
    if len(query) > BUTTON_VALUE_MAX:
        return []
    buttons = [_button("Details", ACTION_DETAILS, query, style="primary")]
    if more:
        buttons.append(_button("More options", ACTION_MORE, query))
    buttons.append(_button("Spot only", ACTION_SPOT_ONLY, query))
    buttons.append(_button("On-demand only", ACTION_ON_DEMAND_ONLY, query))
    if ephemeral:
        buttons.append(_button("Post to channel", ACTION_POST, query))
    return buttons


def _visible(blocks: list[Block]) -> int:
    """Characters of text a reader sees: section texts, context elements, button labels."""
    total = 0
    for block in blocks:
        if "text" in block:
            total += len(block["text"]["text"])
        for element in block.get("elements", []):
            text = element.get("text")
            total += len(text["text"] if isinstance(text, dict) else text or "")
    return total


def render_short(rec: Recommendation, *, query: str, ephemeral: bool = True) -> Message:
    """The short answer to ``query``; **Details** shows the whole of it.

    When it would pass :data:`SHORT_CHARS`, the least needed lines move behind Details, in
    this order: the fastest and cheapest plans, the #1 option's info-level caveats, its
    warnings past the first two, the table's rows past the third, the echo of the question."""
    for trim in range(6):
        blocks = _blocks(rec, query, ephemeral, trim=trim)
        if _visible(blocks) <= SHORT_CHARS:
            break
    return fit_message(blocks, _fallback(rec))


def _blocks(rec: Recommendation, query: str, ephemeral: bool, *, trim: int) -> list[Block]:
    """The short answer's blocks, ``trim`` steps of :func:`render_short`'s order left out."""
    e = escape_mrkdwn
    goal = objective_line(rec)
    # The question is echoed as plain text (never read as markup), cut to a line; the whole
    # of it rides in the buttons. Then what was read of it.
    echo = "You asked: " + truncate(" ".join(query.split()), ECHO_MAX)
    read = _md(e(describe_workload(rec.workload)))
    blocks: list[Block] = [
        _section("*" + e(headline(rec)) + "*" + (f"\n{e(goal)}" if goal else "")),
        {"type": "context", "elements": [_plain(echo), read] if trim < 5 else [read]},
    ]
    if rec.workload.readings:
        # How words were read (a calendar deadline, a currency); the defaults are in Details.
        blocks.append(_context("Read: " + e("; ".join(rec.workload.readings))))
    if rec.options:
        table = option_table(rec, rows=3 if trim >= 4 else None)
        blocks.append(_section("```" + e("\n".join(table)) + "```"))
        lines = []
        warnings = 0
        for c in caveat_lines(rec.options, only_rank=1):
            warn = c.severity is Severity.WARN
            if (trim >= 2 and not warn) or (trim >= 3 and warn and warnings >= 2):
                continue
            warnings += warn
            mark = ":warning: " if c.severity is Severity.WARN else ""
            text = public_caveat(c.kind, c.text)
            lines.append(f"{mark}{c.label(len(rec.options))} {e(text)}")
        others = len(caveat_lines(rec.options)) - len(lines)
        if others > 0:
            lines.append(f"{others} more caveat(s): *Details*.")
        cited = spot_sources(rec.options[:1])
        if cited:
            lines.append("Spot model: " + e(cited))
        if lines:
            blocks.append(_context("\n".join(lines)))
    ways = other_ways(rec, scaling=trim < 1)
    if ways:
        blocks.append(_section("\n".join(e(line) for line in ways)))
    if rec.workload.warnings:
        blocks.append(_context("\n".join(":warning: " + e(x) for x in rec.workload.warnings)))
    if rec.workload.ignored:
        blocks.append(_context("Not understood (ignored): " + e(", ".join(rec.workload.ignored))))
    sources = _sources_text(rec.sources, rec.generated_at)
    blocks.append(_context((":warning: " if stale_prices(rec) else "") + sources))
    buttons = _buttons(query, more=rec.feasible > len(rec.options), ephemeral=ephemeral)
    if buttons:
        blocks.append({"type": "actions", "block_id": "gpufit_refine", "elements": buttons})
    return blocks
