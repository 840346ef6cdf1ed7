"""CLI cold start: ``gpufit ask "..."`` as a fresh process vs ``python -c pass``.

Run: ``.venv/bin/python bench/cold_start.py`` (repeated subprocess runs). The environment
is cleared of gpufit/Redis settings so the CLI answers from the bundled snapshot, as on a
fresh install; ``-X importtime`` then shows which imports the time goes to. Guard rail: the
p50 of ``gpufit ask`` ≤ 0.6 s. The bench prints figures; it asserts nothing.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import REPO, machine, stats

#: Guard rail for the p50 of ``gpufit ask`` as a fresh process, seconds.
GUARD_S = 0.6
RUNS = 15
QUESTION = "13B full finetune 2 days"


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GPUFIT_", "REDIS_"))}
    env["PYTHONDONTWRITEBYTECODE"] = "0"
    return env


def _time(cmd: list[str], runs: int) -> list[float]:
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, cwd=REPO, env=_env(), stdout=subprocess.DEVNULL, check=True)
        samples.append(time.perf_counter() - start)
    return samples


def _imports(cmd: list[str]) -> list[tuple[int, str]]:
    """The slowest top-level-ish imports by cumulative time (µs), from ``-X importtime``."""
    run = subprocess.run(
        [cmd[0], "-X", "importtime", *cmd[1:]],
        cwd=REPO,
        env=_env(),
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
    python = str(REPO / ".venv" / "bin" / "python")
    ask = [python, "-m", "bot", "ask", QUESTION]
    print(f"machine: {machine()}")
    for cmd in (ask, [python, "-c", "pass"]):  # warm the page cache and .pyc files
        subprocess.run(cmd, cwd=REPO, env=_env(), stdout=subprocess.DEVNULL, check=True)
    base = stats(_time([python, "-c", "pass"], RUNS))
    full = stats(_time(ask, RUNS))
    imports = stats(_time([python, "-c", "import bot.cli"], RUNS))
    print(f"python -c pass          : {base.ms()}")
    print(f"python -c 'import bot.cli': {imports.ms()}")
    print(f"gpufit ask {QUESTION!r}: {full.ms()}")
    print(f"  ask over bare python: +{(full.p50_s - base.p50_s) * 1e3:.0f} ms")
    within = "within" if full.p50_s <= GUARD_S else "OVER"
    print(f"  guard rail ≤ {GUARD_S} s: {within}")
    print("slowest imports (cumulative ms) for ask:")
    for micros, name in _imports(ask):
        print(f"  {micros / 1e3:8.1f}  {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
