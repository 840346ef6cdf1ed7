"""The public surface of ``recommender``: ``__all__`` is sorted and complete."""

from __future__ import annotations

import recommender


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
