"""Bot RSS with a 20k-offer catalog loaded (and answering a question).

Run: ``.venv/bin/python bench/memory.py``. Each figure is measured in a fresh child process
(``ru_maxrss`` and /proc VmRSS): the interpreter alone, the bot's modules imported, then a
20k-offer synthetic SkyPilot catalog parsed and one question answered.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import REPO, machine

_RSS = (
    "import re;"
    "print(int(re.search(r'VmRSS:\\s+(\\d+)', open('/proc/self/status').read()).group(1)))"
)
STEPS = {
    "python alone": "pass",
    "bot modules imported": "import bot.app, bot.cli, bot.server",
    "20k-offer catalog loaded": (
        "import sys; sys.path.insert(0, '.'); import bot.app, bot.cli, bot.server;"
        "from bench.synth import synthetic_catalog; c = synthetic_catalog(20000)"
    ),
    "+ one question answered": (
        "import sys; sys.path.insert(0, '.'); import bot.app, bot.cli, bot.server;"
        "from bench.synth import synthetic_catalog, NOW; c = synthetic_catalog(20000);"
        "from recommender import parse_workload, recommend;"
        "recommend(parse_workload('13B full finetune 2 days'), c, now=NOW)"
    ),
}


def main() -> int:
    print(f"machine: {machine()}")
    python = str(REPO / ".venv" / "bin" / "python")
    for label, code in STEPS.items():
        out = subprocess.run(
            [python, "-c", f"{code}\n{_RSS}"], cwd=REPO, capture_output=True, text=True, check=True
        )
        print(f"  {label:<26} RSS {int(out.stdout.split()[-1]) / 1024:7.1f} MiB")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
