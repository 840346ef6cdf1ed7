"""`gpufit estimate --json` shows how each phrase of the question was read, the training
algorithm beside the method, and exits 3 when it answered without a number (issue #35
items 2 and 5)."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from bot.cli import EXIT_OK, EXIT_UNREAD
from tests.bot.cli_helpers import ROOT, run_cli

SCHEMA = json.loads((ROOT / "docs/schema/recommendation-v1.schema.json").read_text())


def _estimate(question: str, code: int = EXIT_OK) -> dict[str, Any]:
    got, text = run_cli("estimate", question, "--json")
    assert got == code
    doc: dict[str, Any] = json.loads(text)
    jsonschema.validate(doc, SCHEMA)
    workload: dict[str, Any] = doc["workload"]
    return workload


@pytest.mark.parametrize(
    ("question", "method", "algorithm"),
    [
        ("llama-3-8b dpo qlora", "qlora", "dpo"),
        ("llama-3-8b kto full fine-tune", "full", "kto"),
        ("qwen2.5-7b grpo lora", "lora", "grpo"),
        ("llama-3-8b simpo", "full", "simpo"),
        ("llama-3-8b lora", "lora", "sft"),
        ("1b pretrain on 1B tokens", "pretrain", "sft"),
    ],
)
def test_the_algorithm_is_its_own_field(question: str, method: str, algorithm: str) -> None:
    """Before, DPO showed only in the assumptions' prose and `method` said "full"."""
    workload = _estimate(question)
    assert (workload["method"], workload["algorithm"]) == (method, algorithm)


def test_every_number_is_shown_with_the_phrase_it_came_from() -> None:
    workload = _estimate("llama-3-70b qlora on 2B tokens under $3k on 8x H100, lr 2e-5")
    sets = {p["text"]: {s["field"]: s["value"] for s in p["sets"]} for p in workload["phrases"]}
    assert sets["on 2B tokens"] == {"tokens": 2e9}
    assert sets["under $3k"] == {"budget_usd": 3000}
    assert sets["on 8x H100"]["gpu_count"] == 8
    assert "does not change the estimate" in str(sets["lr 2e-5"]["note"])
    assert workload["unread"] == []


def test_a_number_left_unread_is_listed_and_exits_3() -> None:
    """A second model size contradicts the first: the answer is for 13B, and a script sees
    the 7b was not used (exit 3, `unread`)."""
    workload = _estimate("13b 7b lora 2 days", code=EXIT_UNREAD)
    assert workload["unread"] == ["7b"]
    assert workload["ignored"] == ["7b"]


def test_a_word_left_unread_is_not_an_error() -> None:
    workload = _estimate("llama-3-8b lora on German legal text, 2 days")
    assert workload["unread"] == []
    assert "German" in workload["ignored"]


def test_ask_exits_3_too_and_says_which_words(capsys: pytest.CaptureFixture[str]) -> None:
    code, text = run_cli("ask", "13b 7b lora 2 days")
    assert code == EXIT_UNREAD
    assert text  # the answer is still printed
    assert "not understood: 7b" in capsys.readouterr().err
