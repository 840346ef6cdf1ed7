"""Block Kit renderers: pure functions from domain values to Slack messages.

Every piece of untrusted text (the user's own words echoed back, provider / instance / region
names from price feeds, caveat and note texts) goes into a ``plain_text`` object or through
:func:`escape_mrkdwn` into a mrkdwn object with ``verbatim: true``, so ``<!channel>``,
``<@U…>``, ``<http://x|y>`` and ``@here`` can neither ping anyone nor disguise a link. Every
message goes through :func:`bot.render.limits.fit_message` and carries a ``text`` fallback.

Button values carry the query text (never state in ``action_id``); the listeners turn a click
back into a query with :func:`decode_watch_value` or the value itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from bot.render.buttons import (
    decode_launch_value,
    decode_watch_value,
    encode_launch_value,
    encode_watch_value,
)
from bot.render.limits import BUTTON_VALUE_MAX, Block, Message, fit_message, truncate
from bot.render.safe import public_caveat, public_source_name
from bot.render.text import (
    describe_workload,
    finish_text,
    free_text,
    layout_text,
    memory_text,
    money,
    per_btok_text,
    scaling_lines,
    time_text,
    training_text,
)
from recommender import (
    Caveat,
    GpuSpec,
    HoursBasis,
    Option,
    Recommendation,
    SourceInfo,
    hours_text,
)

__all__ = [
    "ACTION_DETAILS",
    "ACTION_IDS",
    "ACTION_LAUNCH",
    "ACTION_MORE",
    "ACTION_ON_DEMAND_ONLY",
    "ACTION_POST",
    "ACTION_SPOT_ONLY",
    "ACTION_WATCH",
    "decode_launch_value",
    "decode_watch_value",
    "encode_launch_value",
    "encode_watch_value",
    "escape_mrkdwn",
    "render_apology",
    "render_gpus",
    "render_help",
    "render_notice",
    "render_problem",
    "render_recommendation",
    "render_working",
    "unescape_mrkdwn",
]

ACTION_DETAILS = "gpufit_details"
ACTION_MORE = "gpufit_more"
ACTION_SPOT_ONLY = "gpufit_spot_only"
ACTION_ON_DEMAND_ONLY = "gpufit_on_demand_only"
ACTION_WATCH = "gpufit_watch"
ACTION_POST = "gpufit_post"
ACTION_LAUNCH = "gpufit_launch"
_REFINE_IDS = (ACTION_MORE, ACTION_SPOT_ONLY, ACTION_ON_DEMAND_ONLY)
ACTION_IDS = (*_REFINE_IDS, ACTION_WATCH, ACTION_POST, ACTION_LAUNCH, ACTION_DETAILS)
#: Up to this many options, each gets a "Launch files" button (an actions block): 50 blocks max.
LAUNCH_BUTTONS_MAX = 10

#: Longest echo of the user's question in a reply (the full text is in the button values).
QUERY_ECHO_MAX = 300  # ours: a sentence, not a page

HELP_EXAMPLES = (
    "13B full finetune 2 days",
    "llama-3-70b qlora on 2B tokens under $3k",
    "mistral-7b lora seq 4k on 1x A100-80GB spot ok",
    "llama-3-8b full finetune on 1B tokens no spot aws only",
)


# ----------------------------------------------------------------- text objects


def escape_mrkdwn(text: str) -> str:
    """Escape Slack's three control characters (``&``, ``<``, ``>``) and nothing else."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def unescape_mrkdwn(text: str) -> str:
    """The inverse of :func:`escape_mrkdwn`, for showing a rendered message as plain text."""
    return text.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


def _md(text: str) -> Block:
    """A mrkdwn object that Slack does not auto-link or auto-mention (``verbatim``)."""
    return {"type": "mrkdwn", "text": text, "verbatim": True}


def _plain(text: str) -> Block:
    return {"type": "plain_text", "text": text, "emoji": True}


def _section(text: str, **extra: Any) -> Block:
    return {"type": "section", "text": _md(text), **extra}


def _context(*texts: str) -> Block:
    return {"type": "context", "elements": [_md(t) for t in texts]}


def _header(text: str) -> Block:
    return {"type": "header", "text": _plain(truncate(text, 150))}


def _button(text: str, action_id: str, value: str, *, style: str | None = None) -> Block:
    button: Block = {"type": "button", "text": _plain(text), "action_id": action_id, "value": value}
    if style is not None:
        button["style"] = style
    return button


# ----------------------------------------------------------------- pieces


def _why(option: Option, rec: Recommendation) -> str:
    plan = option.plan
    reasons = [
        f"fits in {plan.memory.total_gib:.0f} of {plan.usable_gib:.0f} GiB per GPU, "
        + free_text(plan)
    ]
    if rec.workload.deadline_hours is not None:
        reasons.append("meets the deadline" if option.meets_deadline else "misses the deadline")
    elif option.rank == 1:
        reasons.append(
            "lowest cost per B tokens"
            if rec.hours_basis is HoursBasis.DEFAULT
            else "lowest expected cost for the work"
        )
    if rec.workload.budget_usd is not None:
        reasons.append(f"within the {money(rec.workload.budget_usd)} budget")
    return "; ".join(reasons)


def _option_text(option: Option, rec: Recommendation) -> str:
    o = option.offer
    kind = o.kind
    e = escape_mrkdwn
    per = per_btok_text(option.usd_per_btok)
    finish = finish_text(option, rec.hours_basis)
    if option.over_duration:
        finish += " :warning:"
    if rec.hours_basis is HoursBasis.DEFAULT:
        cost = f"one day {money(option.expected_cost_usd)} · *{per}*"
    elif rec.hours_basis is HoursBasis.BUDGET:
        cost = f"your budget *{money(option.expected_cost_usd)}* · {per}"
    else:
        cost = f"whole run *{money(option.expected_cost_usd)}* · {per}"
    return (
        f"*{option.rank}. {e(o.provider)} {e(o.instance_type)}* ({kind}) · {e(o.region)}\n"
        f"*{money(option.price_usd_per_hour)}/h* · {cost} · {finish}\n"
        f"Layout: {e(layout_text(option.plan))}\n"
        f"Why: {e(_why(option, rec))}"
    )


def _caveat_text(caveat: Caveat) -> str:
    mark = ":warning: " if caveat.severity.value == "warn" else ""
    return mark + escape_mrkdwn(public_caveat(caveat.kind.value, caveat.text))


def _shared_caveats(options: Sequence[Option]) -> set[Caveat]:
    if len(options) < 2:
        return set()
    return set.intersection(*(set(o.caveats) for o in options))


def _sources_text(sources: Iterable[SourceInfo], now: datetime) -> str:
    parts = []
    for s in sources:
        kind = "bundled snapshot" if s.bundled else "feed"
        # The error itself stays in the logs: it may name internal hosts or carry the feed
        # URL's credentials; users learn only that these are the last good prices.
        failed = ", last refresh failed; showing the last good prices" if s.error else ""
        name = public_source_name(s.name)
        kind = "" if name == kind else f"{kind}, "
        parts.append(
            f"{name} ({kind}as of {s.as_of:%Y-%m-%d %H:%M} UTC, "
            f"{hours_text(s.age_hours(now))} old{failed})"
        )
    if not parts:
        return "Prices: no price source loaded"
    return "Prices: " + escape_mrkdwn("; ".join(parts))


def _echo(query: str) -> Block:
    """The user's question, echoed as plain text (no markup is ever interpreted)."""
    return {
        "type": "context",
        "elements": [_plain("You asked: " + truncate(" ".join(query.split()), QUERY_ECHO_MAX))],
    }


def _query_buttons(query: str, *, more: bool, ephemeral: bool) -> list[Block]:
    if len(query) > BUTTON_VALUE_MAX:
        return []
    buttons = []
    if more:
        buttons.append(_button("More options", ACTION_MORE, query))
    buttons.append(_button("Spot only", ACTION_SPOT_ONLY, query))
    buttons.append(_button("On-demand only", ACTION_ON_DEMAND_ONLY, query))
    if ephemeral:
        buttons.append(_button("Post to channel", ACTION_POST, query, style="primary"))
    return buttons


# ----------------------------------------------------------------- messages


def render_recommendation(rec: Recommendation, *, query: str, ephemeral: bool = True) -> Message:
    """The detailed answer, behind the short answer's **Details** button
    (:mod:`bot.render.short`): workload and defaults, memory, options with their layout and
    reasons, every caveat, prices, and the Watch, Launch and refine buttons.

    Args:
        rec: the recommendation to show.
        query: the text it answers (echoed back, and carried by the buttons).
        ephemeral: the reply is only visible to the asker (adds "Post to channel").
    """
    w = rec.workload
    e = escape_mrkdwn
    blocks: list[Block] = [_header(f"{w.model.name} · {training_text(w)}"), _echo(query)]
    blocks.append(_section("*Workload:* " + e(describe_workload(w))))
    if w.assumed:
        blocks.append(_context("Assumed: " + e("; ".join(w.assumed))))
    if w.warnings:
        blocks.append(_context("\n".join(":warning: " + e(x) for x in w.warnings)))
    if w.ignored:
        blocks.append(_context("Not understood (ignored): " + e(", ".join(w.ignored))))
    if rec.objective is not None:
        blocks.append(_context("*" + e(rec.objective.text) + "*"))
    shared = _shared_caveats(rec.options)
    if rec.options:
        best = rec.options[0].plan
        lines = ["*Memory (option 1):* " + e(memory_text(best))]
        lines.extend("• " + e(note) for note in best.notes)
        blocks.append(_section("\n".join(lines)))
        blocks.append(_section("*Time (option 1):* " + e(time_text(rec.options[0], w))))
        blocks.append({"type": "divider"})
        for option in rec.options:
            watch = encode_watch_value(query, option.offer.key)
            section = _section(_option_text(option, rec), block_id=f"option_{option.rank}")
            if len(watch) <= BUTTON_VALUE_MAX:
                section["accessory"] = _button("Watch price", ACTION_WATCH, watch)
            blocks.append(section)
            own = [c for c in option.caveats if c not in shared]
            if own:
                blocks.append(_context("\n".join(_caveat_text(c) for c in own)))
            launch = encode_launch_value(query, option.rank, len(rec.options), option.offer.key)
            if len(rec.options) <= LAUNCH_BUTTONS_MAX and len(launch) <= BUTTON_VALUE_MAX:
                button = _button("Launch files", ACTION_LAUNCH, launch)
                blocks.append(
                    {"type": "actions", "block_id": f"launch_{option.rank}", "elements": [button]}
                )
        if shared:
            blocks.append(
                _context(
                    "All options: "
                    + "\n".join(
                        _caveat_text(c)
                        for c in sorted(shared, key=lambda c: (c.kind.value, c.text))
                    )
                )
            )
        scaling = scaling_lines(rec)
        if scaling:
            blocks.append(_context("\n".join(e(line) for line in scaling)))
        hidden = rec.feasible - len(rec.options)
        if hidden > 0:
            blocks.append(_context(f"{hidden} more option(s) fit: press *More options*."))
    else:
        reasons = "\n".join("• " + e(reason) for reason in rec.empty_reasons)
        blocks.append(_section("*No offer in the catalog can run this job as asked:*\n" + reasons))
    if rec.over_budget is not None:
        gap = rec.over_budget
        o = gap.cheapest.offer
        blocks.append(
            _section(
                f":money_with_wings: Over budget: the cheapest option that fits costs "
                f"*{money(gap.cheapest.expected_cost_usd)}* ({e(o.provider)} "
                f"{e(o.instance_type)}), {money(gap.gap_usd)} over {money(gap.budget_usd)}."
            )
        )
    if rec.alternative is not None:
        alt = rec.alternative
        alt_option = alt.option
        blocks.append(
            _section(
                f":bulb: Alternative: *{e(alt.method.label)}* on {e(layout_text(alt_option.plan))} "
                f"({e(alt_option.offer.provider)}) fits at "
                f"*{money(alt_option.expected_cost_usd)}*: {e(alt.reason)}"
            )
        )
    if not rec.options and rec.alternative is None and rec.holding_layouts:
        lines = ["Smallest layouts that would hold it:"]
        lines.extend(
            f"• {e(layout_text(p))}: {p.memory.total_gib:.1f} GiB per GPU"
            for p in rec.holding_layouts[:5]
        )
        blocks.append(_section("\n".join(lines)))
    if rec.notes:
        blocks.append(_context(*(e(n) for n in rec.notes[:9])))
    blocks.append(_context(_sources_text(rec.sources, rec.generated_at)))
    buttons = _query_buttons(query, more=rec.feasible > len(rec.options), ephemeral=ephemeral)
    if buttons:
        blocks.append({"type": "actions", "block_id": "gpufit_refine", "elements": buttons})
    return fit_message(blocks, _fallback(rec))


def _fallback(rec: Recommendation) -> str:
    w = rec.workload
    what = escape_mrkdwn(f"{w.model.name} {training_text(w)}")
    best = rec.best
    if best is None:
        return f"gpufit: no offer can run {what} as asked"
    o = best.offer
    return (
        f"gpufit: {len(rec.options)} option(s) for {what}; best "
        f"{money(best.expected_cost_usd)} on {escape_mrkdwn(o.provider)} "
        f"{escape_mrkdwn(o.instance_type)}"
    )


def render_help() -> Message:
    examples = "\n".join(f"• `/gpufit {escape_mrkdwn(x)}`" for x in HELP_EXAMPLES)
    blocks = [
        _header("gpufit: which GPUs to rent for a training job"),
        _section(
            "Describe the job in plain words: model, method, data or duration, budget.\n" + examples
        ),
        _section(
            "*Also:*\n"
            "• `/gpufit gpus`: the GPUs gpufit knows\n"
            "• `/gpufit prices H100 L4`: the cheapest offers of each GPU, odd prices marked\n"
            "• `/gpufit watch …`, `/gpufit watches`, `/gpufit unwatch …`: price alerts\n"
            '• Mention `@gpufit` in a thread; follow-ups there ("what about spot?") '
            "refine the question."
        ),
    ]
    return fit_message(blocks, "gpufit help: describe a training job, e.g. 13B full finetune")


def render_gpus(gpus: Sequence[GpuSpec]) -> Message:
    """The GPU table: memory, bf16 dense TFLOP/s and the intra-node link, in code blocks."""
    rows = [f"{'GPU':<24} {'memory':>8} {'bf16':>7}  link"]
    for g in gpus:
        bf16 = f"{g.bf16_tflops:.0f}" if g.bf16_tflops else "-"
        rows.append(f"{g.name:<24} {g.memory_gb:>5.0f} GB {bf16:>7}  {g.intra_node.value}")
    blocks: list[Block] = [_header(f"GPUs gpufit knows ({len(gpus)})")]
    chunk: list[str] = []
    for row in rows:
        if sum(len(r) + 1 for r in chunk) + len(row) > 2800:
            blocks.append(_section("```" + escape_mrkdwn("\n".join(chunk)) + "```"))
            chunk = [rows[0]]
        chunk.append(row)
    if chunk:
        blocks.append(_section("```" + escape_mrkdwn("\n".join(chunk)) + "```"))
    blocks.append(_context("bf16: dense TFLOP/s per GPU. Try `/gpufit prices H100`."))
    return fit_message(blocks, f"gpufit knows {len(gpus)} GPUs")


def render_problem(message: str, hint: str | None) -> Message:
    """Input gpufit did not understand: what, and an example that works."""
    lines = [":thinking_face: Didn't understand: " + escape_mrkdwn(message)]
    if hint:
        lines.append(escape_mrkdwn(hint))
    text = "\n".join(lines)
    return fit_message([_section(text)], text)


def render_notice(text: str) -> Message:
    """A one-paragraph message (errors gpufit expected, "coming soon", confirmations)."""
    escaped = escape_mrkdwn(text)
    return fit_message([_section(escaped)], escaped)


def render_apology(incident: str) -> Message:
    text = (
        f":sweat: Sorry, something went wrong on our side (incident `{escape_mrkdwn(incident)}`). "
        "Please try again; if it keeps happening, tell your admin the incident id."
    )
    return fit_message([_section(text)], text)


def render_working() -> Message:
    return fit_message([_context(":hourglass_flowing_sand: Working on it…")], "Working on it…")
