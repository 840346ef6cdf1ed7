"""Run the ``gpufit`` CLI, in-process (``run_cli``) or as a worker process (``worker_once``)."""

from __future__ import annotations

import asyncio
import io
import os
import sys
from pathlib import Path

from bot.cli import main

ROOT = Path(__file__).resolve().parents[2]


def run_cli(*argv: str) -> tuple[int, str]:
    """The exit code and everything ``gpufit <argv>`` printed."""
    out = io.StringIO()
    code = main(list(argv), out=out)
    return code, out.getvalue()


async def worker_once(redis_url: str, slack_url: str, **env: str) -> tuple[int, str, str]:
    """`gpufit worker --once` as a process on ``redis_url`` and the fake Slack at ``slack_url``
    (``env`` adds or overrides variables): its exit code, stdout and stderr."""
    environ = {
        k: v for k, v in os.environ.items() if not k.startswith(("GPUFIT_", "SLACK_", "REDIS_"))
    }
    environ |= {
        "REDIS_URL": redis_url,
        "SLACK_API_URL": slack_url,
        "SLACK_BOT_TOKEN": "xoxb-test",
        "GPUFIT_METRICS_ENABLED": "false",
        **env,
    }
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot",
        "worker",
        "--once",
        cwd=ROOT,
        env=environ,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()
