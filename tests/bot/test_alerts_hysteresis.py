"""Hysteresis: one alert per crossing, re-armed only after a real recovery, repeats only on a
real further drop."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bot.alerts import (
    MIN_REPEAT_DROP_FRAC,
    REARM_MARGIN_FRAC,
    PriceBasis,
    PricePoint,
    Threshold,
    Verdict,
    WatchState,
    step,
)
from tests.factories import offer

T = Threshold(20.0, PriceBasis.INSTANCE_HOUR)


def point(price: float) -> PricePoint:
    return PricePoint(price_usd=price, basis=PriceBasis.INSTANCE_HOUR, offer=offer())


def run(prices: list[float | None], state: WatchState | None = None) -> list[Verdict]:
    s = state or WatchState()
    out: list[Verdict] = []
    for p in prices:
        s, v = step(s, point(p) if p is not None else None, T)
        out.append(v)
    return out


class TestStep:
    def test_crossing_alerts_once(self) -> None:
        """Falling to the threshold alerts; staying below says nothing more."""
        assert run([25, 19.9, 19.5, 19.8, 20.0]) == [
            Verdict.NONE,
            Verdict.CROSSED,
            Verdict.NONE,
            Verdict.NONE,
            Verdict.NONE,
        ]

    def test_at_threshold_counts(self) -> None:
        """ "below $20" fires at exactly $20.00 (at or below)."""
        assert run([20.0]) == [Verdict.CROSSED]

    def test_jitter_above_threshold_within_margin_does_not_rearm(self) -> None:
        """Bouncing just above the threshold (inside the margin) and back is not a new crossing."""
        within = T.usd * (1 + REARM_MARGIN_FRAC) - 0.01
        assert run([19, within, 19, within, 19]) == [Verdict.CROSSED] + [Verdict.NONE] * 4

    def test_recovery_past_margin_rearms_and_second_crossing_alerts(self) -> None:
        """Above threshold + margin re-arms; the next fall alerts again."""
        above = T.usd * (1 + REARM_MARGIN_FRAC) + 0.01
        assert run([19, above, 19]) == [Verdict.CROSSED, Verdict.REARMED, Verdict.CROSSED]

    def test_big_further_drop_repeats_once(self) -> None:
        """A fall of MIN_REPEAT_DROP_FRAC below the alerted price is news; less is not."""
        deeper = 19 * (1 - MIN_REPEAT_DROP_FRAC)
        assert run([19, deeper + 0.01, deeper, deeper - 0.1]) == [
            Verdict.CROSSED,
            Verdict.NONE,
            Verdict.DEEPER,
            Verdict.NONE,
        ]

    def test_no_offer_neither_fires_nor_rearms(self) -> None:
        """A gap in the feed (no matching offer) leaves the state exactly as it was."""
        s, _ = step(WatchState(), point(19), T)
        after, verdict = step(s, None, T)
        assert (after, verdict) == (s, Verdict.NONE)

    def test_alerts_count_names_each_crossing(self) -> None:
        """Every alert increments the counter used in its idempotency key."""
        s = WatchState()
        above = T.usd * 1.2
        for p in [19, above, 18, above, 17]:
            s, _ = step(s, point(p), T)
        assert s.alerts == 3
        assert s.last_price_usd == 17

    def test_starting_disarmed_needs_recovery(self) -> None:
        """A watch created below its threshold (disarmed) first waits for a recovery."""
        start = WatchState(armed=False, last_price_usd=19, alerted_price_usd=19)
        assert run([19, 18.5], start) == [Verdict.NONE, Verdict.NONE]

    @given(st.lists(st.floats(min_value=1, max_value=100), max_size=40))
    def test_alerts_never_repeat_without_a_recovery_or_a_real_drop(
        self, prices: list[float]
    ) -> None:
        """Between two alerts the price recovered past the margin or fell by the minimum drop."""
        s = WatchState()
        last_alert: float | None = None
        rearmed = False
        for p in prices:
            s, v = step(s, point(p), T)
            if v is Verdict.REARMED:
                rearmed = True
            if v in (Verdict.CROSSED, Verdict.DEEPER):
                assert p <= T.usd
                if last_alert is not None:
                    assert rearmed or p <= last_alert * (1 - MIN_REPEAT_DROP_FRAC) + 1e-9
                last_alert, rearmed = p, False

    @pytest.mark.parametrize("price", [20.01, 21.0, 20.99])
    def test_above_threshold_never_alerts(self, price: float) -> None:
        """A price above the threshold never alerts, armed or not."""
        assert run([price]) == [Verdict.NONE]
