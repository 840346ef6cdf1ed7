"""Ranking: feasible layouts become priced, filtered, diversified options with caveats."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recommender.pricing.offers import Fabric, Offer
from recommender.ranking.caveats import CaveatKind
from recommender.ranking.recommend import HoursBasis, Recommendation, rank, recommend
from recommender.workload import HardwareRequest, Method, Precision, SpotPolicy
from tests.factories import (
    A100_GCP,
    H100_OD,
    H100_SPOT,
    L4_SINGLE,
    L40S_4X,
    LAMBDA_H100,
    NOW,
    catalog,
    offer,
    workload,
)


def _rec(w=None, *offers: Offer, **kw):  # type: ignore[no-untyped-def]
    return recommend(w or workload(duration_hours=48), catalog(*offers), now=NOW, **kw)


def _score(rec: Recommendation) -> float:
    """The first option's score under the answer's objective."""
    best, objective = rec.best, rec.objective
    assert best is not None
    assert objective is not None
    return objective.score(
        expected_cost_usd=best.expected_cost_usd,
        worst_cost_usd=best.spot_worst_cost_usd,
        wall_hours=best.wall_hours,
        worst_wall_hours=best.spot_worst_wall_hours,
        tokens=best.tokens,
    )


class TestFeasibility:
    def test_options_only_where_the_job_fits(self) -> None:
        """A full fine-tune of an 8B model never lands on one 24 GB L4."""
        rec = _rec(None, L4_SINGLE, H100_OD)
        assert [o.offer.gpu_id for o in rec.options] == ["H100-SXM-80GB"]
        assert all(o.plan.fits for o in rec.options)

    def test_small_job_fits_on_a_small_gpu(self) -> None:
        """QLoRA of an 8B model fits on a single L4, and for a small token budget it is the
        cheapest option: first with `no rush`, and named as the cheapest beside the faster
        H100 node when time has its default value."""
        w = workload(method=Method.QLORA, precision=Precision.BF16_TRUE, tokens=1e6)
        no_rush = _rec(replace(w, time_value_usd_per_day=0.0), L4_SINGLE, H100_OD)
        assert no_rush.best is not None
        assert no_rush.best.offer.gpu_id == "L4"
        assert no_rush.best.plan.gpus == 1
        rec = _rec(w, L4_SINGLE, H100_OD)
        assert rec.best is not None
        first_is_l4 = rec.best.offer.gpu_id == "L4"
        assert first_is_l4 or (rec.cheapest is not None and rec.cheapest.offer.gpu_id == "L4")

    def test_multi_node_needs_a_fast_fabric(self) -> None:
        """A job too big for one node is offered multi-node only over InfiniBand/EFA/RoCE."""
        w = workload(model="Llama 3.1 405B", duration_hours=24)
        slow = replace(A100_GCP, fabric=Fabric.ETHERNET)
        rec = _rec(w, slow, H100_OD)
        assert rec.options
        assert all(o.offer.fabric.fast for o in rec.options)
        assert all(o.nodes > 1 for o in rec.options)
        assert any(c.kind is CaveatKind.MULTI_NODE for c in rec.options[0].caveats)

    def test_layouts_are_listed_on_request_or_when_no_option_is_shown(self) -> None:
        """The smallest layout per GPU type sold is always listed by default; a chat answer
        asks for it only when nothing can be shown (``layouts=False``)."""
        full = _rec(None, L4_SINGLE, H100_OD)
        assert {p.gpu_id for p in full.layouts} == {"L4", "H100-SXM-80GB"}
        lean = _rec(None, L4_SINGLE, H100_OD, layouts=False)
        assert lean.layouts == ()
        assert lean.options == full.options
        nothing = _rec(None, L4_SINGLE, layouts=False)
        assert not nothing.options
        assert nothing.layouts == _rec(None, L4_SINGLE).layouts
        assert [p.gpu_id for p in nothing.layouts] == ["L4"]

    def test_pcie_sharding_is_allowed_with_a_caveat(self) -> None:
        """Sharding across PCIe-only L40S cards is offered, with the PCIe caveat."""
        w = workload(model="Llama 3.2 3B", duration_hours=10)
        rec = _rec(w, L40S_4X)
        assert rec.best is not None
        if rec.best.plan.gpus > 1:
            assert any(c.kind is CaveatKind.PCIE_SHARDING for c in rec.best.caveats)

    def test_named_hardware_is_answered_for_exactly_that_hardware(self) -> None:
        """`on 8x H100` only considers 8 H100s in total."""
        w = workload(hardware=HardwareRequest("H100-SXM-80GB", 8), duration_hours=5)
        rec = _rec(w, H100_OD, A100_GCP, LAMBDA_H100)
        assert rec.options
        assert {o.offer.gpu_id for o in rec.options} == {"H100-SXM-80GB"}
        assert all(o.total_gpus == 8 for o in rec.options)


class TestCost:
    def test_duration_prices_the_run_for_that_long(self) -> None:
        """With `2 days`, an on-demand option costs 48 h at its hourly price."""
        rec = _rec(None, H100_OD)
        best = rec.best
        assert best is not None
        assert rec.hours_basis is HoursBasis.DURATION
        # plus the run's fixed minutes (start, load, checkpoints: estimation.finetune_speed)
        assert best.cost_usd == pytest.approx(48 * 55.0, rel=5e-3)
        assert best.cost_usd >= 48 * 55.0

    def test_token_budget_computes_hours(self) -> None:
        """With a token budget, hours come from the training-time model and differ by GPU."""
        w = workload(tokens=2e9)
        rec = _rec(w, H100_OD, A100_GCP)
        assert rec.hours_basis is HoursBasis.TOKENS
        hours = {o.offer.gpu_id: o.hours for o in rec.options}
        assert hours["H100-SXM-80GB"] < hours["A100-SXM-80GB"]

    def test_no_duration_means_one_day_and_a_note(self) -> None:
        """Without duration or tokens, costs are for a day and the answer says so."""
        rec = _rec(workload(), H100_OD)
        assert rec.hours_basis is HoursBasis.DEFAULT
        assert any("one day" in n for n in rec.notes)


class TestSpot:
    def test_no_spot_excludes_spot(self) -> None:
        """`no spot` never returns a spot option."""
        w = workload(duration_hours=48, spot=SpotPolicy.NEVER)
        rec = _rec(w, H100_OD, H100_SPOT)
        assert rec.options
        assert not any(o.offer.spot for o in rec.options)

    def test_spot_only_excludes_on_demand(self) -> None:
        """`spot only` returns spot options only."""
        w = workload(duration_hours=48, spot=SpotPolicy.ONLY)
        rec = _rec(w, H100_OD, H100_SPOT)
        assert rec.options
        assert all(o.offer.spot for o in rec.options)

    def test_spot_options_carry_checkpoint_advice(self) -> None:
        """A spot option shows its expected preemptions and checkpoint interval."""
        rec = _rec(None, H100_SPOT)
        best = rec.best
        assert best is not None
        assert best.spot is not None
        assert best.spot.checkpoint_interval_hours > 0
        assert any(c.kind is CaveatKind.PREEMPTION for c in best.caveats)


class TestBudget:
    def test_over_budget_options_are_excluded_and_the_gap_explained(self) -> None:
        """With $500 for a 2-day 8B full fine-tune on H100s, nothing fits; the gap is shown."""
        w = workload(duration_hours=48, budget_usd=500)
        rec = _rec(w, H100_OD)
        assert rec.options == ()
        assert rec.over_budget is not None
        assert rec.over_budget.gap_usd == pytest.approx(
            rec.over_budget.cheapest.expected_cost_usd - 500
        )

    def test_a_duration_with_a_budget_prices_what_the_budget_buys(self) -> None:
        """ "A week, $500": a week on the reference 8× H100 node would cost far more than
        $500, so the work is what $500 buys there (at its lowest listed price), the answer
        says so, and a layout that trains faster for the money is within the budget."""
        b200 = offer(instance_type="p6-b200.48xlarge", gpu_id="B200-180GB")
        cheap_h100 = replace(H100_OD, region="us-west-2", price_usd_per_hour=40.0)
        w = workload(duration_hours=7 * 24, budget_usd=500)
        rec = _rec(w, H100_OD, cheap_h100, b200)
        assert rec.work is not None
        assert rec.work.reference is not None
        assert rec.work.budget_capped
        affordable = 500 / 40.0 * rec.work.reference.tokens_per_hour
        assert rec.work.tokens == pytest.approx(affordable)
        assert any("what the budget buys" in n for n in rec.notes)
        assert [o.offer.gpu_id for o in rec.options] == ["B200-180GB"]
        assert rec.options[0].expected_cost_usd <= 500

    def test_a_cheaper_method_is_suggested_when_nothing_fits_the_budget(self) -> None:
        """Over budget on a full fine-tune, gpufit points at LoRA/QLoRA for the same work:
        with a budget between the cheapest LoRA run and the cheapest full run of 100M tokens,
        the answer is over budget and names the adapter method that fits."""

        def cheapest(rec: Recommendation) -> float:
            return min(o.expected_cost_usd for o in (*rec.options, rec.cheapest) if o)

        full = cheapest(_rec(workload(tokens=1e8), H100_OD, L4_SINGLE))
        lora_w = workload(tokens=1e8, method=Method.LORA, precision=Precision.BF16_TRUE)
        lora = cheapest(_rec(lora_w, H100_OD, L4_SINGLE))
        assert lora < full  # adapters skip the weight gradients and the full optimizer step
        w = workload(tokens=1e8, budget_usd=(lora + full) / 2)
        rec = _rec(w, H100_OD, L4_SINGLE)
        assert rec.options == ()
        assert rec.alternative is not None
        assert rec.alternative.method in (Method.LORA, Method.QLORA)
        assert rec.alternative.option.expected_cost_usd <= (lora + full) / 2


class TestRankingOrder:
    def test_cheapest_expected_cost_first(self) -> None:
        """Options are ordered by expected total cost."""
        rec = _rec(None, H100_OD, LAMBDA_H100, A100_GCP)
        costs = [o.expected_cost_usd for o in rec.options]
        assert costs == sorted(costs)

    def test_five_regions_of_one_instance_do_not_crowd_out_others(self) -> None:
        """Diversification: a different GPU or provider appears before more regions."""
        regions = [
            replace(H100_OD, region=f"us-east-{i}", price_usd_per_hour=50 + i) for i in range(6)
        ]
        rec = _rec(None, *regions, A100_GCP, top=3)
        providers = {o.offer.provider for o in rec.options}
        assert "gcp" in providers

    def test_deterministic_for_equal_inputs(self) -> None:
        """The same inputs in another order give the same ranking."""
        offers = [H100_OD, H100_SPOT, LAMBDA_H100, A100_GCP]
        a = _rec(None, *offers)
        b = _rec(None, *reversed(offers))
        assert [o.offer.key for o in a.options] == [o.offer.key for o in b.options]

    def test_deadline_binds(self) -> None:
        """With tokens and a deadline, options that miss it rank after those that meet it."""
        w = workload(tokens=20e9, duration_hours=30)
        options = recommend(w, catalog(H100_OD, A100_GCP), now=NOW).options
        flags = [o.meets_deadline for o in options]
        assert flags == sorted(flags, reverse=True)
        assert rank(list(options)) == list(options)


class TestCaveats:
    def test_stale_prices_are_flagged(self) -> None:
        """Prices older than two days carry a stale-price caveat."""
        from datetime import timedelta

        old = catalog(H100_OD, as_of=NOW - timedelta(days=5))
        rec = recommend(workload(duration_hours=2), old, now=NOW)
        assert rec.best is not None
        assert any(c.kind is CaveatKind.STALE_PRICES for c in rec.best.caveats)

    def test_failed_source_is_flagged(self) -> None:
        """A source whose refresh failed is named in the caveats."""
        bad = catalog(H100_OD, error="HTTP 500")
        rec = recommend(workload(duration_hours=2), bad, now=NOW)
        assert rec.best is not None
        assert any(c.kind is CaveatKind.SOURCE_ERROR for c in rec.best.caveats)

    def test_no_bf16_on_v100(self) -> None:
        """bf16 training on a V100 gets a caveat to use fp16 instead."""
        v100 = offer(instance_type="p3.16xlarge", gpu_id="V100-SXM-16GB", price_usd_per_hour=24.5)
        w = workload(model="GPT-2", duration_hours=2)
        rec = recommend(w, catalog(v100), now=NOW)
        assert rec.best is not None
        assert any(c.kind is CaveatKind.NO_BF16 for c in rec.best.caveats)


_OFFER_POOL = [H100_OD, H100_SPOT, A100_GCP, L4_SINGLE, L40S_4X, LAMBDA_H100]


class TestInvariants:
    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(
        offers=st.lists(
            st.sampled_from([o for o in _OFFER_POOL if not o.spot]), min_size=1, max_size=6
        ),
        discount=st.floats(min_value=0.05, max_value=0.95),
        pick=st.integers(min_value=0, max_value=5),
    )
    def test_a_cheaper_equivalent_offer_never_makes_the_top_pick_worse(
        self, offers: list[Offer], discount: float, pick: int
    ) -> None:
        """Adding a strictly cheaper copy of an on-demand offer never worsens the first
        option's score under the answer's objective (cost, and hours past the stated 12 h at
        the time value). With spot in the catalog a cheaper sure plan may, by design, move a
        spot plan whose worst case it now makes too risky below it (test_objective.py)."""
        w = workload(duration_hours=12)
        before = recommend(w, catalog(*offers), now=NOW)
        base = offers[pick % len(offers)]
        cheaper = replace(
            base,
            instance_type=base.instance_type + "-promo",
            price_usd_per_hour=base.price_usd_per_hour * discount,
        )
        after = recommend(w, catalog(*offers, cheaper), now=NOW)
        if before.best is not None:
            assert after.best is not None
            assert _score(after) <= _score(before) + 1e-9

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(
        offers=st.lists(st.sampled_from(_OFFER_POOL), min_size=1, max_size=6),
        budget=st.floats(min_value=10, max_value=5000),
        more=st.floats(min_value=1, max_value=10),
    )
    def test_raising_the_budget_never_removes_an_option(
        self, offers: list[Offer], budget: float, more: float
    ) -> None:
        """Every option feasible under a budget stays feasible under a larger one."""
        w = workload(duration_hours=6, budget_usd=budget)
        low = recommend(w, catalog(*offers), now=NOW, top=50)
        high = recommend(replace(w, budget_usd=budget * more), catalog(*offers), now=NOW, top=50)
        assert {o.offer.key for o in low.options} <= {o.offer.key for o in high.options}
        assert high.feasible >= low.feasible

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(offers=st.lists(st.sampled_from(_OFFER_POOL), min_size=1, max_size=6))
    def test_spot_never_ranks_when_interruption_is_ruled_out(self, offers: list[Offer]) -> None:
        """With `no spot`, no spot option appears anywhere in the ranking."""
        w = workload(duration_hours=6, spot=SpotPolicy.NEVER)
        rec = recommend(w, catalog(*offers), now=NOW, top=50)
        assert not any(o.offer.spot for o in rec.options)


class TestOffloadOnTheSameWork:
    SMALL = offer(
        provider="lambda",
        instance_type="gpu_1x_a100_sxm4_80gb",
        gpu_id="A100-SXM-80GB",
        gpu_count=1,
        price_usd_per_hour=1.5,
        ram_gib=1800,
        fabric=Fabric.NONE,
    )
    BIG = offer(
        provider="gcp",
        instance_type="a2-ultragpu-8g",
        gpu_id="A100-SXM-80GB",
        gpu_count=8,
        price_usd_per_hour=40.0,
        ram_gib=1360,
        fabric=Fabric.NONE,
    )

    def test_offload_pays_for_its_hours_on_the_same_work(self) -> None:
        """For a fixed duration, every option is priced for the tokens the duration buys on
        the reference (here the 8× A100 node): the single GPU with optimizer offload does the
        same work, at its own (much slower) pace, and is marked as taking longer."""
        w = workload(model=13e9, duration_hours=48)
        rec = recommend(w, catalog(self.SMALL, self.BIG), now=NOW)
        assert rec.work is not None
        assert rec.work.reference is not None
        assert rec.work.reference.plan.gpus == 8
        assert {o.tokens for o in rec.options} == {rec.work.tokens}
        small = next(o for o in rec.options if o.offer.gpu_count == 1)
        big = next(o for o in rec.options if o.offer.gpu_count == 8)
        assert small.plan.strategy.offload.value != "none"
        assert small.wall_hours > 10 * big.wall_hours
        assert small.over_duration
        assert not big.over_duration
        assert any(c.kind is CaveatKind.OVER_DURATION for c in small.caveats)
        # The hours beyond the stated two days count at the time value: the slow single GPU,
        # though cheaper, ranks after the node that does the work in time.
        assert small.expected_cost_usd < big.expected_cost_usd
        assert [o.offer.gpu_count for o in rec.options] == [8, 1]

    def test_offload_still_offered_when_it_is_all_that_fits(self) -> None:
        """If only an offload layout exists, it is the answer, with its caveat."""
        w = workload(model=13e9, duration_hours=48)
        rec = recommend(w, catalog(self.SMALL), now=NOW)
        assert rec.best is not None
        assert any(c.kind is CaveatKind.OFFLOAD for c in rec.best.caveats)
