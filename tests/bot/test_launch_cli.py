"""`gpufit launch`: the three files of one option, and clear refusals (exit 2)."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from bot.cli import EXIT_BAD_INPUT, EXIT_OK, main
from recommender import LaunchSpec, launch_files
from tests.bot.cli_helpers import run_cli

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "docs/schema/recommendation-v1.schema.json").read_text())
FEED = ROOT / "tests/feeds/data/feed.json"  # one 8×H100 and one 1×L40S offer
#: Pinned to AWS so that option 1 is on a cloud SkyPilot names (the files then carry its
#: instance type); unpinned, the bundled snapshot's cheapest option can be on a cloud gpufit
#: launches on "any cloud with these GPUs".
QUERY = "13B full finetune 2 days aws only"


def _option_json(n: int, *extra: str) -> dict[str, Any]:
    code, text = run_cli("ask", QUERY, "--json", *extra)
    assert code == EXIT_OK
    option: dict[str, Any] = json.loads(text)["options"][n - 1]
    return option


def test_writes_the_three_files_of_option_one(tmp_path: Path) -> None:
    target = tmp_path / "out"
    code, text = run_cli("launch", QUERY, "--dir", str(target))
    assert code == EXIT_OK
    assert sorted(p.name for p in target.iterdir()) == ["README.md", "accelerate.yaml", "task.yaml"]
    assert "wrote" in text
    task = yaml.safe_load((target / "task.yaml").read_text())
    option = _option_json(1)
    assert task["resources"]["instance_type"] == option["instance_type"]
    assert task["resources"]["use_spot"] is option["spot"]
    assert task["num_nodes"] == option["nodes"]
    readme = (target / "README.md").read_text()
    # a spot option leads with a managed job (it recovers from preemptions), on demand not
    command = "sky jobs launch -n" if option["spot"] else "sky launch -c"
    assert command in readme
    assert f"`{command}" in text
    # The README prints the estimate to 0.1 GiB, the JSON to 0.01: the same figure.
    shown = re.search(r"Memory per GPU: ([0-9.]+) of", readme)
    assert shown is not None
    assert float(shown.group(1)) == pytest.approx(
        option["layout"]["memory_per_gpu"]["total_gib"], abs=0.051
    )


@pytest.mark.parametrize("n", [1, 2])
def test_files_are_a_function_of_the_json_option(tmp_path: Path, n: int) -> None:
    """`ask --json` carries everything `launch` needs: its launch object rebuilds the files."""
    code, _ = run_cli("launch", QUERY, "--option", str(n), "--dir", str(tmp_path / "o"))
    assert code == EXIT_OK
    spec = LaunchSpec(**_option_json(n)["launch"])
    files = launch_files(spec, query=QUERY)
    for name, text in files.by_name().items():
        assert (tmp_path / "o" / name).read_text() == text


def test_option_out_of_range(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for n in ("9", "0"):
        code, _ = run_cli("launch", QUERY, "--option", n, "--dir", str(tmp_path / "x"))
        assert code == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "There is no option 9" in err
    assert "--top 9" in err
    assert "counts from 1" in err
    assert not (tmp_path / "x").exists()


def test_refuses_a_directory_with_files_unless_forced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    code, _ = run_cli("launch", QUERY, "--dir", str(tmp_path))
    assert code == EXIT_BAD_INPUT
    assert "already holds files (notes.txt)" in capsys.readouterr().err
    assert not (tmp_path / "task.yaml").exists()
    code, _ = run_cli("launch", QUERY, "--dir", str(tmp_path), "--force")
    assert code == EXIT_OK
    assert (tmp_path / "task.yaml").exists()
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_force_never_writes_through_a_symlink(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue #34: ``--force`` wrote the task through a ``task.yaml`` linked elsewhere."""
    outside = tmp_path / "precious.txt"
    outside.write_text("mine")
    target = tmp_path / "launch"
    target.mkdir()
    (target / "task.yaml").symlink_to(outside)
    code, _ = run_cli("launch", QUERY, "--dir", str(target), "--force")
    assert code == EXIT_BAD_INPUT
    assert "is a symbolic link" in capsys.readouterr().err
    assert outside.read_text() == "mine"


def test_refuses_a_file_as_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "f").write_text("")
    code, _ = run_cli("launch", QUERY, "--dir", str(tmp_path / "f"), "--force")
    assert code == EXIT_BAD_INPUT
    assert "is a file" in capsys.readouterr().err


def test_catalog_without_an_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _ = run_cli(
        "launch",
        "llama-3-70b full finetune on 1x L40S",
        "--catalog",
        str(FEED),
        "--dir",
        str(tmp_path / "x"),
    )
    assert code == EXIT_BAD_INPUT
    assert "nothing to launch" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_a_question_with_a_deadline_can_be_launched(tmp_path: Path) -> None:
    """`ask` reads "by friday" from the clock; `launch` of the same text must too."""
    out = io.StringIO()
    code = main(["launch", "7B lora on 1B tokens by friday", "--dir", str(tmp_path / "d")], out=out)
    assert code == 0
    assert (tmp_path / "d" / "task.yaml").exists()


def test_a_plan_no_supported_framework_runs_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """TP8 × PP2: nothing is written, and the message names what is missing (exit 2)."""
    query = "llama-3-70b pretrain on 100B tokens tp 8 pp 2"
    code, _ = run_cli("launch", query, "--dir", str(tmp_path / "x"))
    assert code == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "cannot write launch files for option 1" in err
    assert "no model definition for Llama 3 70B" in err  # torchtitan's are Llama 3.1's
    assert "Traceback" not in err
    assert not (tmp_path / "x").exists()
    code, text = run_cli("ask", query, "--json")
    assert code == EXIT_OK
    launch = json.loads(text)["options"][0]["launch"]
    assert launch["model_split"] == "TP8 × PP2"
    assert "no model definition for Llama 3 70B" in launch["unsupported"]


def test_a_pipeline_plan_writes_a_torchtitan_config(tmp_path: Path) -> None:
    """Pipeline parallelism, which Accelerate lacks, gets torchtitan.toml in place of
    accelerate.yaml, with the degrees of the plan."""
    import tomllib

    target = tmp_path / "pp"
    query = "llama 3.1 70b pretrain on 100B tokens tp 8 pp 4 on 64 H100 aws only"
    code, text = run_cli("launch", query, "--dir", str(target))
    assert code == EXIT_OK, text
    assert sorted(p.name for p in target.iterdir()) == ["README.md", "task.yaml", "torchtitan.toml"]
    doc = tomllib.loads((target / "torchtitan.toml").read_text())
    assert doc["parallelism"]["tensor_parallel_degree"] == 8
    assert doc["parallelism"]["pipeline_parallel_degree"] == 4
    assert doc["model"]["flavor"] == "70B"
    assert "--env DATASET=" in text
    # `ask --json` carries the same plan, valid against the published schema
    code, out = run_cli("ask", query, "--json")
    assert code == EXIT_OK
    answer = json.loads(out)
    jsonschema.validate(answer, SCHEMA)
    launch = answer["options"][0]["launch"]
    assert launch["framework"] == "torchtitan"
    assert launch["distributed_type"] == ""
    assert LaunchSpec(**launch).pp == 4
