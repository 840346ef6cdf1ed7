"""The spot model: interruption ranges, waits for capacity, node scaling and the pessimistic end."""

from __future__ import annotations

import itertools
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recommender.gpus import all_gpus
from recommender.pricing.billing import (
    RULES,
    billed_hours,
    gang_factor,
    interruption_range,
    spot_economics,
)
from recommender.pricing.catalog import Catalog
from recommender.pricing.costing import Option
from recommender.pricing.spot import (
    BAND_LIFETIME_HOURS,
    GpuClass,
    band_to_hourly,
    capacity_wait,
    gpu_class,
)
from recommender.ranking.recommend import recommend
from recommender.workload import Workload
from tests.factories import NOW, catalog, offer, workload

SPOT_PROVIDERS = sorted(p for p, r in RULES.items() if r.spot_available)
GPU_IDS = [g.id for g in all_gpus()]

providers = st.sampled_from(SPOT_PROVIDERS)
gpus = st.sampled_from(GPU_IDS)
node_counts = st.integers(min_value=1, max_value=64)
checkpoints = st.floats(min_value=0.01, max_value=3000)
run_hours = st.floats(min_value=0.05, max_value=2000)


class TestConversion:
    def test_top_band_is_not_a_sixty_day_mtbf(self) -> None:
        """Issue #19: p5 spot in the worst band had a 60-day MTBF from a 730 h month. Read
        over a one-day spot lifetime, the ">20 %" band's middle (30 %) is an MTBF of
        24 / −ln 0.7 ≈ 67 h; at worst (50 % over 6 h) 6 / ln 2 ≈ 8.7 h; at best (20 % over
        72 h) 72 / −ln 0.8 ≈ 323 h."""
        r = interruption_range(RULES["aws"], 1, "H100-SXM-80GB")
        assert 1 / r.expected == pytest.approx(24 / -math.log(0.7))
        assert 1 / r.pessimistic == pytest.approx(6 / math.log(2))
        assert 1 / r.optimistic == pytest.approx(72 / -math.log(0.8))
        assert 1 / r.expected < 7 * 24
        assert "Spot Instance Advisor" in r.source

    def test_band_conversion_is_the_constant_hazard_inverse(self) -> None:
        """λ = −ln(1 − p) / L: over L hours a share p of instances is interrupted."""
        lam = band_to_hourly(0.3, 24)
        assert 1 - math.exp(-lam * 24) == pytest.approx(0.3)
        with pytest.raises(ValueError, match=r"p must be"):
            band_to_hourly(1.0, 24)

    def test_lifetimes_run_optimistic_to_pessimistic(self) -> None:
        """Longer lifetimes give lower hourly rates: the optimistic one is the longest."""
        opt, exp, pess = BAND_LIFETIME_HOURS
        assert opt > exp > pess > 0

    def test_bands_order_gpu_families(self) -> None:
        """AWS: p5 (>20 %) > p3 (10-15 %) > g5 (5-10 %) > g4dn (<5 %), at every end."""
        rule = RULES["aws"]
        ranges = [interruption_range(rule, 1, g) for g in ("H100-SXM-80GB", "V100-SXM-16GB")]
        ranges += [interruption_range(rule, 1, g) for g in ("A10G", "T4")]
        for hi, lo in itertools.pairwise(ranges):
            assert hi.optimistic > lo.optimistic
            assert hi.expected > lo.expected
            assert hi.pessimistic > lo.pessimistic

    def test_marketplaces_have_their_own_range(self) -> None:
        """RunPod/Vast interruptible: 1 per 48 h / 12 h / 4 h, marked as ours."""
        r = interruption_range(RULES["vast"], 1, "RTX-4090")
        assert (r.optimistic, r.expected, r.pessimistic) == pytest.approx((1 / 48, 1 / 12, 1 / 4))
        assert r.source.startswith("ours")

    def test_providers_without_spot_have_no_rate(self) -> None:
        """Lambda and CoreWeave sell no spot: the range is zero."""
        for name in ("lambda", "coreweave"):
            r = interruption_range(RULES[name], 4, "H100-SXM-80GB")
            assert r.pessimistic == 0


_H100 = "H100-SXM-80GB"


class TestCapacityWait:
    def test_scarce_gpus_wait_hours(self) -> None:
        """An H100 waits ~2 h for capacity (0.5-8 h), from the SkyPilot V100 outage traces."""
        w = capacity_wait("H100-SXM-80GB")
        assert (w.optimistic, w.expected, w.pessimistic) == (0.5, 2.0, 8.0)
        assert "SkyPilot" in w.source

    def test_scarcer_gpu_waits_longer(self) -> None:
        """Scarce > mid > common at every end of the range."""
        scarce, mid, common = (capacity_wait(g) for g in ("B200-180GB", "L40S", "T4"))
        assert gpu_class("B200-180GB") is GpuClass.SCARCE
        for a, b in ((scarce, mid), (mid, common)):
            assert a.optimistic > b.optimistic
            assert a.expected > b.expected
            assert a.pessimistic > b.pessimistic

    def test_waits_stretch_wall_time_but_are_not_billed(self) -> None:
        """Elapsed hours add each preemption's wait; the billed running hours do not."""
        e = spot_economics(
            RULES["aws"], nodes=2, checkpoint_gib=200, hours=100, gpu_id="H100-SXM-80GB"
        )
        # Two nodes wait for the later of two waits, 1.5 × one node's 2 h, after each
        # preemption, and 0.5 × 2 h beyond one node before they can start.
        assert e.wait_hours == pytest.approx(3.0)
        assert e.start_wait_hours == pytest.approx(1.0)
        assert e.elapsed_hours == pytest.approx(e.run_hours + e.expected_interruptions * 3.0 + 1.0)
        assert e.run_hours == pytest.approx(100 * (1 + e.overhead_frac))

    @pytest.mark.parametrize(("nodes", "factor"), [(1, 1.0), (2, 1.5), (4, 25 / 12), (8, 2.717857)])
    def test_a_gang_waits_for_its_last_node(self, nodes: int, factor: float) -> None:
        """The wait for the last of N exponential waits is H_N of them, so a 4-node spot
        job no longer starts the moment one node could (it was priced as if it did)."""
        assert gang_factor(nodes) == pytest.approx(factor, rel=1e-6)
        one, many = (
            spot_economics(
                RULES["aws"], nodes=n, checkpoint_gib=10, hours=2, gpu_id="H100-SXM-80GB"
            )
            for n in (1, nodes)
        )
        assert one.start_wait_hours == 0
        assert many.start_wait_hours == pytest.approx(2.0 * (factor - 1))
        assert many.wait_hours == pytest.approx(2.0 * factor)


class TestProperties:
    @settings(max_examples=200, deadline=None)
    @given(providers, gpus, node_counts, checkpoints, run_hours, st.floats(0.05, 200))
    def test_spot_expected_cost_is_at_least_price_times_hours(
        self, provider: str, gpu: str, nodes: int, ckpt: float, hours: float, price: float
    ) -> None:
        """Issue #19: spot expected cost ≥ spot price × hours (preemptions only add time)."""
        rule = RULES[provider]
        e = spot_economics(rule, nodes=nodes, checkpoint_gib=ckpt, hours=hours, gpu_id=gpu)
        cost = billed_hours(rule, e.run_hours) * price * nodes
        assert cost >= price * hours * nodes * (1 - 1e-12)
        assert e.elapsed_hours >= e.run_hours >= hours * (1 - 1e-12)

    @settings(max_examples=200, deadline=None)
    @given(providers, gpus, node_counts, checkpoints, run_hours)
    def test_pessimistic_at_least_expected_at_least_optimistic(
        self, provider: str, gpu: str, nodes: int, ckpt: float, hours: float
    ) -> None:
        """Rates, waits, overheads, billed and elapsed hours are ordered across the range."""
        e = spot_economics(
            RULES[provider], nodes=nodes, checkpoint_gib=ckpt, hours=hours, gpu_id=gpu
        )
        opt, pess = e.optimistic, e.pessimistic
        assert opt is not None
        assert pess is not None
        eps = 1 + 1e-9
        assert opt.interruptions_per_hour <= e.interruptions_per_hour <= pess.interruptions_per_hour
        assert opt.wait_hours <= e.wait_hours <= pess.wait_hours
        assert opt.overhead_frac <= e.overhead_frac * eps
        assert e.overhead_frac <= pess.overhead_frac * eps
        assert opt.run_hours <= e.run_hours * eps
        assert e.run_hours <= pess.run_hours * eps
        assert e.optimistic_hours <= e.elapsed_hours * eps
        assert e.elapsed_hours <= e.pessimistic_hours * eps

    @settings(max_examples=200, deadline=None)
    @given(providers, gpus, node_counts, checkpoints, run_hours)
    def test_more_nodes_more_interruptions(
        self, provider: str, gpu: str, nodes: int, ckpt: float, hours: float
    ) -> None:
        """A synchronous job stops when any node is preempted: rate × n, and more of them."""
        rule = RULES[provider]
        one = interruption_range(rule, 1, gpu)
        many = interruption_range(rule, nodes, gpu)
        assert many.expected == pytest.approx(one.expected * nodes)
        assert many.pessimistic == pytest.approx(one.pessimistic * nodes)
        a = spot_economics(rule, nodes=nodes, checkpoint_gib=ckpt, hours=hours, gpu_id=gpu)
        b = spot_economics(rule, nodes=nodes + 1, checkpoint_gib=ckpt, hours=hours, gpu_id=gpu)
        assert b.expected_interruptions >= a.expected_interruptions
        assert b.pessimistic_hours >= a.pessimistic_hours * (1 - 1e-9)


class TestOverheadModel:
    def test_rare_preemptions_reduce_to_young(self) -> None:
        """With τ ≪ MTBF, Daly's complete model matches Young's C/τ + τ/2M + R/M."""
        e = spot_economics(RULES["aws"], nodes=1, checkpoint_gib=10, hours=10, gpu_id="T4")
        c = e.checkpoint_write_s
        tau = e.checkpoint_interval_hours * 3600
        m = e.mtbf_hours * 3600
        young = c / tau + tau / (2 * m) + e.restart_s / m
        assert e.overhead_frac == pytest.approx(young, rel=0.02)

    def test_frequent_preemptions_grow_faster_than_first_order(self) -> None:
        """64 nodes of p5 spot at the pessimistic end: the run takes several times longer."""
        e = spot_economics(
            RULES["aws"], nodes=64, checkpoint_gib=1000, hours=100, gpu_id="H100-SXM-80GB"
        )
        assert e.pessimistic is not None
        assert e.pessimistic.overhead_frac > 1.0
        assert math.isfinite(e.pessimistic_hours)

    def test_worked_example_p5_one_node(self) -> None:
        """One p5 (8×H100) for 100 h of compute with a 182 s checkpoint: MTBF 67 h, τ ≈ 4.9 h,
        ~1.6 preemptions each waiting ~2 h; pessimistic ~12 preemptions waiting 8 h each."""
        e = spot_economics(
            RULES["aws"], nodes=1, checkpoint_gib=169.5, hours=100, gpu_id="H100-SXM-80GB"
        )
        assert e.mtbf_hours == pytest.approx(67.3, abs=0.1)
        assert e.checkpoint_interval_hours == pytest.approx(
            math.sqrt(2 * e.checkpoint_write_s * e.mtbf_hours * 3600) / 3600
        )
        assert e.expected_interruptions == pytest.approx(1.6, abs=0.1)
        assert e.pessimistic is not None
        assert e.pessimistic.expected_interruptions == pytest.approx(15, abs=3)
        assert e.pessimistic_hours > e.elapsed_hours + 5 * 8


def _every_option(w: Workload, c: Catalog) -> tuple[Option, ...]:
    """Every priced option of a small catalog (no budget, more room than offers)."""
    return recommend(w, c, now=NOW, top=100).options


class TestRunCost:
    def _options(self, **kw: object) -> list[tuple[bool, float, float, float, float, bool]]:
        c = catalog(offer(), offer(spot=True, price_usd_per_hour=22.0))
        w = workload(**kw)
        return [
            (
                o.offer.spot,
                o.hours,
                o.expected_cost_usd,
                o.pessimistic_cost_usd,
                o.pessimistic_wall_hours,
                o.meets_deadline,
            )
            for o in _every_option(w, c)
        ]

    def test_token_budget_on_spot_costs_at_least_price_times_hours(self) -> None:
        """With a token budget the spot bill covers the compute hours and more; the
        pessimistic cost and time are at least the expected ones."""
        for spot, hours, cost, pess_cost, pess_wall, _ in self._options(tokens=2e9):
            if spot:
                assert cost >= 22.0 * hours
                assert pess_cost >= cost
                assert pess_wall > hours

    def test_deadline_is_judged_on_the_pessimistic_end(self) -> None:
        """A deadline the expected spot run meets but the pessimistic one misses ranks the
        spot option as late; on-demand meets it."""
        base = {spot: hours for spot, hours, *_ in self._options(tokens=2e9)}
        pess = {spot: wall for spot, _, _, _, wall, _ in self._options(tokens=2e9)}
        deadline = (base[True] * 1.2 + pess[True]) / 2
        assert deadline < pess[True]
        late = {spot: ok for spot, *_, ok in self._options(tokens=2e9, duration_hours=deadline)}
        assert late == {False: True, True: False}

    def test_stated_duration_on_spot_takes_longer_for_the_same_work(self) -> None:
        """A stated duration defines one amount of work for every option (ranking.work);
        on spot the same tokens take longer (preemptions, redone work, capacity waits)."""
        c = catalog(offer(), offer(spot=True, price_usd_per_hour=22.0))
        opts = {o.offer.spot: o for o in _every_option(workload(duration_hours=48), c)}
        assert opts[True].tokens == opts[False].tokens
        assert opts[True].wall_hours > opts[False].wall_hours
        assert opts[True].billed_hours >= opts[False].billed_hours
