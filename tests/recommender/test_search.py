"""The shortcuts behind a fast recommend(): each gives the answer of the plain way."""

from __future__ import annotations

import gc
from dataclasses import fields, replace

import pytest

from recommender.feeds.bundled import load_bundled
from recommender.gpus import get_gpu
from recommender.offers import Catalog
from recommender.parse import parse_workload
from recommender.ranking import layouts, price_options, recommend
from recommender.topology import (
    SEARCH_FIELDS,
    SEARCHES_KEPT,
    LayoutSearch,
    clear_layout_searches,
    evaluate,
    fit_on_nodes,
    layout_search,
)
from recommender.workload import HardwareRequest, Method, SpotPolicy, Workload
from tests.factories import NOW, catalog, model, offer, workload

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
    """Try 1, 2, 3 … nodes in turn: the search's definition of the answer."""
    for nodes in range(1, last + 1):
        plan = evaluate(
            w,
            get_gpu(gpu_id),
            gpus=nodes * per_node,
            gpus_per_node=per_node,
            host_ram_gib=host_ram,
        )
        if plan.fits:
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


class TestCatalogIndex:
    def test_built_once_and_held_by_the_catalog(self) -> None:
        """The index is built on first use and kept by the catalog object."""
        c = catalog(offer(), offer(region="us-west-2", price_usd_per_hour=50.0))
        first = c.index
        assert c.index is first
        assert first.groups is not None
        assert [g.prices for g in first.groups] == [(50.0, 55.0)]
        assert [g.id for g in first.gpus] == ["H100-SXM-80GB"]

    def test_not_part_of_equality_or_repr(self) -> None:
        """Two catalogs with the same offers are equal whether or not one has its index."""
        a, b = catalog(offer()), catalog(offer())
        assert a.index is not None
        assert a == b
        assert hash(a) == hash(b)
        assert "index" not in repr(a)

    def test_one_instance_in_two_shapes_falls_back_to_the_scan(self) -> None:
        """Groups could not reproduce the scan's one-option-per-zone rule: no groups."""
        c = catalog(offer(), offer(gpu_count=4, price_usd_per_hour=30.0))
        assert c.index.groups is None
        assert recommend(workload(duration_hours=24), c, now=NOW).options

    def test_indexed_once_the_index_is_built_and_groups_the_offers(self) -> None:
        """``indexed`` tells whether a question's work is bounded already: only after the
        index is built, and never for a catalog the scan must answer; asking builds nothing."""
        grouped = catalog(offer(), offer(region="us-west-2", price_usd_per_hour=50.0))
        assert not grouped.indexed
        assert not grouped.indexed  # asking did not build it
        assert grouped.index.groups is not None
        assert grouped.indexed
        scanned = catalog(offer(), offer(gpu_count=4, price_usd_per_hour=30.0))
        assert scanned.index.groups is None
        assert not scanned.indexed

    def test_empty_catalog(self) -> None:
        """An empty catalog has empty groups and sells no GPU."""
        c = Catalog((), ())
        assert c.index.groups == ()
        assert c.index.gpus == ()


class TestSelection:
    @pytest.mark.parametrize("budget", [None, 100.0, 2_000.0, 1e6])
    def test_feasible_count_is_the_scans(self, budget: float | None) -> None:
        """Counting within budget by the groups gives the scan's count."""
        c = catalog(
            offer(),
            offer(region="us-west-2", price_usd_per_hour=50.0),
            offer(spot=True, price_usd_per_hour=22.0),
            offer(provider="lambda", instance_type="gpu_8x_h100_sxm5", price_usd_per_hour=24.0),
            offer(
                provider="runpod",
                instance_type="1x A100 80GB",
                gpu_id="A100-SXM-80GB",
                gpu_count=1,
                price_usd_per_hour=1.9,
            ),
        )
        w = workload(duration_hours=24, budget_usd=budget)
        rec = recommend(w, c, now=NOW, top=2)
        scanned = price_options(w, c, now=NOW)
        within = [o for o in scanned if budget is None or o.expected_cost_usd <= budget]
        assert rec.feasible == len(within)
        if within:
            cheapest = min(within, key=lambda o: o.expected_cost_usd)
            assert rec.options[0].expected_cost_usd == cheapest.expected_cost_usd


#: Workload fields a layout search never reads: questions differing only in these share one.
NOT_SEARCH_FIELDS = (
    "duration_hours",
    "tokens",
    "budget_usd",
    "spot",
    "providers",
    "regions",
    "assumed",
    "ignored",
    "text",
)

#: Questions on one model setup each, then the same setups priced and filtered otherwise.
SHARED_QUESTIONS = [
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


class TestSharedSearch:
    def test_every_workload_field_is_read_by_the_search_or_never(self) -> None:
        """A new Workload field must be classified: if the search reads it, it is part of
        the key, or questions differing in it would share a wrong search."""
        names = {f.name for f in fields(Workload)}
        assert set(SEARCH_FIELDS) | set(NOT_SEARCH_FIELDS) == names
        assert not set(SEARCH_FIELDS) & set(NOT_SEARCH_FIELDS)

    def test_shared_by_workloads_that_differ_only_outside_the_search_fields(self) -> None:
        """Another duration, budget or spot policy reuses the search; another sequence
        length or method does not."""
        clear_layout_searches()
        w = workload(duration_hours=48)
        search = layout_search(w)
        assert layout_search(replace(w, duration_hours=3, budget_usd=100.0)) is search
        assert layout_search(replace(w, spot=SpotPolicy.ONLY, regions=("eu",))) is search
        assert layout_search(replace(w, seq_len=4096)) is not search
        assert layout_search(replace(w, method=Method.LORA)) is not search

    def test_at_most_searches_kept_are_kept(self) -> None:
        """The least recently used search is dropped past ``SEARCHES_KEPT``."""
        clear_layout_searches()
        first = layout_search(workload(seq_len=1))
        for seq in range(2, SEARCHES_KEPT + 2):
            layout_search(workload(seq_len=seq))
        assert layout_search(workload(seq_len=1)) is not first

    @pytest.mark.parametrize("scanned", [False, True], ids=["by groups", "by the scan"])
    def test_answers_from_a_shared_search_equal_answers_from_a_new_one(self, scanned: bool) -> None:
        """Every question answered after the others (its setup's search warm from them, with
        its shapes' plans and smallest layouts) equals the same question answered by a search
        of its own, whether the catalog is priced by its groups or by the scan."""
        offers = load_bundled().offers
        if scanned:  # one instance type in two shapes: the index cannot group the catalog
            first = offers[0]
            offers += (replace(first, gpu_count=first.gpu_count + 1),)
        market = Catalog(offers, ())
        assert (market.index.groups is None) is scanned
        clear_layout_searches()
        workloads = [parse_workload(q) for q in SHARED_QUESTIONS]
        for w in workloads:
            recommend(w, market, now=NOW)
        shared = [recommend(w, market, now=NOW) for w in workloads]
        for q, w, got in zip(SHARED_QUESTIONS, workloads, shared, strict=True):
            clear_layout_searches()
            assert got == recommend(w, market, now=NOW), q


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


class TestDetailsWhenRead:
    """A plan's memory breakdown and notes, and a recommendation's smallest layouts, are
    computed when first read; they compare, hash and print as if computed at once."""

    def test_plans_compare_and_hash_by_their_details(self) -> None:
        gpu = get_gpu("A100-SXM-80GB")
        one = LayoutSearch(workload()).evaluate(gpu, gpus=8)
        same = LayoutSearch(workload()).evaluate(gpu, gpus=8)
        longer = LayoutSearch(workload(seq_len=2100)).evaluate(gpu, gpus=8)
        assert one == same
        assert hash(one) == hash(same)
        assert (one.gpus, one.strategy, one.fits) == (longer.gpus, longer.strategy, longer.fits)
        assert one != longer  # only the memory (and so the notes) differ
        assert one.memory.total_gib < longer.memory.total_gib
        assert f"memory={one.memory!r}" in repr(one)
        assert f"notes={one.notes!r}" in repr(one)

    def test_only_what_an_answer_shows_is_computed(self) -> None:
        clear_layout_searches()
        w = parse_workload("13B full finetune seq 3000 2 days")
        market = Catalog(load_bundled().offers, ())
        rec = recommend(w, market, now=NOW, top=2)
        assert rec.options
        store = layout_search(w)._store  # what the search computed
        shown = {o.plan.source_key for o in rec.options}
        assert len(store.made) > len(shown)  # plans of every shape ...
        assert set(store.details) <= shown  # ... details of the shown ones (their caveats)
        assert not rec.smallest.computed
        assert [o.plan.notes for o in rec.options]
        assert set(store.details) == shown
        clear_layout_searches()
        assert rec.layouts == layouts(w, market.index.gpus)
        assert rec.smallest.computed

    def test_a_question_leaves_no_reference_cycles(self) -> None:
        """A question's search, plans and answer are freed by reference counting once
        dropped: no work left for the cyclic garbage collector, whose full passes grow
        with what waits for it (a cycle between plans and their search made them ~0.3 ms
        a question)."""
        market = Catalog(load_bundled().offers, ())
        recommend(parse_workload("7B lora"), market, now=NOW)  # the catalog's index
        gc.collect()
        gc.disable()
        try:
            for question in ("13B full finetune seq 3000 2 days", "405B pretrain 2 days"):
                rec = recommend(parse_workload(question), market, now=NOW)
                read = ([o.plan.notes for o in rec.options], rec.layouts, repr(rec))
                del rec, read
                clear_layout_searches()
                assert gc.collect() == 0, question
        finally:
            gc.enable()


class TestShapePlan:
    @pytest.mark.parametrize("w", WORKLOADS, ids=lambda w: f"{w.model.name} {w.method}")
    @pytest.mark.parametrize("gpu_id", ["T4", "L4", "A100-SXM-40GB", "H100-SXM-80GB"])
    @pytest.mark.parametrize("per_node", [1, 2, 8])
    @pytest.mark.parametrize(("multi_node", "max_nodes"), [(False, 64), (True, 64), (True, 3)])
    def test_equals_fit_on_nodes(
        self, w: Workload, gpu_id: str, per_node: int, multi_node: bool, max_nodes: int
    ) -> None:
        """The one-pass path for an instance shape gives fit_on_nodes' plan, for every host
        RAM (none, too little, enough, not a number), asked of one search in either order."""
        gpu = get_gpu(gpu_id)
        rams: list[float | None] = [None, 0.0, 16.0, 200.0, 2048.0, float("nan")]
        for order in (rams, rams[::-1]):
            search = LayoutSearch(w)
            for ram in order:
                got = search.shape_plan(gpu, per_node, max_nodes, multi_node, ram)
                want = fit_on_nodes(
                    w,
                    gpu,
                    gpus_per_node=per_node,
                    max_nodes=max_nodes,
                    multi_node=multi_node,
                    host_ram_gib=ram,
                )
                assert got == want, ram

    def test_a_named_gpu_count_takes_fit_on_nodes(self) -> None:
        w = workload(hardware=HardwareRequest(gpu_id=None, count=16))
        gpu = get_gpu("H100-SXM-80GB")
        got = LayoutSearch(w).shape_plan(gpu, 8, 64, True, 2048.0)
        assert got == fit_on_nodes(w, gpu, gpus_per_node=8, host_ram_gib=2048.0)
        assert got is not None
        assert (got.gpus, got.nodes) == (16, 2)
