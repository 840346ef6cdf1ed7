"""Resolve the set-up lines of gpufit's launch files against PyPI, in a clean venv (a CI step).

    python scripts/resolve_setup.py

runs ``pip install --dry-run`` in a fresh virtual environment for two lines:

* every pin an Accelerate plan's set-up can install (``recommender/launch/setup.py``
  :func:`requirements` with every method, objective and engine switched on): a plan installs a
  part of it, and a set that resolves resolves in every part;
* a torchtitan plan's set-up (:func:`torchtitan_requirements`).

It needs PyPI, so it is not a test (the suite stays on loopback); .ci/run runs it before the
tests with the system Python (it imports only the standard library and ``recommender``), each
resolve bounded by ``TIMEOUT_S``. Measured on the 2-core machine on 2026-12-04:
90 s for the first line and 47 s for the second with an empty pip cache and the cores to
itself; 315 s for the first while other jobs shared them (pip builds deepspeed's sdist to
read its metadata). Exit 0 when both resolve, 1 with pip's message when one does not (or
runs out of time).
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import time
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from recommender.launch.setup import PYTHON, requirements, torchtitan_requirements  # noqa: E402
from recommender.workload import Method, Objective  # noqa: E402

#: Seconds one resolve may take (ours: about three times the slowest measured, 315 s).
TIMEOUT_S = 900


def lines() -> dict[str, tuple[str, ...]]:
    """The set-up lines to resolve, by what they are for."""
    every = requirements(Method.QLORA, Objective.GRPO, deepspeed=True, vllm=True)
    return {"Accelerate plans (all pins)": every, "torchtitan plans": torchtitan_requirements()}


def resolve(pip: Path, packages: tuple[str, ...]) -> tuple[bool, str]:
    """(resolved, pip's last words) for one line."""
    command = [str(pip), "install", "--dry-run", "--disable-pip-version-check", *packages]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        return False, f"no answer within {TIMEOUT_S} s"
    said = [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]
    return done.returncode == 0, "\n".join(said[-12:])


def main() -> int:
    running = f"{sys.version_info.major}.{sys.version_info.minor}"
    if running != PYTHON:
        print(f"resolve_setup: the set-up's environment is Python {PYTHON}; this is {running}")
        return 1
    failed = 0
    with tempfile.TemporaryDirectory() as env:
        venv.EnvBuilder(with_pip=True).create(env)
        pip = Path(env) / "bin" / "pip"
        for what, packages in lines().items():
            start = time.monotonic()
            ok, said = resolve(pip, packages)
            took = time.monotonic() - start
            print(
                f"resolve_setup: {what}: {'resolves' if ok else 'DOES NOT RESOLVE'} ({took:.0f} s)"
            )
            print("  " + " ".join(packages))
            if not ok:
                failed += 1
                print(said)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
