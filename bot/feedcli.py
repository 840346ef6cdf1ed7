"""``gpufit feed refresh|status`` and the catalog the CLI answers from."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, TextIO

from bot.catalog import bundled_catalog, load_sources
from bot.runtime import embedded_cache_exists, feed_sources, open_price_store
from recommender import Catalog, CatalogError, StoreError

if TYPE_CHECKING:
    # The price store pulls in httpx and redis (~0.2 s): imported only where a store is used;
    # the settings model (pydantic), only where the environment sets something (bot.cli).
    from bot.settings import Settings
    from recommender.feeds import FeedSource, SourceRefresh

__all__ = ["add_feed_parser", "cli_catalog", "refresh_feeds", "run_feed"]

#: Exit code when some sources failed to refresh but others succeeded.
EXIT_PARTIAL = 1


def answers_from_bundled(settings: Settings | None, specs: Sequence[str]) -> bool:
    """Whether ``ask`` answers straight from the bundled snapshot (no source, no store).

    True on a fresh install: no ``--catalog``, no ``REDIS_URL``, no ``GPUFIT_FEEDS`` and no
    embedded-Redis data file from an earlier refresh. ``settings`` is None when the
    environment sets nothing (:func:`bot.envnames.sets_any_setting`): the defaults, which name
    no Redis and no feeds, known without building :class:`Settings`.
    """
    store = settings is not None and bool(settings.redis_url or settings.feeds)
    return not (specs or store or embedded_cache_exists(settings))


async def cli_catalog(settings: Settings, specs: Sequence[str]) -> Catalog:
    """The catalog ``ask`` answers from.

    ``--catalog`` sources are read directly. Otherwise prices come from the Redis price
    store (``REDIS_URL``, or the embedded Redis once a refresh has written to it). A fresh
    install with neither answers straight from the bundled snapshot, which is what the
    store would be seeded with anyway, without paying for an embedded server's start.
    """
    if specs:
        return await load_sources(specs)
    if answers_from_bundled(settings, specs):
        return bundled_catalog()
    try:
        store = open_price_store(settings)
    except StoreError as exc:
        return _with_error(bundled_catalog(), f"price store unavailable: {exc.message}")
    try:
        return await store.load_catalog()
    finally:
        await store.aclose()


def _with_error(catalog: Catalog, error: str) -> Catalog:
    sources = tuple(replace(s, error=error) for s in catalog.sources)
    return replace(catalog, sources=sources)


def add_feed_parser(sub: argparse._SubParsersAction[Any]) -> None:
    feed = sub.add_parser("feed", help="refresh the price feeds or show their status")
    actions = feed.add_subparsers(dest="feed_command", required=True, parser_class=type(feed))
    refresh = actions.add_parser("refresh", help="fetch every configured source now")
    refresh.add_argument(
        "sources",
        nargs="*",
        metavar="SRC",
        help="sources to refresh ([name=]path-or-url[;more]); default: GPUFIT_FEEDS",
    )
    actions.add_parser("status", help="per source: age, rows, rows rejected, last error")


def _sources(settings: Settings, specs: Sequence[str]) -> tuple[FeedSource, ...]:
    from recommender.feeds import FeedSource

    sources = tuple(FeedSource.parse(s) for s in specs) if specs else feed_sources(settings)
    if not sources:
        raise CatalogError(
            "No price feeds are configured.",
            hint="Set GPUFIT_FEEDS (comma-separated paths or URLs) or pass sources: "
            "gpufit feed refresh aws=https://example.com/aws/vms.csv",
        )
    return sources


async def refresh_feeds(settings: Settings, specs: Sequence[str], out: TextIO) -> int:
    """Refresh sources with a progress bar; exit 1 when any source failed."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from recommender.feeds import RefreshOutcome

    sources = _sources(settings, specs)
    store = open_price_store(settings)
    console = Console(file=out)
    try:
        with Progress(
            TextColumn("refreshing"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.description}"),
            console=console,
            transient=not console.is_terminal,
        ) as bar:
            task = bar.add_task("", total=len(sources))

            def progress(result: SourceRefresh, done: int, total: int) -> None:
                bar.update(task, completed=done, total=total, description=result.name)

            report = await store.refresh(sources, progress=progress)
    finally:
        await store.aclose()
    if report.locked_out:
        console.print("another gpufit process is refreshing right now; try again in a minute")
        return EXIT_PARTIAL
    for s in report.sources:
        if s.outcome is RefreshOutcome.FAILED:
            kept = " (keeping the last good copy)" if s.kept_previous else ""
            console.print(f"[red]✗[/red] {s.name}: {s.error}{kept}", markup=True, highlight=False)
        else:
            console.print(
                f"[green]✓[/green] {s.name}: {s.outcome.value}, {s.offers} offers "
                f"from {s.rows} rows, {s.rejected} rejected",
                markup=True,
                highlight=False,
            )
        for reason in s.errors[:3]:
            console.print(f"    {reason}", highlight=False, markup=False)
    return EXIT_PARTIAL if report.failed else 0


def _age(hours: float | None) -> str:
    if hours is None:
        return "-"
    return f"{hours * 60:.0f} min" if hours < 1 else f"{hours:.1f} h"


def _when(moment: datetime | None) -> str:
    return "-" if moment is None else f"{moment:%Y-%m-%d %H:%M}Z"


async def feed_status(settings: Settings, out: TextIO) -> int:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    store = open_price_store(settings)
    try:
        statuses = await store.status()
    finally:
        await store.aclose()
    table = Table(header_style="bold")
    for column in ("source", "as of", "age", "rows", "rejected", "offers", "last error"):
        table.add_column(column, justify="right" if column in {"rows", "rejected"} else "left")
    for s in statuses:
        name = f"{s.name} (bundled)" if s.bundled else s.name
        error = f"{s.error} ({_when(s.error_at)})" if s.error else ""
        table.add_row(
            Text(name),
            _when(s.as_of),
            _age(s.age_hours),
            str(s.rows),
            str(s.rejected),
            str(s.offers),
            Text(error, style="red"),
        )
    Console(file=out, width=120).print(table)
    return 0


async def run_feed(args: argparse.Namespace, settings: Settings, out: TextIO) -> int:
    if args.feed_command == "refresh":
        return await refresh_feeds(settings, args.sources, out)
    return await feed_status(settings, out)
