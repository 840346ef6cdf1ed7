"""The bench scripts import against the current code (they are run by hand, not by CI)."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from bench.synth import synthetic_catalog

_BENCH = Path(__file__).resolve().parent.parent / "bench"


@pytest.mark.parametrize("name", sorted(p.stem for p in _BENCH.glob("*.py")))
def test_bench_module_imports(name: str) -> None:
    importlib.import_module(f"bench.{name}")


def test_synthetic_catalog_has_the_offers_asked_for() -> None:
    assert len(synthetic_catalog(40)) == 40
