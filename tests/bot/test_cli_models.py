"""`gpufit ask --json` end to end for the models of issue #35 item 1: vision-language, speech
and image models and marketing names are answered; a model that is not known exits 2 with
what it did not know, unless its config.json is given."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from bot.cli import EXIT_BAD_INPUT, EXIT_OK
from tests.bot.cli_helpers import run_cli
from tests.recommender.test_hf_config import LLAVA

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "docs/schema/recommendation-v1.schema.json").read_text())

# llava-hf/llava-1.5-7b-hf config.json's shape fields, under a name gpufit does not know
FOO_VL = {"_name_or_path": "acme/foo-vl-7b", **LLAVA}


def _ask(*argv: str) -> dict[str, Any]:
    code, text = run_cli("ask", *argv, "--json")
    assert code == EXIT_OK
    doc: dict[str, Any] = json.loads(text)
    jsonschema.validate(doc, SCHEMA)
    return doc


@pytest.mark.parametrize(
    ("query", "name", "vision", "audio"),
    [
        ("llava 1.6 34b lora on 50k samples", "LLaVA-NeXT 34B", True, 0),
        ("qwen2-vl-7b lora 1 day", "Qwen2-VL 7B", True, 0),
        ("whisper large-v3 fine-tune 1 day", "Whisper large-v3", False, 50),
        ("mistral small lora 1 day", "Mistral Small 24B", False, 0),
        ("llama 3 70b qlora 1 day", "Llama 3 70B", False, 0),
        ("vit-l/14 pretrain on 1M samples", "ViT-L/14", False, 0),
    ],
)
def test_ask_json_reads_the_model(query: str, name: str, vision: bool, audio: float) -> None:
    model = _ask(query)["workload"]["model"]
    assert model["name"] == name
    assert model["known"] is True
    assert (model["vision_params"] > 0) is vision
    assert (model["image_tokens"] > 0) is (vision or name.startswith("ViT"))
    assert model["tokens_per_audio_second"] == audio


def test_a_model_not_known_exits_2_naming_it(capsys: pytest.CaptureFixture[str]) -> None:
    code, _ = run_cli("ask", "foo-vl-7b lora 2 days", "--json")
    assert code == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "foo-vl-7b" in err
    assert "--model-config" in err


def test_a_config_json_sizes_the_model(tmp_path: Path) -> None:
    config = tmp_path / "foo-vl-7b" / "config.json"
    config.parent.mkdir()
    config.write_text(json.dumps(FOO_VL))
    flag = _ask("foo-vl-7b lora 2 days", "--model-config", str(config))
    in_text = _ask(f"{config} lora 2 days")
    for doc in (flag, in_text):
        model = doc["workload"]["model"]
        assert model["name"] == "acme/foo-vl-7b"
        assert model["params"] == pytest.approx(7.06e9, rel=0.02)
        assert model["image_tokens"] == 576
    assert "config.json" not in in_text["query"]


@pytest.mark.parametrize(
    ("content", "said"),
    [(None, "no file"), ("{not json", "not JSON"), ("[1, 2]", "not a model config")],
)
def test_a_config_it_cannot_read_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None, said: str
) -> None:
    config = tmp_path / "config.json"
    if content is not None:
        config.write_text(content)
    code, _ = run_cli("estimate", "lora 2 days", "--model-config", str(config))
    assert code == EXIT_BAD_INPUT
    assert said in capsys.readouterr().err


def test_launch_takes_the_config_json_too(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps(FOO_VL))
    target = tmp_path / "launch"
    code, _ = run_cli(
        "launch", "foo-vl-7b lora 2 days", "--model-config", str(config), "--dir", str(target)
    )
    assert code == EXIT_OK
    assert "acme-foo-vl-7b" in (target / "task.yaml").read_text()  # the task is named for it


def test_a_config_twice_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps(FOO_VL))
    code, _ = run_cli("ask", f"{config} lora 2 days", "--model-config", str(config))
    assert code == EXIT_BAD_INPUT
    assert "once" in capsys.readouterr().err
