"""Properties of the rank order (issue #19): safer, faster and more-work-for-the-money
options never rank lower, and more work never costs less."""

from __future__ import annotations

from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recommender.estimation.layouts import evaluate
from recommender.gpus import get_gpu
from recommender.pricing.costing import Option
from recommender.pricing.economics import Economics
from recommender.pricing.offers import Offer
from recommender.ranking.recommend import rank_key, recommend
from recommender.workload import Method, Precision, SpotPolicy, Workload
from tests.factories import (
    A100_GCP,
    H100_OD,
    H100_SPOT,
    L40S_4X,
    LAMBDA_H100,
    NOW,
    RUNPOD_A100,
    catalog,
    offer,
    workload,
)

_POOL = [H100_OD, H100_SPOT, A100_GCP, L40S_4X, RUNPOD_A100, LAMBDA_H100]

_SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])

#: The three ways a question states its work: a token budget, a duration, neither.
_BASIS = st.sampled_from(["tokens", "duration", "default"])
_METHOD = st.sampled_from([Method.FULL, Method.LORA, Method.QLORA])


def _workload(basis: str, method: Method, amount: float) -> Workload:
    w = workload(method=method)
    if method is not Method.FULL:
        w = replace(w, precision=Precision.BF16_TRUE)
    if basis == "tokens":
        return replace(w, tokens=amount * 1e8)
    if basis == "duration":
        return replace(w, duration_hours=amount)
    return w


class TestHeadroom:
    @_SETTINGS
    @given(
        low=st.floats(min_value=0.0, max_value=1.0),
        high=st.floats(min_value=0.0, max_value=1.0),
        # under 1e5 over 10 h: an offer's price stays under MAX_OFFER_USD_PER_HOUR (10,000)
        cost=st.floats(min_value=1.0, max_value=1e5, exclude_max=True),
        tokens=st.floats(min_value=1e6, max_value=1e12),
        late=st.booleans(),
    )
    def test_more_headroom_never_ranks_a_plan_lower(
        self, low: float, high: float, cost: float, tokens: float, late: bool
    ) -> None:
        """Two priced offers alike in everything but the memory their plan uses: the one
        with more left free ranks first or ties."""
        plan = evaluate(workload(), get_gpu("H100-SXM-80GB"), gpus=8)
        base = plan.memory.total_gib - plan.memory.activations_gib

        def with_use(frac: float) -> Option:
            # Per-GPU use from the fixed states up to the whole usable memory.
            act = (plan.usable_gib - base) * frac
            p = replace(plan, memory=replace(plan.memory, activations_gib=act))
            econ = Economics(
                nodes=1,
                hours=10.0,
                wall_hours=10.0,
                billed_hours=10.0,
                storage_usd=0.0,
                spot=None,
                meets_deadline=not late,
                pessimistic_wall_hours=10.0,
                pessimistic_billed_hours=10.0,
                spot_worst_wall_hours=10.0,
                spot_worst_billed_hours=10.0,
                tokens=tokens,
            )
            # One node billed 10 h, no storage: the offer's price makes the expected cost.
            return Option(offer(price_usd_per_hour=cost / 10), p, econ)

        lean, fat = sorted((low, high))
        lean_item, fat_item = with_use(lean), with_use(fat)
        assert rank_key(lean_item) <= rank_key(fat_item)
        more_free = lean_item.plan.headroom_frac > fat_item.plan.headroom_frac
        if more_free and lean_item.plan.safe == fat_item.plan.safe:
            assert rank_key(lean_item) < rank_key(fat_item)  # headroom breaks the tie


class TestWork:
    @_SETTINGS
    @given(
        method=_METHOD,
        tokens=st.floats(min_value=1e6, max_value=5e10),
        more=st.floats(min_value=1.0, max_value=20.0),
        offers=st.lists(st.sampled_from(_POOL), min_size=1, max_size=6, unique=True),
    )
    def test_more_tokens_never_cost_less(
        self, method: Method, tokens: float, more: float, offers: list[Offer]
    ) -> None:
        """Every offer, and the cheapest answer, costs at least as much for more tokens. (The
        first answer need not: the objective weighs time and spot's worst case, so a small
        job may rank a sure on-demand plan first and a six times larger one a spot plan.)"""
        w = replace(_workload("tokens", method, 1.0), tokens=tokens)
        small = recommend(w, catalog(*offers), now=NOW, top=50)
        big = recommend(replace(w, tokens=tokens * more), catalog(*offers), now=NOW, top=50)
        before = {o.offer.key: o.expected_cost_usd for o in small.options}
        after = {o.offer.key: o.expected_cost_usd for o in big.options}
        assert before.keys() == after.keys()
        for key, cost in before.items():
            assert after[key] >= cost - 1e-9
        if small.options and big.options:
            cheapest_small = min(o.expected_cost_usd for o in small.options)
            cheapest_big = min(o.expected_cost_usd for o in big.options)
            assert cheapest_big >= cheapest_small - 1e-9

    @_SETTINGS
    @given(
        basis=_BASIS,
        method=_METHOD,
        amount=st.floats(min_value=1.0, max_value=200.0),
        offers=st.lists(st.sampled_from(_POOL), min_size=1, max_size=6, unique=True),
        spot=st.sampled_from(list(SpotPolicy)),
    )
    def test_no_option_ranks_above_one_doing_far_more_work_for_about_the_money(
        self, basis: str, method: Method, amount: float, offers: list[Offer], spot: SpotPolicy
    ) -> None:
        """No option ranks above one that does ≥ 1.5× the work for ≤ 1.1× the money (among
        options equally safe and equally on time), and with tokens or a duration every option
        is priced for the same work."""
        w = replace(_workload(basis, method, amount), spot=spot)
        rec = recommend(w, catalog(*offers), now=NOW, top=50)
        if basis != "default" and rec.options:
            assert len({round(o.tokens) for o in rec.options}) == 1
        for i, a in enumerate(rec.options):
            for b in rec.options[i + 1 :]:
                if (a.plan.safe, a.meets_deadline) != (b.plan.safe, b.meets_deadline):
                    continue
                assert not (
                    b.tokens >= 1.5 * a.tokens and b.expected_cost_usd <= 1.1 * a.expected_cost_usd
                )


class TestSpeed:
    @_SETTINGS
    @given(
        basis=_BASIS,
        method=_METHOD,
        amount=st.floats(min_value=1.0, max_value=200.0),
        price=st.floats(min_value=1.0, max_value=100.0),
        spot=st.booleans(),
        others=st.lists(st.sampled_from(_POOL), max_size=4, unique=True),
    )
    def test_a_faster_gpu_at_the_same_price_never_ranks_lower(
        self,
        basis: str,
        method: Method,
        amount: float,
        price: float,
        spot: bool,
        others: list[Offer],
    ) -> None:
        """An 8× H100 node and an 8× A100 node (same 80 GB, so the same plan) from one
        provider at one price: the H100 node, faster, ranks first, unless the catalog's
        sanity checks doubt its price alone (a doubted price ranks after every sound one)."""
        slow = offer(
            provider="acme",
            instance_type="a-8x-a100",
            gpu_id="A100-SXM-80GB",
            price_usd_per_hour=price,
            spot=spot,
        )
        fast = replace(slow, instance_type="z-8x-h100", gpu_id="H100-SXM-80GB")
        w = _workload(basis, method, amount)
        rec = recommend(w, catalog(*others, slow, fast), now=NOW, top=50)
        keys = [o.offer.key for o in rec.options]
        assert fast.key in keys
        doubted = {o.offer.key for o in rec.options if o.doubtful}
        if slow.key in keys and (fast.key in doubted) == (slow.key in doubted):
            assert keys.index(fast.key) < keys.index(slow.key)
