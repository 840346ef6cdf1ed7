"""The short answer every face leads with (issue #39): one line that answers, a compact table
of the options, then each caveat once.

Pure text; the terminal prints it as it is and Slack puts the table in a code block. The
line is the #1 option in plain words: what to rent, where, the total cost, the hours and
whether that meets the deadline (or the stated duration). The table fits :data:`WIDTH`
columns. A caveat several options share is printed once, with the options it concerns; the
spot model's sources, which every spot caveat ends with, are cited once at the end.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from bot.render.text import layout_text, money, scaling_lines, tokens_text, up_to_text
from recommender import (
    Caveat,
    CaveatKind,
    HoursBasis,
    Option,
    Plan,
    Recommendation,
    Severity,
    get_gpu,
    hours_text,
)

__all__ = [
    "WIDTH",
    "CaveatLine",
    "caveat_lines",
    "headline",
    "objective_line",
    "option_table",
    "other_ways",
    "spot_sources",
    "stale_prices",
]

#: Columns the table takes at most (issue #39: "the terminal output fits 80 columns").
WIDTH = 80  # ours: the classic terminal width


@dataclass(frozen=True, slots=True)
class CaveatLine:
    """One caveat text and the options (ranks) it applies to."""

    text: str
    ranks: tuple[int, ...]
    severity: Severity
    #: The caveat's kind (:class:`recommender.CaveatKind` value), for the renderers' wording.
    kind: str

    def label(self, options: int) -> str:
        """``[all]``, ``[1]`` or ``[2,3]``."""
        if options > 1 and len(self.ranks) == options:
            return "[all]"
        return "[" + ",".join(str(r) for r in self.ranks) + "]"


def _gpus(plan: Plan) -> str:
    """``8× H100 SXM 80GB`` or ``2 nodes × 8 H100 SXM 80GB``."""
    name = get_gpu(plan.gpu_id).name
    if plan.nodes > 1:
        return f"{plan.nodes} nodes × {plan.gpus_per_node} {name}"
    return f"{plan.gpus}× {name}"


def _fit(option: Option, rec: Recommendation) -> str:
    """Whether the #1 option meets what was asked of time, in words ("" when nothing was)."""
    deadline = rec.workload.deadline_hours
    if deadline is not None:
        met = "within" if option.meets_deadline else "missing"
        return f"{met} your {hours_text(deadline)} deadline"
    if option.target_hours is not None:
        return (
            f"longer than the {hours_text(option.target_hours)} you asked for"
            if option.over_duration
            else f"within the {hours_text(option.target_hours)} you asked for"
        )
    return ""


def objective_line(rec: Recommendation) -> str:
    """What the ranking optimised, the line right under the answer ("" when not said)."""
    return rec.objective.text if rec.objective is not None else ""


def headline(rec: Recommendation) -> str:
    """The answer in one line: the #1 option, its cost, its hours and its fit."""
    best = rec.best
    if best is None:
        if rec.over_budget is not None:
            gap = rec.over_budget
            return (
                f"Nothing fits your {money(gap.budget_usd)} budget: the cheapest option costs "
                f"{money(gap.cheapest.expected_cost_usd)} ({money(gap.gap_usd)} over)."
            )
        return "No offer in the catalog can run this job as asked."
    o = best.offer
    kind = o.kind.replace("-", " ")
    what = f"{_gpus(best.plan)} {kind} on {o.provider} {o.instance_type} ({o.region})"
    if o.kind == "owned":  # the instance type already says "your 8× H100 SXM 80GB"
        what = o.instance_type
    if rec.hours_basis is HoursBasis.DEFAULT:
        return (
            f"Best: {what}: {money(best.usd_per_btok)} and {hours_text(best.hours_per_btok)} "
            f"per billion tokens ({money(best.expected_cost_usd)} a day)."
        )
    fit = _fit(best, rec)
    budget = rec.workload.budget_usd
    if budget is not None and best.expected_cost_usd <= budget:
        fit += (" and " if fit else "") + f"within your {money(budget)} budget"
    tokens = f" for {tokens_text(best.tokens)} tokens" if best.tokens else ""
    slow = up_to_text(best)
    if rec.hours_basis is HoursBasis.BUDGET and best.pessimistic_cost_usd > best.expected_cost_usd:
        # The budget is spent either way: a slower run buys less work, not more money.
        fewer = best.tokens * best.expected_cost_usd / best.pessimistic_cost_usd
        slow = f" (as few as {tokens_text(fewer)} if the run is at its slow end)"
    return (
        f"Best: {what}: {money(best.expected_cost_usd)} in total, "
        f"{hours_text(best.wall_hours)}{tokens}{slow}" + (f", {fit}" if fit else "") + "."
    )


def _cell(text: str, width: int) -> str:
    return (text if len(text) <= width else text[: width - 1] + "…").ljust(width)


def option_table(rec: Recommendation, rows: int | None = None) -> list[str]:
    """One line per option (the first ``rows``), at most :data:`WIDTH` columns; ``!`` marks a
    time over the deadline or the stated duration."""
    default = rec.hours_basis is HoursBasis.DEFAULT
    cost, time = ("$/B tok", "h/B tok") if default else ("total", "time")
    lines = [
        f"{'#':>2} {'cloud instance':<20} {'region':<10} {'GPUs':<12} spot "
        f"{'$/h':>7} {cost:>8} {time:>7}"
    ]
    for option in rec.options[:rows]:
        o = option.offer
        spent = option.usd_per_btok if default else option.expected_cost_usd
        took = option.hours_per_btok if default else option.wall_hours
        late = option.over_duration or not option.meets_deadline
        plan = option.plan
        count = f"{plan.nodes}×{plan.gpus_per_node}" if plan.nodes > 1 else f"{plan.gpus}×"
        gpus = f"{count} {get_gpu(plan.gpu_id).name}"
        lines.append(
            f"{option.rank:>2} {_cell(f'{o.provider} {o.instance_type}', 20)} "
            f"{_cell(o.region, 10)} {_cell(gpus, 12)} {'yes' if o.spot else 'no':<4} "
            f"{o.price_usd_per_hour:>7.2f} {money(spent):>8} {hours_text(took):>7}"
            + (" !" if late else "")
        )
    return [line.rstrip() for line in lines]


def spot_sources(options: Iterable[Option]) -> str:
    """What the spot model cites for these options, each source once: the preemption rates,
    then the waits for capacity ("" when no option is spot)."""
    rates: dict[str, None] = {}
    waits: dict[str, None] = {}
    for option in options:
        if option.spot is None:
            continue
        rate, _, wait = option.spot.source.partition("; wait for capacity: ")
        rates[rate.removeprefix("rate: ")] = None
        if wait:
            waits[wait] = None
    if not rates:
        return ""
    text = "preemption rates: " + "; ".join(rates)
    return text + (". Wait for capacity: " + "; ".join(waits) if waits else "")


def _strip_source(caveat: Caveat, option: Option) -> str:
    """The caveat's text without the spot model's source, which is cited once instead."""
    if option.spot is None:
        return caveat.text
    return caveat.text.replace(f" ({option.spot.source})", "")


def caveat_lines(options: Sequence[Option], *, only_rank: int | None = None) -> list[CaveatLine]:
    """Every distinct caveat once, with the ranks it applies to, warnings first, then in the
    order the options list them. ``only_rank``: the caveats of that option only, each still
    naming every option it applies to. The prices' age is left out: the sources line under
    the answer states it (:func:`stale_prices` says whether to mark it)."""
    ranks: dict[str, list[int]] = {}
    severity: dict[str, Severity] = {}
    kinds: dict[str, str] = {}
    for option in options:
        for caveat in option.caveats:
            if caveat.kind is CaveatKind.STALE_PRICES:
                continue
            text = _strip_source(caveat, option)
            ranks.setdefault(text, []).append(option.rank)
            kinds.setdefault(text, caveat.kind.value)
            if caveat.severity is Severity.WARN:
                severity[text] = Severity.WARN
            severity.setdefault(text, caveat.severity)
    lines = [
        CaveatLine(text, tuple(dict.fromkeys(r)), severity[text], kinds[text])
        for text, r in ranks.items()
    ]
    if only_rank is not None:
        lines = [line for line in lines if only_rank in line.ranks]
    return sorted(lines, key=lambda c: c.severity is not Severity.WARN)


def other_ways(rec: Recommendation, *, scaling: bool = True) -> list[str]:
    """What the answer adds when the options are not the whole story: why there is none, the
    budget gap, a cheaper method that fits, the fastest sensible and the cheapest plan when
    they differ from the first (``scaling``), or (nothing fits) the smallest layout that would
    hold the job."""
    lines = [f"• {reason}" for reason in rec.empty_reasons] if not rec.options else []
    if rec.over_budget is not None and rec.options:
        gap = rec.over_budget
        o = gap.cheapest.offer
        lines.append(
            f"Over budget: the cheapest option that fits costs "
            f"{money(gap.cheapest.expected_cost_usd)} ({o.provider} {o.instance_type}), "
            f"{money(gap.gap_usd)} over {money(gap.budget_usd)}."
        )
    if rec.alternative is not None:
        alt = rec.alternative
        way = alt.option
        lines.append(
            f"Alternative: {alt.method.label} on {layout_text(way.plan)} ({way.offer.provider}) "
            f"fits at {money(way.expected_cost_usd)}: {alt.reason}"
        )
    if scaling:
        lines.extend(line[0].upper() + line[1:] for line in scaling_lines(rec))
    if not rec.options and rec.alternative is None and rec.holding_layouts:
        plan = rec.holding_layouts[0]
        lines.append(
            f"Smallest layout that would hold it: {layout_text(plan)} "
            f"({plan.memory.total_gib:.1f} GiB per GPU)."
        )
    return lines


def stale_prices(rec: Recommendation) -> bool:
    """Whether an option's price is older than the freshness limit (a ``stale_prices``
    caveat): the sources line is then marked, in place of the caveat on every option."""
    return any(c.kind is CaveatKind.STALE_PRICES for o in rec.options for c in o.caveats)
