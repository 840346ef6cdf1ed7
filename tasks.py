#!/usr/bin/env python3
"""Project tasks with nothing but Python 3.11+ installed.

python3 tasks.py demo    set up .venv and run: gpufit ask "13B full finetune 2 days"
python3 tasks.py test    set up .venv with the dev extras and run the whole quality gate:
                         ruff check, ruff format --check, mypy (strict), pytest
                         (GPUFIT_TEST_EXTRAS=dev,launch-test adds the launch files' readers)
python3 tasks.py check   the static checks only
python3 tasks.py fmt     apply ruff's fixes and formatting
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
BIN = VENV / ("Scripts" if sys.platform == "win32" else "bin")
PY = BIN / "python"
DEMO_QUERY = "13B full finetune 2 days"


def _run(*cmd: str | Path) -> None:
    print("+", " ".join(str(c) for c in cmd), flush=True)
    result = subprocess.run([str(c) for c in cmd], cwd=ROOT, check=False)
    if result.returncode != 0:
        raise SystemExit(result.returncode)


def _setup(extras: str) -> None:
    if sys.version_info < (3, 11):  # noqa: UP036 - tasks.py runs under any python3
        raise SystemExit("gpufit needs Python 3.11 or newer")
    if not PY.exists():
        venv.EnvBuilder(with_pip=True).create(VENV)
    # Reinstall only when pyproject.toml (or the extras) changed since the last setup.
    stamp = VENV / f".installed-{extras or 'base'}"
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if stamp.exists() and stamp.read_text() == digest:
        return
    target = f".[{extras}]" if extras else "."
    _run(PY, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "-e", target)
    stamp.write_text(digest)


def demo() -> None:
    _setup("")
    _run(BIN / "gpufit", "ask", DEMO_QUERY)


#: Extras the gate installs: "dev", or "dev,launch-test" for the tools that read the launch
#: files (SkyPilot, Accelerate, torchtitan: ~2.3 GiB, 5 min uncached), which .ci/run asks for.
EXTRAS = {"dev", "dev,launch-test"}


def _extras() -> str:
    extras = os.environ.get("GPUFIT_TEST_EXTRAS", "dev")
    if extras not in EXTRAS:
        raise SystemExit(f"GPUFIT_TEST_EXTRAS must be one of {sorted(EXTRAS)}, not {extras!r}")
    return extras


def check() -> None:
    _setup(_extras())
    _run(BIN / "ruff", "check", ".")
    _run(BIN / "ruff", "format", "--check", ".")
    _run(BIN / "mypy")


def test() -> None:
    check()
    _run(PY, "-m", "pytest", *sys.argv[2:])


def fmt() -> None:
    _setup("dev")
    _run(BIN / "ruff", "check", "--fix", ".")
    _run(BIN / "ruff", "format", ".")


TASKS = {"demo": demo, "test": test, "check": check, "fmt": fmt}

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in TASKS:
        raise SystemExit(__doc__)
    TASKS[sys.argv[1]]()
