"""The ``gpufit`` command line: ask, estimate, launch, gpus, prices, feed, serve, worker.

Exit codes (a contract): 0 answered; 2 the input was not understood (stderr says what and
shows an example that works); 1 anything else.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, TextIO

from bot.envnames import sets_any_setting
from bot.feedcli import add_feed_parser, answers_from_bundled, cli_catalog, run_feed
from bot.launchcli import add_launch_parser
from bot.model_config import add_model_config_argument, parse_question
from recommender import (
    Catalog,
    GpufitError,
    WorkloadError,
    all_gpus,
    estimate,
    providers_named,
    recommend,
)
from recommender.feeds import utc_now

if TYPE_CHECKING:
    from bot.render.limits import Message
    from bot.settings import Settings
    from recommender import Workload

__all__ = ["main"]

# Start-up time is part of the CLI's contract (docs/benchmarks.md): asyncio, rich and the
# renderers are imported inside the commands that use them, the settings model (pydantic)
# only when the environment sets something, and the price store (httpx, redis) only when a
# store or a --catalog is used.

#: Columns of the text answer when the output is not a terminal (issue #39: "fits 80 columns").
TEXT_WIDTH = 80  # ours: the classic terminal width

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_BAD_INPUT = 2
#: Answered, but a number or an amount of the question was not understood (listed under
#: "ignored" and, in --json, the workload's "unread"): a script must not trust the answer.
EXIT_UNREAD = 3

EXAMPLES = """examples:
  gpufit ask "13B full finetune 2 days"
  gpufit ask "llama-3-70b qlora on 2B tokens under \\$3,000" --json
  gpufit estimate "llama-3-8b full finetune seq 4k on 1x A100-80GB"
  gpufit launch "13B full finetune 2 days" --option 1 --dir ./gpufit-launch
  gpufit prices H100 L4
  gpufit gpus
"""


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors as exit code 2 with an example (its default too)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        sys.stderr.write(f"gpufit: {message}\n{EXAMPLES}")
        raise SystemExit(EXIT_BAD_INPUT)


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="gpufit",
        description="Which cloud GPUs to rent for a training job, and what it will really cost.",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    ask = sub.add_parser("ask", help="ranked, priced options for a workload")
    ask.add_argument("text", nargs="+", help='the workload, e.g. "13B full finetune 2 days"')
    ask.add_argument("--json", action="store_true", help="print the JSON document")
    add_model_config_argument(ask)
    ask.add_argument("--top", type=int, default=None, help="how many options (default 5)")
    ask.add_argument(
        "--details",
        action="store_true",
        help="the long answer: memory, layouts and every caveat per option",
    )
    ask.add_argument(
        "--catalog",
        action="append",
        default=[],
        metavar="SRC",
        help="a price source (path or http(s) URL); repeatable; replaces the configured feeds",
    )
    ask.add_argument(
        "--provider",
        action="append",
        default=[],
        metavar="CLOUD",
        help="only this cloud (aws, gcp, do, cudo, ...); repeatable; as '<cloud> only' in the "
        "question, which it replaces",
    )

    est = sub.add_parser("estimate", help="memory and layout only, no prices")
    est.add_argument("text", nargs="+", help='the workload, e.g. "7B lora on 1x A100-40GB"')
    est.add_argument("--json", action="store_true", help="print the JSON document")
    add_model_config_argument(est)
    est.add_argument(
        "--catalog", action="append", default=[], metavar="SRC", help=argparse.SUPPRESS
    )
    sub.add_parser("gpus", help="the GPUs gpufit knows (as Slack's /gpufit gpus)")
    prc = sub.add_parser(
        "prices", help="the cheapest offers for one or more GPUs (as /gpufit prices)"
    )
    prc.add_argument("gpu", nargs="+", help="GPU names, e.g. H100 L4 or A100-80GB")
    prc.add_argument(
        "--catalog", action="append", default=[], metavar="SRC", help=argparse.SUPPRESS
    )
    add_feed_parser(sub)
    add_launch_parser(sub)
    wrk = sub.add_parser("worker", help="refresh prices on a schedule and post price-drop alerts")
    wrk.add_argument("--once", action="store_true", help="one refresh-and-evaluate pass, then exit")
    srv = sub.add_parser("serve", help="run the Slack app (HTTP on GPUFIT_HOST:GPUFIT_PORT)")
    srv.add_argument(
        "--socket-mode",
        action="store_true",
        help="connect to Slack over Socket Mode (needs SLACK_APP_TOKEN) instead of HTTP",
    )
    return parser


def _settings() -> Settings:
    """The settings from the environment (SettingsError names a bad variable: exit 1)."""
    from bot.settings import Settings

    return Settings.from_env()


def _load_catalog(sources: Sequence[str]) -> Catalog:
    # With nothing set in the environment the settings are the defaults (None below), so a
    # fresh install answers without building them; anything set is read, and checked, in full.
    settings = _settings() if sets_any_setting() else None
    if answers_from_bundled(settings, sources):
        from bot.catalog import bundled_catalog

        return bundled_catalog()  # no event loop needed for the snapshot shipped inside
    import asyncio

    if settings is None:  # nothing set, but an earlier refresh left embedded-Redis data
        settings = _settings()
    return asyncio.run(cli_catalog(settings, sources))


def _print_rich(out: TextIO, renderable: object) -> None:
    from rich.console import Console

    # The terminal's width when it is one; 80 columns otherwise (a pipe, a file, a test).
    width = Console(file=out).width if out.isatty() else TEXT_WIDTH
    Console(file=out, width=width).print(renderable)


def _exit_for(workload: Workload) -> int:
    """0, or 3 when the answer was given without a number of the question (listed)."""
    if workload.unread:
        sys.stderr.write(
            "gpufit: answered without these words, not understood: "
            + ", ".join(workload.unread)
            + '\n  say what each number is, as in "2 days", "$500", "on 2B tokens"\n'
        )
        return EXIT_UNREAD
    return EXIT_OK


def _cmd_ask(args: argparse.Namespace, out: TextIO) -> int:
    now = utc_now()
    text, workload = parse_question(args.text, args.model_config, now)
    if args.provider:
        workload = replace(workload, providers=providers_named(args.provider))
    if args.top is not None and not 1 <= args.top <= 100:
        raise WorkloadError("--top must be between 1 and 100.", hint="Try: --top 5")
    catalog = _load_catalog(args.catalog)
    rec = recommend(workload, catalog, now=now, top=args.top or 5)
    if args.json:
        import json

        from bot.render.jsonout import recommendation_document

        json.dump(recommendation_document(rec, query=text), out, indent=2)
        out.write("\n")
    else:
        from bot.render.terminal import render_details, render_recommendation

        _print_rich(out, (render_details if args.details else render_recommendation)(rec))
    return _exit_for(workload)


def _cmd_estimate(args: argparse.Namespace, out: TextIO) -> int:
    now = utc_now()
    text, workload = parse_question(args.text, args.model_config, now)
    est = estimate(workload)
    if args.json:
        import json

        from bot.render.jsonout import estimate_document

        json.dump(estimate_document(est, query=text, now=now), out, indent=2)
        out.write("\n")
    else:
        from bot.render.terminal import render_estimate

        _print_rich(out, render_estimate(est))
    return _exit_for(workload)


def _cmd_launch(args: argparse.Namespace, out: TextIO) -> int:
    from bot.launchcli import run_launch

    return run_launch(args, out, _load_catalog)


def _plain(message: Message) -> str:
    """A Block Kit message as plain text: the same words Slack shows, without the markup."""
    from bot.render.blocks import unescape_mrkdwn

    lines: list[str] = []
    for block in message.blocks:
        parts = [block["text"]] if "text" in block else block.get("elements", [])
        for part in parts:
            text = str(part.get("text", "")).replace("```", "").replace("*", "")
            lines.append(unescape_mrkdwn(text))
    return "\n".join(lines or [message.text]) + "\n"


def _cmd_gpus(args: argparse.Namespace, out: TextIO) -> int:
    from bot.render.blocks import render_gpus

    out.write(_plain(render_gpus(all_gpus())))
    return EXIT_OK


def _cmd_prices(args: argparse.Namespace, out: TextIO) -> int:
    from bot.render.prices import render_prices
    from recommender import gpu_prices, split_gpus

    gpu_ids = split_gpus(args.gpu)  # UnknownGpuError / WorkloadError: exit 2 with a hint
    catalog = _load_catalog(args.catalog)
    groups = [gpu_prices(gpu_id, catalog.offers) for gpu_id in gpu_ids]
    message = render_prices(groups, catalog.sources, now=utc_now(), reasons_max=None)
    out.write(_plain(message))
    return EXIT_OK


def _cmd_feed(args: argparse.Namespace, out: TextIO) -> int:
    import asyncio

    return asyncio.run(run_feed(args, _settings(), out))


def _cmd_worker(args: argparse.Namespace, out: TextIO) -> int:
    from bot.logs import configure_logging
    from bot.worker import run_worker

    settings = _settings()
    configure_logging(settings)
    return run_worker(settings, once=args.once, out=out)


def _cmd_serve(args: argparse.Namespace, out: TextIO) -> int:
    import asyncio

    from bot.logs import configure_logging
    from bot.server import serve
    from bot.services import build_services

    settings = _settings()
    configure_logging(settings)

    async def _serve() -> None:
        services = build_services(settings)
        try:
            await serve(settings, services, socket_mode=args.socket_mode)
        finally:
            await services.redis.aclose()
            if services.store is not None:
                await services.store.aclose()

    asyncio.run(_serve())
    return EXIT_OK


_COMMANDS: dict[str, Callable[[argparse.Namespace, TextIO], int]] = {
    "ask": _cmd_ask,
    "estimate": _cmd_estimate,
    "gpus": _cmd_gpus,
    "prices": _cmd_prices,
    "feed": _cmd_feed,
    "launch": _cmd_launch,
    "worker": _cmd_worker,
    "serve": _cmd_serve,
}


def main(argv: Sequence[str] | None = None, *, out: TextIO | None = None) -> int:
    """Run the CLI; returns the exit code (the console script exits with it)."""
    out = out or sys.stdout
    args = _build_parser().parse_args(argv)
    try:
        return _COMMANDS[args.command](args, out)
    except WorkloadError as exc:
        sys.stderr.write(f"gpufit: {exc.user_text()}\n")
        return EXIT_BAD_INPUT
    except GpufitError as exc:
        sys.stderr.write(f"gpufit: {exc.user_text()}\n")
        return EXIT_ERROR
    except KeyboardInterrupt:
        return EXIT_ERROR


def run() -> None:  # pragma: no cover - console-script shim
    raise SystemExit(main())
