"""The `gpufit` command line: answers, JSON contract and exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from bot.cli import EXIT_BAD_INPUT, EXIT_OK, main
from tests.bot.cli_helpers import run_cli

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "docs/schema/recommendation-v1.schema.json").read_text())


def _json(*argv: str) -> dict[str, Any]:
    code, text = run_cli(*argv, "--json")
    assert code == EXIT_OK
    doc: dict[str, Any] = json.loads(text)
    jsonschema.validate(doc, SCHEMA)
    return doc


class TestAsk:
    def test_demo_query_prints_a_ranked_table(self) -> None:
        """The README's demo query answers with ranked options and the snapshot's date."""
        code, text = run_cli("ask", "13B full finetune 2 days")
        assert code == EXIT_OK
        assert "13B" in text
        assert "bundled snapshot" in text
        assert "as of 20" in text

    def test_the_answer_comes_first_and_fits_80_columns(self) -> None:
        """Issue #39: the first line is the answer (the #1 option, its total cost, hours and
        whether it fits the stated time); a compact table follows; each caveat is printed
        once and the spot model's sources once; nothing is wider than 80 columns when the
        output is not a terminal."""
        code, text = run_cli("ask", "13B full finetune 2 days")
        assert code == EXIT_OK
        lines = text.splitlines()
        assert lines[0].startswith("Best: ")
        assert "in total" in lines[0]
        assert max(len(line) for line in lines) <= 80
        assert [i for i, line in enumerate(lines) if line.startswith(" # cloud instance")]
        _, spot = run_cli("ask", "13B full finetune 2 days spot only")
        flat = " ".join(spot.split())
        assert flat.count("] spot: ~") >= 1
        assert flat.count("SkyPilot spot traces") == 1
        caveats = [line for line in lines if line.startswith("[")]
        assert len(caveats) == len(set(caveats))
        doc = _json("ask", "13B full finetune 2 days")
        assert " ".join(lines[:2]).startswith(doc["answer"][:70])

    def test_details_print_the_long_answer(self) -> None:
        code, text = run_cli("ask", "13B full finetune 2 days", "--details")
        assert code == EXIT_OK
        assert "memory:" in text
        assert "Best: " not in text

    def test_json_document_matches_the_schema(self) -> None:
        """`ask --json` prints a schema-valid, versioned document with ranked options."""
        doc = _json("ask", "13B full finetune 2 days")
        assert doc["schema_version"] == 1
        assert doc["kind"] == "recommendation"
        assert 1 <= len(doc["options"]) <= 5
        ranks = [o["rank"] for o in doc["options"]]
        assert ranks == list(range(1, len(ranks) + 1))
        assert doc["sources"][0]["bundled"] is True
        for o in doc["options"]:
            assert o["layout"]["fits"] is True
            assert o["expected_cost_usd"] >= o["cost_usd"] > 0

    def test_json_options_show_the_time_breakdown(self) -> None:
        """Each option's `time` object shows where its hours go and what was assumed (#33):
        the global batch, the micro-batches per step and the matmul efficiency; the parts
        times the micro-steps of the run add up to at most its hours."""
        doc = _json("ask", "pretrain 7B on 200B tokens")
        assert doc["options"]
        for o in doc["options"]:
            t = o["time"]
            assert t["global_batch_tokens"] >= 2e6  # the size rule at 7B (GPT-3, Llama)
            assert 0.2 < t["compute_efficiency"] < 0.8
            parts = t["seconds_per_micro_step"]
            assert parts["compute"] > 0
            assert parts["tensor_parallel"] >= 0
            assert parts["pipeline_bubble"] >= 0
            assert 0 < t["checkpoint_eval_stalls_frac"] < 0.25

    def test_details_show_the_time_breakdown_of_option_1(self) -> None:
        """Issue #33 item 3, in the human answer: compute, each exposed communication on the
        link or fabric it crosses, the bubble, the run's stalls, the global batch and the
        efficiency assumed, for the chosen layout (TP8 × PP here, across nodes)."""
        code, text = run_cli(
            "ask", "pretrain llama 3.1 405b on 1024x H100 on 1T tokens", "--details"
        )
        assert code == EXIT_OK
        flat = " ".join(text.split())
        line = flat[flat.index("time (option 1)") :]
        for part in ("compute ", "TP ", " on NVLink", "PP ", "DP ", "bubble ", "optimizer "):
            assert part in line, part
        for part in (
            "stalls 20 %",
            "failures ",
            "global batch ",
            "micro-batches",
            "% of the dense",
        ):
            assert part in line, part
        _, short = run_cli("ask", "pretrain llama 3.1 405b on 1024x H100 on 1T tokens")
        assert "time breakdown" in short  # the short answer says where to find it

    def test_top_limits_the_options(self) -> None:
        """`--top 2` returns at most two options."""
        doc = _json("ask", "7B lora 10 hours", "--top", "2")
        assert len(doc["options"]) <= 2

    def test_budget_gap_is_reported(self) -> None:
        """A budget too small for the job reports the gap in the JSON document."""
        doc = _json("ask", "70B full finetune on 10B tokens budget $100")
        assert doc["options"] == []
        assert doc["budget"]["within_budget"] is False
        assert doc["budget"]["gap_usd"] > 0

    def test_ignored_words_are_listed(self) -> None:
        """Words the parser did not understand are listed, not silently dropped."""
        doc = _json("ask", "13B full finetune 2 days flibbertigibbet")
        assert "flibbertigibbet" in doc["workload"]["ignored"]


class TestEstimate:
    def test_named_hardware_gets_a_fit_verdict(self) -> None:
        """`estimate ... on 1x A100-40GB` answers for exactly that hardware."""
        doc = _json("estimate", "llama-2-7b lora bf16-true seq 1304 on 1x A100-40GB")
        hw = doc["hardware"]
        assert hw["gpu"] == "A100-SXM-40GB"
        assert hw["gpus"] == 1
        assert isinstance(hw["fits"], bool)
        assert hw["memory_per_gpu"]["total_gib"] > 0

    def test_layouts_per_gpu_without_hardware(self) -> None:
        """Without hardware, the estimate lists the smallest layout per GPU type."""
        doc = _json("estimate", "13B full finetune")
        assert doc["hardware"] is None
        assert len(doc["layouts"]) >= 5


class TestExitCodes:
    @pytest.mark.parametrize("text", ["", "   ", "hello there", "make it fast please"])
    def test_not_understood_is_exit_2_with_an_example(
        self, text: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Input that yields no workload exits 2, saying what failed and showing an example."""
        code, out = run_cli("ask", text)
        err = capsys.readouterr().err
        assert code == EXIT_BAD_INPUT
        assert out == ""
        assert "Try:" in err
        assert "Traceback" not in err

    def test_unknown_gpu_is_exit_2(self, capsys: pytest.CaptureFixture[str]) -> None:
        """An unknown GPU in a hardware phrase is an input error, not a crash."""
        code, _ = run_cli("estimate", "7B lora on 2x H900")
        assert code == EXIT_BAD_INPUT
        assert "H900" in capsys.readouterr().err

    def test_usage_error_is_exit_2(self, capsys: pytest.CaptureFixture[str]) -> None:
        """A missing argument is an input error with an example."""
        with pytest.raises(SystemExit) as exc:
            main(["ask"])
        assert exc.value.code == EXIT_BAD_INPUT
        assert "gpufit ask" in capsys.readouterr().err

    def test_console_script_runs(self) -> None:
        """The installed entry point runs as a process and exits 0."""
        result = subprocess.run(
            [sys.executable, "-m", "bot", "ask", "7B qlora 5 hours", "--json"],
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)["kind"] == "recommendation"


class TestGpusAndPrices:
    """``gpufit gpus`` and ``gpufit prices GPU`` show what Slack's subcommands show."""

    def test_gpus_lists_the_gpu_table(self) -> None:
        code, text = run_cli("gpus")
        assert code == EXIT_OK
        assert "GPUs gpufit knows" in text
        assert "H100 SXM 80GB" in text
        assert "```" not in text

    def test_prices_lists_the_cheapest_offers(self) -> None:
        code, text = run_cli("prices", "H100")
        assert code == EXIT_OK
        assert "Cheapest offers: H100 SXM 80GB" in text
        assert "$/GPU-h" in text
        assert "*" not in text
        assert max(len(line) for line in text.splitlines() if line.startswith((" ", "!"))) <= 80

    def test_prices_takes_several_gpus(self) -> None:
        """`prices H100 L4` is two GPUs (issue #39: it was joined into one name and failed);
        a two-word name still reads as one GPU."""
        code, text = run_cli("prices", "H100", "L4")
        assert code == EXIT_OK
        assert "Cheapest offers: H100 SXM 80GB, L4" in text
        assert "\nL4: " in text
        code, text = run_cli("prices", "H100", "PCIe", "A10G")
        assert code == EXIT_OK
        assert "Cheapest offers: H100 PCIe 80GB, A10G" in text

    def test_prices_flags_outliers_and_shows_sources(self) -> None:
        """The bundled snapshot's AWS g6.xlarge spot in eu-south-2 is 89 % under its own
        on-demand price (0.0913 against 0.848 USD/h, SkyPilot catalog v8): flagged, not
        hidden; the source's date and age and the rows it left out are named."""
        code, text = run_cli("prices", "L4")
        assert code == EXIT_OK
        assert "! spot 89 % under its on-demand" in text
        assert "as of 2026-11-20" in text
        assert "catalog row(s) left out:" in text
        assert "vast row 22: GPU memory 47.9883 GiB does not match GPU 'RTX4090'" in text

    def test_unknown_gpu_is_exit_2_with_suggestions(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        code, _ = run_cli("prices", "H1000")
        assert code == EXIT_BAD_INPUT
        assert "did you mean" in capsys.readouterr().err


class TestLanguage:
    def test_a_deadline_is_read_from_the_clock_of_the_cli(self) -> None:
        doc = _json("ask", "llama-3-8b lora 100k samples by friday")
        assert any("deadline" in a for a in doc["workload"]["assumed"])

    def test_an_unknown_number_is_exit_2(self, capsys: pytest.CaptureFixture[str]) -> None:
        code, _ = run_cli("ask", "13b full finetune 100k")
        assert code == EXIT_BAD_INPUT
        err = capsys.readouterr().err
        assert "100k" in err
        assert "Try" in err or "Say what it is" in err
