"""Cost per billion tokens at the edges (found by tests/reliability/test_bad_input.py)."""

from __future__ import annotations

import math

from recommender.pricing.costing import per_btok


def test_a_denormal_token_count_is_no_division_by_zero() -> None:
    assert per_btok(0.92, 1.979576124e-315) == math.inf
    assert per_btok(1.0, 0.0) == math.inf
    assert per_btok(2.0, 1e9) == 2.0
