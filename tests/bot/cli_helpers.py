"""Run the ``gpufit`` CLI in-process, as the CLI tests do."""

from __future__ import annotations

import io

from bot.cli import main


def run_cli(*argv: str) -> tuple[int, str]:
    """The exit code and everything ``gpufit <argv>`` printed."""
    out = io.StringIO()
    code = main(list(argv), out=out)
    return code, out.getvalue()
