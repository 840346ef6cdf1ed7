"""Plans that follow the ask (issue #31): the objective each question gets, deadlines met by
scaling out, time counted at its value, spot judged on its worst case, budgets that buy work,
owned GPUs, and zero options that say why."""

from __future__ import annotations

from dataclasses import replace

import pytest

from recommender.estimation.topology import HOST_RAM_RESERVE_FRAC, LayoutSearch
from recommender.gpus import get_gpu
from recommender.pricing.billing import RULES
from recommender.pricing.costing import Option
from recommender.pricing.economics import RESERVATION_LEAD_HOURS, RESERVE_FROM_NODES
from recommender.pricing.offers import OWNED_PROVIDER, Fabric
from recommender.ranking.caveats import CaveatKind, Severity
from recommender.ranking.objective import (
    DEFAULT_TIME_VALUE_USD_PER_DAY,
    ObjectiveKind,
    objective_of,
)
from recommender.ranking.recommend import Recommendation, recommend
from recommender.ranking.selection import fitted_groups, priced_offers
from recommender.workload import HardwareRequest, Method, Precision
from tests.factories import H100_OD, H100_SPOT, L4_SINGLE, NOW, catalog, model, offer, workload

PRETRAIN_7B = workload(model=model(7e9), method=Method.PRETRAIN, tokens=1e12)
#: One H100 on its own at a low price: the slow, cheap way to train.
ONE_H100 = offer(
    provider="nebius",
    instance_type="1x-h100",
    gpu_count=1,
    price_usd_per_hour=2.0,
    fabric=Fabric.NONE,
)


def _late_after_on_time(rec: Recommendation) -> None:
    """No option that misses the deadline ranks above one that meets it, judged on the
    hours the options show (spot by its pessimistic hours)."""
    deadline = rec.workload.deadline_hours
    assert deadline is not None
    met = [o.pessimistic_finish_hours <= deadline for o in rec.options]
    assert met == [o.meets_deadline for o in rec.options]
    assert met == sorted(met, reverse=True)


class TestObjectiveOf:
    @pytest.mark.parametrize(
        ("fields", "kind"),
        [
            ({"tokens": 1e9, "duration_hours": 72}, ObjectiveKind.CHEAPEST_MEETING_DEADLINE),
            ({"duration_hours": 48}, ObjectiveKind.CHEAPEST_FOR_DURATION),
            ({"budget_usd": 3000}, ObjectiveKind.MOST_WORK_FOR_BUDGET),
            ({"tokens": 1e9, "budget_usd": 3000}, ObjectiveKind.CHEAPEST_WITHIN_BUDGET),
            ({"tokens": 1e9}, ObjectiveKind.CHEAPEST_COUNTING_TIME),
            ({}, ObjectiveKind.CHEAPEST_PER_TOKEN_COUNTING_TIME),
            (
                {"owned": True, "hardware": HardwareRequest("A100-SXM-80GB", 4)},
                ObjectiveKind.OWNED_HARDWARE,
            ),
        ],
    )
    def test_each_kind_of_question_gets_its_objective(
        self, fields: dict[str, object], kind: ObjectiveKind
    ) -> None:
        objective = objective_of(workload(**fields))
        assert objective.kind is kind
        assert objective.text.startswith("objective: ")

    def test_the_time_value_is_the_default_unless_stated(self) -> None:
        assert objective_of(workload()).time_value_usd_per_day == DEFAULT_TIME_VALUE_USD_PER_DAY
        stated = objective_of(workload(time_value_usd_per_day=0.0))
        assert stated.time_value_usd_per_day == 0.0
        assert "no rush" in stated.text


class TestDeadline:
    def test_a_deadline_one_node_misses_is_met_by_scaling_out(self) -> None:
        """7B on 1T tokens in 3 weeks: one 8× H100 node takes months, so the first plan adds
        nodes over the fabric and meets the deadline."""
        w = replace(PRETRAIN_7B, duration_hours=21 * 24)
        rec = recommend(w, catalog(H100_OD, ONE_H100), now=NOW)
        best = rec.best
        assert best is not None
        assert rec.objective is not None
        assert rec.objective.kind is ObjectiveKind.CHEAPEST_MEETING_DEADLINE
        assert best.nodes > 1
        assert best.meets_deadline
        assert best.pessimistic_finish_hours <= 21 * 24
        _late_after_on_time(rec)
        assert any(c.kind is CaveatKind.AVAILABILITY for c in best.caveats)

    def test_the_plan_takes_the_fewest_nodes_that_meet_the_deadline(self) -> None:
        """One node fewer than the plan chosen misses the deadline."""
        w = replace(PRETRAIN_7B, duration_hours=21 * 24)
        fitted = fitted_groups(w, catalog(H100_OD), LayoutSearch(w))
        (group,) = priced_offers(w, fitted, RULES, keep=1)
        nodes = group.best.plan.nodes
        fewer = fitted[0].scaling.at(nodes - 1)
        assert fewer is not None
        assert w.tokens is not None
        assert w.tokens / fewer.tokens_per_hour > 21 * 24

    def test_a_deadline_nothing_meets_says_so_and_ranks_by_time(self) -> None:
        w = replace(PRETRAIN_7B, tokens=1e14, duration_hours=24)
        rec = recommend(w, catalog(H100_OD, ONE_H100), now=NOW)
        assert rec.options
        assert not any(o.meets_deadline for o in rec.options)
        hours = [o.pessimistic_finish_hours for o in rec.options]
        assert hours == sorted(hours)
        assert any("no plan meets the" in n for n in rec.notes)

    def test_a_late_plan_reserves_no_cluster_to_finish_an_hour_sooner(self) -> None:
        """An 8B fine-tune that no H200 count finishes in 12 h: four or more nodes wait a
        day for a reservation, so 64 of them finish within an hour of two that need none.
        The late H200 plan is the one whose cost plus hours at the value of time is least:
        a handful of nodes, not the largest cluster that is a few percent sooner."""
        from recommender.feeds import bundled_catalog
        from recommender.parsing.parse import parse_workload

        w = parse_workload("llama-3-8b full finetune on 5B tokens, must finish within 12 hours")
        rec = recommend(w, bundled_catalog(), now=NOW, top=400)
        late_h200 = [
            o for o in rec.options if o.offer.gpu_id.startswith("H200") and not o.meets_deadline
        ]
        assert late_h200
        assert all(o.nodes < RESERVE_FROM_NODES for o in late_h200)


class TestTimeHasValue:
    @pytest.mark.parametrize("tokens", [3e11, 3e10, 3e9])
    def test_no_plan_four_times_slower_ranks_first_for_a_few_percent(self, tokens: float) -> None:
        """The 3B-on-300B case: a single cheap H100 saves a little over a node of eight, and
        takes far longer; the default objective does not put it first."""
        w = workload(model=model(3e9), method=Method.PRETRAIN, tokens=tokens)
        rec = recommend(w, catalog(H100_OD, ONE_H100), now=NOW)
        options = rec.options
        for i, a in enumerate(options):
            for b in options[i + 1 :]:
                assert not (
                    a.wall_hours > 4 * b.wall_hours
                    and a.expected_cost_usd > 0.95 * b.expected_cost_usd
                )

    def test_no_rush_ranks_by_cost_and_names_the_fastest(self) -> None:
        w = workload(model=model(3e9), method=Method.PRETRAIN, tokens=3e10)
        no_rush = replace(w, time_value_usd_per_day=0.0)
        rec = recommend(no_rush, catalog(H100_OD, ONE_H100), now=NOW)
        costs = [o.expected_cost_usd for o in rec.options]
        assert costs == sorted(costs)
        # On one 8-GPU node, more nodes finish sooner for a little more: named as the fastest.
        rec = recommend(no_rush, catalog(H100_OD), now=NOW)
        assert rec.fastest is not None
        assert rec.best is not None
        assert rec.best.nodes == 1
        assert rec.fastest.nodes > 1
        assert rec.fastest.wall_hours < rec.best.wall_hours
        assert rec.fastest.expected_cost_usd <= 1.5 * rec.best.expected_cost_usd

    def test_the_cheapest_plan_is_named_when_time_ranked_a_dearer_one_first(self) -> None:
        w = workload(model=model(3e9), method=Method.PRETRAIN, tokens=3e11)
        rec = recommend(w, catalog(H100_OD, ONE_H100), now=NOW)
        assert rec.best is not None
        assert rec.cheapest is not None
        assert rec.cheapest.expected_cost_usd < rec.best.expected_cost_usd
        assert rec.cheapest.wall_hours > rec.best.wall_hours


class TestSpotWorstCase:
    def _rec(self, spot_price: float) -> Recommendation:
        w = workload(model=model(70e9), method=Method.PRETRAIN, tokens=2e11)
        spot = replace(H100_SPOT, price_usd_per_hour=spot_price)
        return recommend(w, catalog(H100_OD, spot), now=NOW)

    def test_a_spot_plan_whose_worst_case_costs_far_more_ranks_below_the_sure_plan(
        self,
    ) -> None:
        rec = self._rec(40.0)
        spot = next(o for o in rec.options if o.offer.spot)
        sure = next(o for o in rec.options if not o.offer.spot)
        assert spot.expected_cost_usd < sure.expected_cost_usd  # cheaper on average
        assert spot.pessimistic_cost_usd > 1.5 * sure.expected_cost_usd
        assert rec.options.index(sure) < rec.options.index(spot)
        risk = [c for c in spot.caveats if c.kind is CaveatKind.SPOT_RISK]
        assert [c.severity for c in risk] == [Severity.HIGH]

    def test_the_risk_line_says_what_spot_saves_and_risks(self) -> None:
        rec = self._rec(25.0)
        spot = next(o for o in rec.options if o.offer.spot)
        (line,) = [c.text for c in spot.caveats if c.kind is CaveatKind.SPOT_RISK]
        assert "saves $" in line
        assert "expected; worst case +$" in line
        assert "days" in line


class TestBudget:
    def test_a_budget_alone_buys_work_on_each_option(self) -> None:
        w = workload(model=model(1e9), method=Method.PRETRAIN, budget_usd=3000.0)
        rec = recommend(w, catalog(H100_OD, ONE_H100), now=NOW)
        assert rec.objective is not None
        assert rec.objective.kind is ObjectiveKind.MOST_WORK_FOR_BUDGET
        assert rec.options
        for o in rec.options:
            assert o.expected_cost_usd == pytest.approx(3000.0, rel=0.05)
            assert o.tokens > 1e9
        assert any("$3,000 buys" in n for n in rec.notes)

    def test_a_budget_the_work_fits_says_what_the_plan_within_it_gives_up(self) -> None:
        w = workload(model=model(3e9), method=Method.PRETRAIN, tokens=3e11)
        free = recommend(w, catalog(H100_OD, ONE_H100), now=NOW)
        assert free.cheapest is not None
        budget = free.cheapest.expected_cost_usd * 1.05
        rec = recommend(replace(w, budget_usd=budget), catalog(H100_OD, ONE_H100), now=NOW)
        assert rec.objective is not None
        assert rec.objective.kind is ObjectiveKind.CHEAPEST_WITHIN_BUDGET
        assert rec.best is not None
        assert rec.best.expected_cost_usd <= budget
        (note,) = [n for n in rec.notes if n.startswith("fits the $")]
        assert "it gives up time: without the budget the first plan would take" in note
        assert "over the budget" in note

    def test_a_budget_the_work_does_not_fit_says_what_the_cheapest_costs(self) -> None:
        w = workload(model=model(7e9), method=Method.PRETRAIN, tokens=1e12, budget_usd=1000.0)
        rec = recommend(w, catalog(H100_OD), now=NOW)
        assert rec.options == ()
        assert rec.over_budget is not None
        assert any("no plan fits the $1,000 budget" in r for r in rec.empty_reasons)


class TestOwned:
    OWN = HardwareRequest("A100-SXM-80GB", 8)

    def _w(self, **fields: object) -> object:
        return workload(owned=True, hardware=self.OWN, **fields)

    def test_owned_gpus_are_timed_at_no_rental(self) -> None:
        w = workload(owned=True, hardware=self.OWN, tokens=1e9)
        rec = recommend(w, catalog(H100_OD), now=NOW)
        assert [o.offer.provider for o in rec.options] == [OWNED_PROVIDER]
        (own,) = rec.options
        assert own.expected_cost_usd == 0
        assert own.total_gpus == 8
        assert own.wall_hours > 0

    def test_rentals_that_meet_a_deadline_the_owned_gpus_miss_come_first(self) -> None:
        w = workload(owned=True, hardware=self.OWN, tokens=2e10, duration_hours=72)
        rec = recommend(w, catalog(H100_OD), now=NOW)
        providers = [o.offer.provider for o in rec.options]
        assert OWNED_PROVIDER in providers
        assert providers[0] != OWNED_PROVIDER
        assert rec.options[0].meets_deadline
        own = next(o for o in rec.options if o.offer.provider == OWNED_PROVIDER)
        assert not own.meets_deadline

    def test_owned_gpus_that_cannot_hold_the_job_say_so(self) -> None:
        w = workload(
            model=model("Llama 3 70B"),
            owned=True,
            hardware=HardwareRequest("L4", 1),
            tokens=1e8,
        )
        rec = recommend(w, catalog(H100_OD), now=NOW)
        assert all(o.offer.provider != OWNED_PROVIDER for o in rec.options)
        assert any("cannot hold this job" in n for n in rec.notes)


class TestZeroOptionsSayWhy:
    def test_a_gpu_the_catalog_lacks(self) -> None:
        w = workload(method=Method.LORA, precision=Precision.BF16_TRUE)
        w = replace(w, hardware=HardwareRequest("A10G", None))
        rec = recommend(w, catalog(H100_OD), now=NOW)
        assert rec.options == ()
        assert any("no loaded catalog sells A10G" in r for r in rec.empty_reasons)
        assert any("--catalog" in r for r in rec.empty_reasons)

    def test_a_cloud_the_catalog_lacks(self) -> None:
        rec = recommend(workload(providers=frozenset({"cudo"})), catalog(H100_OD), now=NOW)
        assert any("prices from Cudo Compute" in r for r in rec.empty_reasons)

    def test_filters_that_leave_nothing(self) -> None:
        w = workload(regions=("eu",), duration_hours=10)
        rec = recommend(w, catalog(H100_OD), now=NOW)
        assert any("your filters leave no offer" in r and "eu" in r for r in rec.empty_reasons)

    def test_memory_that_fits_nowhere_names_the_closest_layout(self) -> None:
        w = workload(model=model("Llama 3 70B"), duration_hours=10)
        rec = recommend(w, catalog(L4_SINGLE), now=NOW)
        assert rec.options == ()
        (reason,) = rec.empty_reasons
        assert "does not fit in the memory" in reason
        assert "smallest layout that holds it" in reason


class TestHostRam:
    def test_offload_leaves_the_host_ram_reserve_free(self) -> None:
        """A plan with offload never counts on more than (1 - reserve) of the host RAM."""
        w = workload(model=model(13e9))
        gpu = get_gpu("L4")
        search = LayoutSearch(w)
        for ram in (64.0, 128.0, 256.0, 512.0):
            plan = search.fit_on_nodes(gpu, gpus_per_node=1, multi_node=False, host_ram_gib=ram)
            if plan is not None and plan.strategy.offload.value != "none":
                assert plan.host_ram_gib <= ram * (1 - HOST_RAM_RESERVE_FRAC)


def test_grace_hosts_carry_an_arm_caveat() -> None:
    gh200 = offer(instance_type="gh200", gpu_id="GH200-96GB", gpu_count=1, fabric=Fabric.NONE)
    rec = recommend(workload(method=Method.LORA, duration_hours=5), catalog(gh200), now=NOW)
    best: Option | None = rec.best
    assert best is not None
    assert any(c.kind is CaveatKind.ARM_HOST for c in best.caveats)


def test_a_reserved_cluster_starts_a_day_later_and_a_deadline_counts_it() -> None:
    """Four or more on-demand nodes must be reserved: the plan starts a day later, which
    counts toward the deadline (and the answer says so)."""
    w = replace(PRETRAIN_7B, duration_hours=21 * 24)
    rec = recommend(w, catalog(H100_OD), now=NOW)
    best = rec.best
    assert best is not None
    assert best.nodes >= RESERVE_FROM_NODES
    assert best.lead_hours == RESERVATION_LEAD_HOURS
    assert best.pessimistic_finish_hours == best.lead_hours + best.pessimistic_wall_hours <= 504
    assert any("must be reserved ahead" in c.text for c in best.caveats)
    small = recommend(replace(w, tokens=1e9), catalog(H100_OD), now=NOW).best
    assert small is not None
    assert small.nodes < RESERVE_FROM_NODES
    assert small.lead_hours == 0


def test_only_layouts_that_fit_are_offered_as_holding_the_job() -> None:
    """A GPU count the user fixed is evaluated as is, fitting or not (``layouts``); what
    would hold the job is searched without the count, and every such layout fits."""
    w = workload(model=model("Llama 3 70B"), hardware=HardwareRequest(None, 1), duration_hours=5)
    rec = recommend(w, catalog(L4_SINGLE), now=NOW)
    assert rec.options == ()
    assert any(not p.fits for p in rec.layouts)
    assert rec.holding_layouts
    assert all(p.fits and p.gpus > 1 for p in rec.holding_layouts)
    assert any("on the 1 GPU you named" in r for r in rec.empty_reasons)


def test_a_budget_alone_is_said_in_epochs_of_the_stated_dataset() -> None:
    w = workload(method=Method.LORA, budget_usd=500.0, dataset_tokens=1e8)
    rec = recommend(w, catalog(H100_OD), now=NOW)
    assert rec.best is not None
    epochs = rec.best.tokens / 1e8
    assert any(f"({epochs:,.1f} epochs of your dataset)" in n for n in rec.notes)
