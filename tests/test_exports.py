"""The public surfaces of ``recommender`` and ``recommender.feeds``: ``__all__`` is sorted and
complete, and the feed package loads its heavy modules only when a name needs them."""

from __future__ import annotations

import subprocess
import sys

import pytest

import recommender
import recommender.feeds


def test_all_is_sorted_and_unique() -> None:
    """``recommender.__all__`` is sorted and has no duplicates."""
    assert list(recommender.__all__) == sorted(set(recommender.__all__))


def test_all_matches_public_names() -> None:
    """Every exported name exists, and every public (non-module) name is exported."""
    for name in recommender.__all__:
        assert hasattr(recommender, name), name
    public = {
        name
        for name, value in vars(recommender).items()
        if not name.startswith("_") and type(value).__name__ != "module"
    }
    assert public == set(recommender.__all__)


def test_feeds_all_is_unique_and_every_name_resolves() -> None:
    """``recommender.feeds.__all__`` names each export once (ruff's RUF022 keeps it sorted),
    and each name loads."""
    names = list(recommender.feeds.__all__)
    assert len(names) == len(set(names))
    for name in names:
        assert getattr(recommender.feeds, name) is not None, name


def test_feeds_rejects_an_unknown_name() -> None:
    """A name the package does not export is an AttributeError, as for any module."""
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = recommender.feeds.no_such_name  # type: ignore[attr-defined]


def test_importing_feeds_loads_no_network_or_redis_client() -> None:
    """``import recommender.feeds`` stays cheap: httpx and redis load with the store."""
    code = (
        "import sys, recommender.feeds\n"
        "from recommender.feeds import utc_now, load_bundled\n"
        "print(sorted(m for m in ('httpx', 'redis', 'tenacity') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert done.stdout.strip() == "[]"
