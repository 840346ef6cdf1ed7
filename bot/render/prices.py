"""``prices``: the cheapest offers of one or more GPUs as a Slack message (the CLI prints the
same words, :func:`bot.cli._plain`).

Each GPU gets a fixed-width table that fits 80 columns, its flagged prices under their rows
(:mod:`recommender.pricing.market`), then one footer names each price source with its age and the
catalog rows left out of it, with the adapters' reasons. Every untrusted name (provider,
instance, region, rejection reason) goes through :func:`escape_mrkdwn`.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from datetime import datetime

from bot.render.blocks import _context, _header, _section, _sources_text, escape_mrkdwn
from bot.render.limits import Block, Message, fit_message
from bot.render.text import money
from recommender import GpuPrices, SourceInfo

__all__ = ["REASONS_SHOWN", "price_table", "render_prices"]

#: Columns a line of the reply takes at most, the table's and the wrapped reasons'.
WIDTH = 80  # ours: issue #39, "the terminal output fits 80 columns"
#: Rejection reasons a Slack reply lists per source (the CLI lists every one stored).
REASONS_SHOWN = 5  # ours: enough to see the kinds, short enough for a reply


def _cell(text: str, width: int) -> str:
    """``text`` cut to ``width`` columns with an ellipsis, padded to it."""
    return (text if len(text) <= width else text[: width - 1] + "…").ljust(width)


def price_table(prices: GpuPrices) -> list[str]:
    """The rows of one GPU's table, 77 columns at most; a flagged price is followed by a
    line per flag starting with ``!``."""
    head = f"{'#':>2} {'cloud':<9} {'instance':<18} {'region':<14} GPUs {'$/GPU-h':>7} {'$/h':>8}"
    lines = [head]
    for i, row in enumerate(prices.rows, start=1):
        o = row.offer
        kind = "spot" if o.spot else ""
        lines.append(
            f"{i:>2} {_cell(o.provider, 9)} {_cell(o.instance_type, 18)} "
            f"{_cell(o.region, 14)} {o.gpu_count:>4} {o.price_usd_per_gpu_hour:>7.2f} "
            f"{o.price_usd_per_hour:>8.2f} {kind}".rstrip()
        )
        lines.extend(f"   ! {flag}" for flag in row.flags)
    return lines


def _left_out(sources: Sequence[SourceInfo], reasons_max: int | None) -> list[str]:
    """Per source with rejected rows: how many, then a line per reason given."""
    lines = []
    for s in sources:
        if not s.rejected:
            continue
        reasons = list(s.rejections if reasons_max is None else s.rejections[:reasons_max])
        lines.append(f"{s.name}: {s.rejected} catalog row(s) left out" + (":" if reasons else ""))
        lines.extend(
            textwrap.fill(r, WIDTH, initial_indent="  ", subsequent_indent="    ") for r in reasons
        )
        more = s.rejected - len(reasons)
        if reasons and more > 0:
            kept = "" if reasons_max is None else " (gpufit prices in a terminal lists more)"
            lines.append(f"  and {more} more of the kinds above{kept}")
    return lines


def render_prices(
    groups: Sequence[GpuPrices],
    sources: Sequence[SourceInfo],
    *,
    now: datetime,
    reasons_max: int | None = REASONS_SHOWN,
) -> Message:
    """The cheapest offers of each GPU in ``groups``, per GPU-hour, with flagged prices, the
    price sources and their age, and the rows each source left out (at most ``reasons_max``
    reasons per source; ``None``: every one stored)."""
    e = escape_mrkdwn
    names = ", ".join(g.gpu.name for g in groups)
    blocks: list[Block] = [_header(f"Cheapest offers: {names}")]
    for g in groups:
        if not g.rows:
            blocks.append(_section(f"*{e(g.gpu.name)}*: no offer in the current price data."))
            continue
        shown = len(g.rows)
        blocks.append(
            _section(
                f"*{e(g.gpu.name)}*: {g.listed} offer(s) on {g.clouds} cloud(s); "
                f"the cheapest {shown} per GPU-hour (USD)\n"
                "```" + e("\n".join(price_table(g))) + "```"
            )
        )
    used = {row.offer.source for g in groups for row in g.rows}
    shown_sources = [s for s in sources if s.name in used] or list(sources)
    blocks.append(_context(_sources_text(shown_sources, now)))
    left_out = _left_out(shown_sources, reasons_max)
    if left_out:
        blocks.append(_context(e("\n".join(left_out))))
    if any(row.flags for g in groups for row in g.rows):
        blocks.append(
            _context("! marks a price to check before relying on it; it is listed, not hidden.")
        )
    best = [(g, g.rows[0].offer) for g in groups if g.rows]
    text = "; ".join(
        f"cheapest {e(g.gpu.name)}: {money(o.price_usd_per_gpu_hour)}/GPU-h on {e(o.provider)}"
        for g, o in best
    )
    return fit_message(blocks, text or f"No offers for {e(names)}")
