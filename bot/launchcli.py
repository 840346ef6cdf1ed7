"""``gpufit launch``: write the launch files of one option of ``gpufit ask`` into a directory.

The files come from :func:`recommender.launch_files` (pure); this module picks the option,
checks the directory and writes. Bad input (an option number out of range, a catalog with no
option for the job, a directory that already holds files) is a :class:`WorkloadError`, which
the CLI reports with exit code 2.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

from bot.model_config import add_model_config_argument, parse_question
from recommender import (
    Catalog,
    LaunchFiles,
    WorkloadError,
    launch_command,
    launch_files,
    launch_spec,
    recommend,
)
from recommender.feeds import utc_now

__all__ = ["DEFAULT_DIR", "add_launch_parser", "run_launch", "write_launch_files"]

DEFAULT_DIR = "gpufit-launch"
DEFAULT_TOP = 5  # as ``gpufit ask``


def add_launch_parser(sub: argparse._SubParsersAction[Any]) -> None:
    launch = sub.add_parser(
        "launch",
        help="write a SkyPilot task, an Accelerate or torchtitan config and a README for one "
        "option",
    )
    launch.add_argument("text", nargs="+", help='the workload, e.g. "13B full finetune 2 days"')
    launch.add_argument(
        "--option", type=int, default=1, metavar="N", help="which option of `gpufit ask` (1)"
    )
    launch.add_argument(
        "--dir", default=DEFAULT_DIR, metavar="DIR", help=f"where to write (./{DEFAULT_DIR})"
    )
    launch.add_argument(
        "--force", action="store_true", help="write into a directory that already holds files"
    )
    launch.add_argument("--top", type=int, default=None, help="as `gpufit ask --top` (default 5)")
    add_model_config_argument(launch)
    launch.add_argument(
        "--catalog",
        action="append",
        default=[],
        metavar="SRC",
        help="a price source (path or http(s) URL); repeatable; as for `gpufit ask`",
    )


def write_launch_files(files: LaunchFiles, directory: Path, *, force: bool) -> list[Path]:
    """Write the files into ``directory`` (created if absent); refuse one that holds files
    already unless ``force`` (then only the three launch files are written over).

    Raises:
        WorkloadError: the directory is a file, or holds files and ``force`` is off.
    """
    if directory.exists() and not directory.is_dir():
        raise WorkloadError(
            f"{directory} is a file, not a directory.", hint="Try: --dir gpufit-launch"
        )
    if directory.is_dir() and not force:
        present = sorted(p.name for p in directory.iterdir())
        if present:
            shown = ", ".join(present[:5]) + (", …" if len(present) > 5 else "")
            raise WorkloadError(
                f"{directory} already holds files ({shown}).",
                hint="Choose an empty or new --dir, or pass --force to write over "
                "task.yaml, the framework's config and README.md there.",
            )
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in files.by_name().items():
        path = directory / name
        _write_no_follow(path, text)
        written.append(path)
    return written


def _write_no_follow(path: Path, text: str) -> None:
    """Write ``path``, never through a symbolic link (issue #34: ``--force`` wrote through a
    ``task.yaml`` linked to a file elsewhere). ``O_NOFOLLOW`` refuses a link at the moment of
    opening, so one swapped in after a check is refused too."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as exc:
        if path.is_symlink():
            raise WorkloadError(
                f"{path} is a symbolic link; gpufit does not write through links.",
                hint="Remove the link, or choose a new --dir.",
            ) from None
        raise WorkloadError(
            f"Cannot write {path}: {exc.strerror or exc}.", hint="Choose a new --dir."
        ) from None
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)


def run_launch(
    args: argparse.Namespace, out: TextIO, load_catalog: Callable[[Sequence[str]], Catalog]
) -> int:
    now = utc_now()
    text, workload = parse_question(args.text, args.model_config, now)
    top = args.top if args.top is not None else DEFAULT_TOP
    if not 1 <= top <= 100:
        raise WorkloadError("--top must be between 1 and 100.", hint="Try: --top 5")
    if args.option < 1:
        raise WorkloadError("--option counts from 1.", hint="Try: --option 1")
    rec = recommend(workload, load_catalog(args.catalog), now=now, top=top)
    if not rec.options:
        raise WorkloadError(
            "No offer in the catalog can run this job as asked, so there is nothing to launch.",
            hint=f'See why: gpufit ask "{text}"',
        )
    if args.option > len(rec.options):
        raise WorkloadError(
            f"There is no option {args.option}: `gpufit ask` has {len(rec.options)} "
            "option(s) for this question.",
            hint=f"Try: --option {len(rec.options)}"
            + (f", or --top {args.option} for more options" if len(rec.options) == top else ""),
        )
    option = rec.options[args.option - 1]
    spec = launch_spec(workload, option)
    files = launch_files(spec, query=text)  # refuses a plan no supported framework runs
    directory = Path(args.dir)
    written = write_launch_files(files, directory, force=args.force)
    o = option.offer
    out.write(
        f"Option {option.rank}: {o.provider} {o.instance_type} × {option.nodes} "
        f"({o.kind}), {option.plan.describe()}\n"
    )
    for path in written:
        out.write(f"  wrote {path}\n")
    out.write(f"Next: read {directory / 'README.md'}, then `{launch_command(spec)}`.\n")
    return 0
