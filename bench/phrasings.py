"""How many questions of a phrasing set the parser reads as meant (issue #35 item 6).

Reads ``tests/recommender/data/phrasings_heldout.jsonl`` (or the development set,
``phrasings_dev.jsonl``): one JSON object a line, ``{"text": ..., "expect": {...}}``, written
as a domain expert asks and judged on what the expert meant. The held-out set was written
and committed before the parser was changed for it, and is never tuned on; the development
set is the one to tune on. Each question is parsed (``now`` is a fixed Monday, so "by
Friday" is 110 hours) and judged on:

* read as meant: every expected field matches (tokens within 3 %, to allow ``1k`` as 1,000
  or 1,024; money within 1 % after the shipped exchange-rate table; sizes within 2 %; the
  spot policy, the providers allowed (``providers``) or refused (``no_providers``: some
  allowed, none of these) and owned hardware where the set states them), or, for
  ``"ask"``, the parser asks back naming the words listed;
* tracebacks: any exception other than :class:`~recommender.errors.WorkloadError`;
* silent drops: a number or currency word of the question that no phrase used
  (:attr:`~recommender.workload.Workload.phrases`) and the answer does not list as not
  understood (:attr:`~recommender.workload.Workload.ignored`).

``tests/recommender/test_parse_heldout.py`` asserts the targets (≥ 95 %, 0, 0).

    .venv/bin/python -m bench.phrasings [--set dev] [--verbose]
"""

from __future__ import annotations

import json
import sys
import traceback
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from recommender.errors import WorkloadError
from recommender.parsing._scan import holds_quantity, tokenize
from recommender.parsing.parse import parse_workload
from recommender.pricing.fx import to_usd
from recommender.workload import Workload

__all__ = ["SETS", "Report", "dropped_numbers", "judge", "judge_one"]

DATA = Path(__file__).resolve().parent.parent / "tests" / "recommender" / "data"
SETS = {
    "heldout": DATA / "phrasings_heldout.jsonl",
    "heldout2": DATA / "phrasings_heldout2.jsonl",
    "heldout3": DATA / "phrasings_heldout3.jsonl",
    "heldout4": DATA / "phrasings_heldout4.jsonl",
    "heldout5": DATA / "phrasings_heldout5.jsonl",
    "heldout6": DATA / "phrasings_heldout6.jsonl",
    "heldout7": DATA / "phrasings_heldout7.jsonl",
    "heldout8": DATA / "phrasings_heldout8.jsonl",
    "heldout9": DATA / "phrasings_heldout9.jsonl",
    "heldout10": DATA / "phrasings_heldout10.jsonl",
    "heldout11": DATA / "phrasings_heldout11.jsonl",
    "heldout12": DATA / "phrasings_heldout12.jsonl",
    "heldout13": DATA / "phrasings_heldout13.jsonl",
    "heldout14": DATA / "phrasings_heldout14.jsonl",
    "heldout15": DATA / "phrasings_heldout15.jsonl",
    "heldout16": DATA / "phrasings_heldout16.jsonl",
    "heldout17": DATA / "phrasings_heldout17.jsonl",
    "heldout18": DATA / "phrasings_heldout18.jsonl",
    "heldout19": DATA / "phrasings_heldout19.jsonl",
    "heldout20": DATA / "phrasings_heldout20.jsonl",
    "heldout21": DATA / "phrasings_heldout21.jsonl",
    "heldout22": DATA / "phrasings_heldout22.jsonl",
    "heldout23": DATA / "phrasings_heldout23.jsonl",
    "heldout_lead": DATA / "phrasings_heldout_lead.jsonl",
    "heldout_lead2": DATA / "phrasings_heldout_lead2.jsonl",
    "heldout_lead3": DATA / "phrasings_heldout_lead3.jsonl",
    "dev": DATA / "phrasings_dev.jsonl",
}
#: The time the questions are asked: a Monday morning, so "by Friday" is 110 hours away.
NOW = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
#: Tolerances: ``1k tokens`` is 1,000 or 1,024 (2.4 % apart) as people write it.
TOKENS_TOL = 0.03  # ours
MONEY_TOL = 0.01  # ours
SIZE_TOL = 0.02  # ours


@dataclass
class Report:
    total: int = 0
    as_meant: int = 0
    tracebacks: list[str] = field(default_factory=list)
    drops: list[str] = field(default_factory=list)
    misses: list[str] = field(default_factory=list)

    @property
    def share(self) -> float:
        return self.as_meant / self.total if self.total else 0.0


def dropped_numbers(text: str, workload: Workload) -> list[str]:
    """Words of ``text`` holding a number or a currency that no phrase used and that the
    workload does not list as ignored: silent drops (issue #35 item 5)."""
    wanted = Counter(w for w in tokenize(text).raw if holds_quantity(w))
    used: Counter[str] = Counter()
    for phrase in workload.phrases:
        if phrase.sets:
            used.update(phrase.text.split(" "))
            # a number grouped with spaces ("5 000 €") is one word of the question
            used.update(w for w in wanted if " " in w and w in phrase.text)
    listed = set(workload.ignored)  # listed once, however often it occurs
    return sorted(w for w in (wanted - used).elements() if w not in listed)


def _close(got: float | None, want: float, tol: float) -> bool:
    return got is not None and abs(got - want) <= tol * abs(want)


def _mismatches(w: Workload, expect: dict[str, Any]) -> list[str]:
    out: list[str] = []
    hw = w.hardware
    checks: dict[str, tuple[object, bool]] = {}
    for key, want in expect.items():
        if key == "model":
            checks[key] = (w.model.name, want.lower() in w.model.name.lower())
        elif key == "params_b":
            checks[key] = (w.model.params / 1e9, _close(w.model.params / 1e9, want, SIZE_TOL))
        elif key == "method":
            checks[key] = (w.method.value, w.method.value == want)
        elif key == "algorithm":
            checks[key] = (w.objective.value, w.objective.value == want)
        elif key == "tokens":
            checks[key] = (w.tokens, _close(w.tokens, want, TOKENS_TOL))
        elif key == "budget":
            amount, code = want
            usd = amount if code == "USD" else to_usd(amount, code)
            checks[key] = (w.budget_usd, _close(w.budget_usd, usd, MONEY_TOL))
        elif key == "duration_hours":
            ok = w.duration_hours is None if want is None else _close(w.duration_hours, want, 0.01)
            checks[key] = (w.duration_hours, ok)
        elif key == "gpu":
            gpu = hw.gpu_id if hw is not None else None
            checks[key] = (gpu, gpu is not None and want.lower() in gpu.lower())
        elif key == "gpus":
            count = hw.count if hw is not None else None
            checks[key] = (count, count == want)
        elif key == "stale":
            stale = any("days old" in line for line in w.warnings)
            checks[key] = (stale, stale == want)
        elif key == "spot":
            checks[key] = (w.spot.value, w.spot.value == want)
        elif key == "providers":
            checks[key] = (sorted(w.providers), set(w.providers) == set(want))
        elif key == "no_providers":
            left = set(w.providers)
            checks[key] = (sorted(left), bool(left) and not left & set(want))
        elif key == "owned":
            checks[key] = (w.owned, w.owned == want)
        elif key in ("seq_len", "group_size", "completion_len"):
            checks[key] = (getattr(w, key), getattr(w, key) == want)
        else:
            raise ValueError(f"unknown expectation {key!r}")
    for key, (got, ok) in checks.items():
        if not ok:
            out.append(f"{key}: got {got!r}, meant {expect[key]!r}")
    return out


def judge_one(text: str, expect: dict[str, Any]) -> tuple[bool, str | None, list[str], str]:
    """(read as meant, traceback or None, silent drops, what differed)."""
    try:
        w = parse_workload(text, now=NOW)
    except WorkloadError as err:
        asked = " ".join(err.not_understood)
        want = expect.get("ask")
        ok = want is not None and all(word in asked for word in want)
        return ok, None, [], "" if ok else f"asked back: {err.message}"
    except Exception:
        return False, traceback.format_exc(limit=3), [], "traceback"
    if "ask" in expect:
        return False, None, dropped_numbers(text, w), "answered; meant to ask back"
    misses = _mismatches(w, expect)
    return not misses, None, dropped_numbers(text, w), "; ".join(misses)


def judge(path: Path) -> Report:
    report = Report()
    for line in path.read_text("utf-8").splitlines():
        if not line.strip():
            continue
        case = json.loads(line)
        ok, tb, drops, why = judge_one(case["text"], case["expect"])
        report.total += 1
        report.as_meant += ok
        if tb is not None:
            report.tracebacks.append(f"{case['text']}\n{tb}")
        if drops:
            report.drops.append(f"{case['text']}: {drops}")
        if not ok:
            report.misses.append(f"{case['text']}: {why}")
    return report


def main(argv: list[str]) -> int:
    name = argv[argv.index("--set") + 1] if "--set" in argv else "heldout"
    report = judge(SETS[name])
    print(
        f"{name}: {report.as_meant}/{report.total} read as meant ({report.share:.1%}); "
        f"{len(report.tracebacks)} tracebacks; {len(report.drops)} silent drops"
    )
    if "--verbose" in argv:
        for line in (*report.misses, *report.drops, *report.tracebacks):
            print(" -", line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
