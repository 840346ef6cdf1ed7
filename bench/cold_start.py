"""CLI cold start: ``gpufit ask "..."`` as a fresh process vs ``python -c pass``.

Run: ``.venv/bin/python bench/cold_start.py`` (repeated subprocess runs). As on a fresh
install, the environment sets no variable the settings read (``GPUFIT_*``, ``REDIS_URL``,
``SLACK_*``) and the user state dir is an empty temporary one (``XDG_STATE_HOME``, Linux), so
the CLI answers from the bundled snapshot; ``-X importtime`` then shows which imports the time
goes to. Guard rail: the p50 of ``gpufit ask`` ≤ 0.6 s. The bench prints figures; it asserts
nothing.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import REPO, machine, stats
from bot.envnames import sets_any_setting

#: Guard rail for the p50 of ``gpufit ask`` as a fresh process, seconds.
GUARD_S = 0.6
RUNS = 15
QUESTION = "13B full finetune 2 days"


def _env(state_home: str) -> dict[str, str]:
    """A fresh install's environment: no setting, an empty user state dir ``state_home``."""
    env = {k: v for k, v in os.environ.items() if not sets_any_setting({k: v})}
    env["XDG_STATE_HOME"] = state_home
    env["PYTHONDONTWRITEBYTECODE"] = "0"  # write .pyc files, as an installed package has
    return env


def _time(cmd: list[str], runs: int, env: dict[str, str]) -> list[float]:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, check=True)
        samples.append(time.perf_counter() - start)
    return samples


def _imports(cmd: list[str], env: dict[str, str]) -> list[tuple[int, str]]:
    """The slowest top-level-ish imports by cumulative time (µs), from ``-X importtime``."""
    run = subprocess.run(
        [cmd[0], "-X", "importtime", *cmd[1:]],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    rows = []
    for line in run.stderr.splitlines():
        if not line.startswith("import time:") or "cumulative" in line:
            continue
        _, cumulative, name = (part.strip() for part in line.split("|"))
        rows.append((int(cumulative), name))
    return sorted(rows, reverse=True)[:12]


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="gpufit-cold-start-") as state_home:
        return _run(_env(state_home))


def _run(env: dict[str, str]) -> int:
    python = str(REPO / ".venv" / "bin" / "python")
    ask = [python, "-m", "bot", "ask", QUESTION]
    print(f"machine: {machine()}")
    for cmd in (ask, [python, "-c", "pass"]):  # warm the page cache and .pyc files
        subprocess.run(cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, check=True)
    base = stats(_time([python, "-c", "pass"], RUNS, env))
    full = stats(_time(ask, RUNS, env))
    imports = stats(_time([python, "-c", "import bot.cli"], RUNS, env))
    print(f"python -c pass          : {base.ms()}")
    print(f"python -c 'import bot.cli': {imports.ms()}")
    print(f"gpufit ask {QUESTION!r}: {full.ms()}")
    print(f"  ask over bare python: +{(full.p50_s - base.p50_s) * 1e3:.0f} ms")
    within = "within" if full.p50_s <= GUARD_S else "OVER"
    print(f"  guard rail ≤ {GUARD_S} s: {within}")
    print("slowest imports (cumulative ms) for ask:")
    for micros, name in _imports(ask, env):
        print(f"  {micros / 1e3:8.1f}  {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
