"""docs/architecture.md stays current: it lists every package, and only packages that exist."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")


def _packages() -> set[str]:
    """Every Python package under recommender/ and bot/, and the bundled data folder."""
    found = {
        init.parent.relative_to(ROOT).as_posix()
        for top in ("recommender", "bot")
        for init in (ROOT / top).rglob("__init__.py")
    }
    return found | {"recommender/data"}


def _listed() -> set[str]:
    """The packages the table lists, one row each."""
    return set(re.findall(r"^\| `([\w/]+)` \|", DOC, flags=re.MULTILINE))


def test_every_package_is_listed() -> None:
    assert _packages() - _listed() == set()


def test_every_listed_package_exists() -> None:
    assert _listed() - _packages() == set()


def test_the_diagram_names_every_recommender_subpackage() -> None:
    diagram = DOC.split("```text", 1)[1].split("```", 1)[0]
    subpackages = {
        p for p in _packages() if p.startswith("recommender/") and p != "recommender/data"
    }
    assert {p for p in subpackages if p not in diagram} == set()
