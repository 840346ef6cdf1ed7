"""The shortcuts inside one question: each gives the answer of the plain way."""

from __future__ import annotations

import gc

import pytest

from recommender.estimation.layouts import evaluate, fit_on_nodes
from recommender.estimation.throughput import Network, tokens_per_hour
from recommender.estimation.topology import LayoutSearch
from recommender.feeds.bundled import load_bundled
from recommender.gpus import get_gpu
from recommender.parsing.parse import parse_workload
from recommender.pricing.billing import RULES
from recommender.pricing.catalog import Catalog
from recommender.ranking.recommend import rank, recommend
from recommender.ranking.selection import allowed, fitted_groups, priced_offers, shape_plan
from recommender.workload import Method, Workload
from tests.factories import NOW, model, workload

#: Workloads whose fewest nodes on small GPUs range from 1 to dozens, or none at all.
WORKLOADS = [
    workload(),
    workload(model=model("Llama 3 70B")),
    workload(model=model("Llama 3 70B"), method=Method.LORA),
    workload(model=model("Llama 3.1 405B"), method=Method.PRETRAIN, seq_len=8192),
]


def _linear_fewest_nodes(
    w: Workload, gpu_id: str, per_node: int, host_ram: float | None, last: int
) -> int | None:
    """Try 1, 2, 3 … nodes in turn: the search's definition of the answer (the fewest that
    keep the safety margin, else the fewest that fit at all)."""
    plans = [
        evaluate(
            w,
            get_gpu(gpu_id),
            gpus=nodes * per_node,
            gpus_per_node=per_node,
            host_ram_gib=host_ram,
        )
        for nodes in range(1, last + 1)
    ]
    for test in (lambda p: p.safe, lambda p: p.fits):
        for nodes, plan in enumerate(plans, start=1):
            if test(plan):
                return nodes
    return None


class TestFewestNodes:
    @pytest.mark.parametrize("w", WORKLOADS, ids=lambda w: f"{w.model.name} {w.method}")
    @pytest.mark.parametrize("gpu_id", ["T4", "L4", "A100-SXM-40GB", "H100-SXM-80GB"])
    @pytest.mark.parametrize(("per_node", "host_ram"), [(8, None), (8, 1024.0), (1, 200.0)])
    def test_search_finds_what_trying_every_count_finds(
        self, w: Workload, gpu_id: str, per_node: int, host_ram: float | None
    ) -> None:
        """The galloping search returns the node count a linear scan returns."""
        plan = fit_on_nodes(
            w, get_gpu(gpu_id), gpus_per_node=per_node, max_nodes=64, host_ram_gib=host_ram
        )
        expected = _linear_fewest_nodes(w, gpu_id, per_node, host_ram, 64)
        assert (plan.nodes if plan is not None else None) == expected


#: Questions that filter, price and fit the catalog in different ways.
QUESTIONS = [
    "13B full finetune 2 days",
    "13B full finetune 7 hours",
    "13b full finetune under $100",
    "13B full finetune on 2B tokens in 3 days spot only",
    "13B full finetune 2 days no spot aws only",
    "llama-3-70b qlora on 2B tokens under $3,000",
    "llama-3-70b qlora 36 hours",
    "llama-3-70b qlora 36 hours us-east only",
    "70B pretrain on 1T tokens in 30 days",
    "70B pretrain 10 days spot only",
    "mistral-7b lora seq 4k on 1x A100-80GB spot ok",
    "mistral-7b lora seq 4k on 1x A100-80GB 5 hours no spot",
    "34B full finetune 3 days",
    "34B full finetune under $50",
]


class TestFittedGroups:
    @pytest.mark.parametrize("question", QUESTIONS)
    def test_each_group_gets_the_plan_and_rate_of_a_search_of_its_own(self, question: str) -> None:
        """One plan per instance shape and one rate per (shape, network) for a question:
        every allowed group the job fits on is listed, with what a new search of its own
        offer finds, and every group left out fits nowhere or is not allowed."""
        w = parse_workload(question)
        market = Catalog.of(load_bundled().offers, ())
        fitted = fitted_groups(w, market, LayoutSearch(w))
        assert fitted
        listed = {id(f.group) for f in fitted}
        for group in market.groups:
            first = group.offers[0]
            alone = shape_plan(LayoutSearch(w), first)
            allowed_here = any(allowed(w, o) for o in group.offers)
            assert (id(group) in listed) == (allowed_here and alone is not None)
        for f in fitted:
            first = f.group.offers[0]
            assert f.plan == shape_plan(LayoutSearch(w), first)
            assert f.tokens_per_hour == tokens_per_hour(w, f.plan, Network.of(first))


class TestGroupOrder:
    @pytest.mark.parametrize("question", QUESTIONS)
    def test_each_group_is_priced_in_rank_order(self, question: str) -> None:
        """What lets recommend() sort only the first few offers of each group."""
        w = parse_workload(question)
        market = Catalog.of(load_bundled().offers, ())
        groups = priced_offers(w, fitted_groups(w, market, LayoutSearch(w)), RULES, keep=1000)
        assert groups
        for group in groups:
            assert group.within == rank(group.within)
            # The best offer is the first within the budget when it fits the budget; when it
            # does not, a doubted price further down the group can (the bundled snapshot's
            # GCP a3-highgpu-2g spot, for "13b full finetune under $100").
            budget = w.budget_usd
            if group.within and (budget is None or group.best.expected_cost_usd <= budget):
                assert group.best == group.within[0]


class TestSharedAcrossHostRam:
    @pytest.mark.parametrize("w", WORKLOADS, ids=lambda w: f"{w.model.name} {w.method}")
    @pytest.mark.parametrize("gpu_id", ["L4", "A100-SXM-40GB", "H100-SXM-80GB", "B200-180GB"])
    @pytest.mark.parametrize("per_node", [1, 2, 8])
    @pytest.mark.parametrize("multi_node", [False, True])
    def test_one_search_over_every_host_ram_equals_a_new_search_each(
        self, w: Workload, gpu_id: str, per_node: int, multi_node: bool
    ) -> None:
        """Shapes that differ only in host RAM, asked of one search in either order, get the
        plans a search of their own finds (a one-node plan without offload is shared)."""
        gpu = get_gpu(gpu_id)
        rams: list[float | None] = [None, 0.0, 16.0, 200.0, 2048.0]
        for order in (rams, rams[::-1]):
            search = LayoutSearch(w)
            for ram in order:
                shared = search.fit_on_nodes(
                    gpu, gpus_per_node=per_node, multi_node=multi_node, host_ram_gib=ram
                )
                alone = fit_on_nodes(
                    w, gpu, gpus_per_node=per_node, multi_node=multi_node, host_ram_gib=ram
                )
                assert shared == alone


class TestPlans:
    def test_plans_compare_and_hash_by_their_values(self) -> None:
        gpu = get_gpu("A100-SXM-80GB")
        one = LayoutSearch(workload()).evaluate(gpu, gpus=8)
        same = LayoutSearch(workload()).evaluate(gpu, gpus=8)
        longer = LayoutSearch(workload(seq_len=2100)).evaluate(gpu, gpus=8)
        assert one == same
        assert hash(one) == hash(same)
        assert (one.gpus, one.strategy, one.fits) == (longer.gpus, longer.strategy, longer.fits)
        assert one != longer  # only the memory (and so the notes) differ
        assert one.memory.total_gib < longer.memory.total_gib

    def test_a_question_leaves_no_reference_cycles(self) -> None:
        """A question's search, plans and answer are freed by reference counting once
        dropped: no work left for the cyclic garbage collector, whose full passes grow
        with what waits for it."""
        market = Catalog.of(load_bundled().offers, ())
        gc.collect()
        gc.disable()
        try:
            for question in ("13B full finetune seq 3000 2 days", "405B pretrain 2 days"):
                rec = recommend(parse_workload(question), market, now=NOW)
                read = ([o.plan.notes for o in rec.options], rec.layouts, repr(rec))
                del rec, read
                assert gc.collect() == 0, question
        finally:
            gc.enable()
