"""The set-up's pins work together: each pinned release's published requirements on the
other pinned packages hold, and every one of them accepts the set-up's Python.

The requirements are PyPI's metadata of the pinned releases (``data/launch_pins_requirements
.json`` names its source); this checks them offline. A resolve of the whole pinned set
(``pip install --dry-run`` of all nine pins) takes about a minute against PyPI, too slow and
networked for the suite: README.md's Launch section gives the command.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from recommender.launch.setup import PINS, PYTHON, requirements
from recommender.workload import Method, Objective

PUBLISHED = json.loads(
    (Path(__file__).resolve().parent / "data/launch_pins_requirements.json").read_text()
)["packages"]


def test_the_requirements_on_file_are_the_pinned_releases() -> None:
    assert {name: p["version"] for name, p in PUBLISHED.items()} == dict(PINS)


@pytest.mark.parametrize("name", sorted(PINS))
def test_each_pin_meets_the_others_requirements(name: str) -> None:
    for line in PUBLISHED[name]["requires"]:
        req = Requirement(line)
        assert Version(PINS[req.name]) in req.specifier, f"{name} needs {line}"
    requires_python = PUBLISHED[name]["requires_python"]
    assert Version(f"{PYTHON}.0") in SpecifierSet(requires_python or "")


def test_a_pin_that_breaks_a_requirement_is_caught() -> None:
    """The check bites: transformers 5.23.0 (newest on PyPI) is outside vllm's range."""
    (vllm_transformers,) = (
        Requirement(r) for r in PUBLISHED["vllm"]["requires"] if r.startswith("transformers")
    )
    assert Version("5.23.0") not in vllm_transformers.specifier


@pytest.mark.parametrize(
    ("method", "objective", "deepspeed", "vllm", "extra"),
    [
        (Method.FULL, Objective.SFT, False, False, set()),
        (Method.FULL, Objective.SFT, True, False, {"deepspeed"}),
        (Method.LORA, Objective.SFT, False, False, {"peft"}),
        (Method.QLORA, Objective.SFT, False, False, {"peft", "bitsandbytes"}),
        (Method.LORA, Objective.DPO, False, False, {"peft", "trl"}),
        (Method.FULL, Objective.KTO, False, False, {"trl"}),
        (Method.FULL, Objective.ORPO, False, False, {"trl"}),
        (Method.LORA, Objective.GRPO, False, True, {"peft", "trl", "vllm"}),
        (Method.FULL, Objective.GRPO, False, False, {"trl"}),
    ],
)
def test_what_each_method_installs(
    method: Method, objective: Objective, deepspeed: bool, vllm: bool, extra: set[str]
) -> None:
    pinned = requirements(method, objective, deepspeed=deepspeed, vllm=vllm)
    names = {line.split("==")[0] for line in pinned}
    assert names == {"torch", "accelerate", "transformers", "datasets"} | extra
    for line in pinned:
        name, version = line.split("==")
        assert PINS[name] == version
