"""Terminal rendering with rich: pure functions from domain values to renderables."""

from __future__ import annotations

from datetime import datetime

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from bot.render.summary import (
    caveat_lines,
    headline,
    objective_line,
    option_table,
    other_ways,
    spot_sources,
    stale_prices,
)
from bot.render.text import (
    describe_workload,
    layout_text,
    memory_text,
    money,
    scaling_lines,
    time_text,
    tokens_text,
)
from recommender import (
    Estimate,
    HoursBasis,
    Option,
    Recommendation,
    Severity,
    SourceInfo,
    get_gpu,
    hours_text,
)

__all__ = ["render_details", "render_estimate", "render_recommendation"]


def _options_table(options: tuple[Option, ...], *, basis: HoursBasis) -> Table:
    """One row per option: price, the cost of the work and per billion tokens (the rank
    order), the time to finish it, and memory per GPU with what is left free."""
    default = basis is HoursBasis.DEFAULT
    budget = basis is HoursBasis.BUDGET
    table = Table(show_lines=False, header_style="bold", expand=False)
    table.add_column("#", justify="right")
    table.add_column("provider / instance")
    table.add_column("region")
    table.add_column("layout")
    table.add_column("$/h", justify="right")
    table.add_column("1 day" if default else "budget" if budget else "total", justify="right")
    table.add_column("$/B tok", justify="right")
    table.add_column("time per B tok" if default else "time", justify="right")
    table.add_column("mem/GPU (free)", justify="right")
    for o in options:
        kind = o.offer.kind
        time = hours_text(o.hours_per_btok if default else o.wall_hours)
        plan = o.plan
        mem = (
            f"{plan.memory.total_gib:.0f}/{plan.usable_gib:.0f} GiB "
            f"({max(plan.headroom_frac, 0.0) * 100:.0f} %)"
        )
        table.add_row(
            str(o.rank),
            Text(f"{o.offer.provider} {o.offer.instance_type} ({kind})"),
            Text(o.offer.region),
            Text(layout_text(plan)),
            money(o.price_usd_per_hour),
            money(o.expected_cost_usd),
            money(o.usd_per_btok),
            Text(
                time + (" !" if o.over_duration else ""), style="yellow" if o.over_duration else ""
            ),
            Text(mem, style="" if plan.safe else "yellow"),
        )
    return table


def _work_line(rec: Recommendation) -> Text | None:
    """What the options are priced for, when it is a fixed amount of work."""
    work = rec.work
    if work is None or work.tokens is None or work.basis is not HoursBasis.TOKENS:
        return None
    return Text(f"every option is priced for {tokens_text(work.tokens)} tokens", style="dim")


def _caveat_lines(options: tuple[Option, ...]) -> list[Text]:
    """Caveats per option; one shared by every option is printed once, for all."""
    shared = set.intersection(*(set(o.caveats) for o in options)) if len(options) > 1 else set()
    lines: list[Text] = []
    printed: set[str] = set()
    for o in options:
        for c in o.caveats:
            style = "yellow" if c.severity.value == "warn" else "dim"
            if c in shared:
                if c.text not in printed:
                    printed.add(c.text)
                    lines.append(Text(f"  [all] {c.text}", style=style))
                continue
            lines.append(Text(f"  [{o.rank}] {c.text}", style=style))
    return lines


def _sources(sources: tuple[SourceInfo, ...], now: datetime) -> Text:
    if not sources:
        return Text("prices: no source loaded", style="yellow")
    parts = []
    for s in sources:
        kind = "bundled snapshot" if s.bundled else "feed"
        kind = "" if s.name == kind else f"{kind}, "
        err = f", last refresh failed: {s.error}" if s.error else ""
        parts.append(
            f"{s.name} ({kind}as of {s.as_of:%Y-%m-%d}, {hours_text(s.age_hours(now))} old{err})"
        )
    return Text("prices: " + "; ".join(parts), style="dim")


def render_recommendation(rec: Recommendation) -> RenderableType:
    """The short answer (issue #39): the answer in one line, the options in a table that fits
    80 columns, the #1 option's caveats each once (naming the other options they apply to; the
    spot model's sources cited once), what was assumed and where the prices come from.
    ``gpufit ask --details`` prints :func:`render_details`, every option's caveats."""
    w = rec.workload
    out: list[RenderableType] = [Text(headline(rec), style="bold")]
    if rec.objective is not None:
        out.append(Text(objective_line(rec)))
    out.append(Text(describe_workload(w), style="dim"))
    if rec.options:
        out.extend(Text(line) for line in option_table(rec))
        shown = caveat_lines(rec.options, only_rank=1)
        for c in shown:
            style = "yellow" if c.severity is Severity.WARN else "dim"
            out.append(Text(f"{c.label(len(rec.options))} {c.text}", style=style))
        others = len(caveat_lines(rec.options)) - len(shown)
        if others > 0:
            out.append(
                Text(f"{others} more caveat(s) for the other options: --details", style="dim")
            )
        cited = spot_sources(rec.options[:1])
        if cited:
            out.append(Text("spot model: " + cited, style="dim"))
    out.extend(Text(line, style="green") for line in other_ways(rec))
    if w.assumed:
        out.append(Text("assumed: " + "; ".join(w.assumed), style="dim"))
    if w.ignored:
        out.append(Text("ignored (not understood): " + ", ".join(w.ignored), style="yellow"))
    for warning in w.warnings:
        out.append(Text("warning: " + warning, style="yellow"))
    for note in rec.notes:
        out.append(Text(note, style="dim"))
    more = rec.feasible - len(rec.options)
    hint = f"{more} more options: --top N; " if more > 0 else ""
    out.append(Text(hint + "memory, time breakdown, layouts and reasons: --details", style="dim"))
    sources = _sources(rec.sources, rec.generated_at)
    if stale_prices(rec):
        sources.stylize("yellow")
        sources = Text("stale ") + sources
    out.append(sources)
    return Group(*out)


def render_details(rec: Recommendation) -> RenderableType:
    """The long answer: workload, memory, the full options table, every caveat per option."""
    w = rec.workload
    out: list[RenderableType] = [Text(describe_workload(w), style="bold")]
    if w.assumed:
        out.append(Text("assumed: " + "; ".join(w.assumed), style="dim"))
    if w.ignored:
        out.append(Text("ignored (not understood): " + ", ".join(w.ignored), style="yellow"))
    for warning in w.warnings:
        out.append(Text("warning: " + warning, style="yellow"))
    if rec.objective is not None:
        out.append(Text(rec.objective.text, style="bold"))
    if rec.options:
        best = rec.options[0]
        out.append(Text(f"memory: {memory_text(best.plan)}"))
        for note in best.plan.notes:
            out.append(Text(f"  • {note}", style="dim"))
        out.append(Text(f"time (option 1), {time_text(best, w)}"))
        work = _work_line(rec)
        if work is not None:
            out.append(work)
        out.append(_options_table(rec.options, basis=rec.hours_basis))
        out.extend(_caveat_lines(rec.options))
        out.extend(Text(line, style="green") for line in scaling_lines(rec))
        if rec.feasible > len(rec.options):
            out.append(
                Text(f"{rec.feasible - len(rec.options)} more options: use --top N", style="dim")
            )
    else:
        out.append(Text("No offer in the catalog can run this job as asked:", style="bold red"))
        out.extend(Text(f"  • {reason}", style="red") for reason in rec.empty_reasons)
    if rec.over_budget is not None:
        gap = rec.over_budget
        cheapest = gap.cheapest
        out.append(
            Text(
                f"over budget: the cheapest that fits is {money(cheapest.expected_cost_usd)} "
                f"({cheapest.offer.provider} {cheapest.offer.instance_type}), "
                f"{money(gap.gap_usd)} over "
                f"{money(gap.budget_usd)}",
                style="yellow",
            )
        )
    if rec.alternative is not None:
        alt = rec.alternative
        o = alt.option
        out.append(
            Text(
                f"alternative: {alt.method.label} on {layout_text(o.plan)} "
                f"({o.offer.provider}) fits at {money(o.expected_cost_usd)}: {alt.reason}",
                style="green",
            )
        )
    if not rec.options and rec.alternative is None and rec.holding_layouts:
        out.append(Text("smallest layouts that would hold it:", style="bold"))
        for plan in rec.holding_layouts[:5]:
            out.append(Text(f"  {layout_text(plan)}: {plan.memory.total_gib:.1f} GiB per GPU"))
    for note in rec.notes:
        out.append(Text(note, style="dim"))
    out.append(_sources(rec.sources, rec.generated_at))
    return Group(*out)


def render_estimate(est: Estimate) -> RenderableType:
    w = est.workload
    out: list[RenderableType] = [Text(describe_workload(w), style="bold")]
    if w.assumed:
        out.append(Text("assumed: " + "; ".join(w.assumed), style="dim"))
    if w.ignored:
        out.append(Text("ignored (not understood): " + ", ".join(w.ignored), style="yellow"))
    for warning in w.warnings:
        out.append(Text("warning: " + warning, style="yellow"))
    if est.hardware is not None:
        p = est.hardware
        verdict = Text("fits" if p.fits else "does NOT fit", style="green" if p.fits else "red")
        out.append(Text.assemble("on ", layout_text(p), ": ", verdict))
        out.append(Text(memory_text(p)))
        for note in p.notes:
            out.append(Text(f"  • {note}", style="dim"))
    table = Table(header_style="bold")
    table.add_column("GPU")
    table.add_column("smallest layout")
    table.add_column("per GPU", justify="right")
    table.add_column("headroom", justify="right")
    for plan in est.layouts:
        table.add_row(
            get_gpu(plan.gpu_id).name,
            Text(layout_text(plan)),
            f"{plan.memory.total_gib:.1f}/{plan.usable_gib:.1f} GiB",
            f"{plan.headroom_frac * 100:.0f} %",
        )
    if est.layouts:
        out.append(table)
    return Group(*out)
