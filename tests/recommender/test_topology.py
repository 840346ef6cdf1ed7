"""Topology search: smallest layout, cheapest strategy first, switches explained in notes."""

from __future__ import annotations

import pytest

from recommender.estimation.layouts import evaluate, fit_on_nodes, smallest_layout
from recommender.estimation.memory import estimate_memory
from recommender.estimation.strategies import Strategy
from recommender.estimation.topology import Plan, candidate_strategies
from recommender.gpus import get_gpu
from recommender.workload import HardwareRequest, Method, Offload, Sharding, Workload
from tests.factories import model, workload

H100 = get_gpu("H100-SXM-80GB")
A100_40 = get_gpu("A100-SXM-40GB")
L4 = get_gpu("L4")


class TestCandidates:
    def test_single_gpu_ladder(self) -> None:
        """One GPU: plain, checkpointing, then optimizer and parameter offload."""
        got = candidate_strategies(workload(), gpus=1, nodes=1)
        assert got[0] == Strategy(Sharding.DDP, Offload.NONE, False)
        assert got[1] == Strategy(Sharding.DDP, Offload.NONE, True)
        assert [s.offload for s in got[2:]] == [Offload.OPTIMIZER] * 2 + [Offload.PARAMS] * 2

    def test_node_ladder_tries_every_sharding_before_checkpointing(self) -> None:
        """In a node: DDP, ZeRO-1, ZeRO-2, FSDP without checkpointing, then with it; the
        model-parallel splits only after every sharding rung."""
        got = candidate_strategies(workload(), gpus=8, nodes=1, allow_offload=False)
        plain = [s for s in got if s.parallel.trivial]
        assert got[: len(plain)] == tuple(plain)
        assert [(s.sharding, s.checkpointing) for s in plain] == [
            (sh, ck)
            for ck in (False, True)
            for sh in (Sharding.DDP, Sharding.ZERO1, Sharding.ZERO2, Sharding.FSDP)
        ]

    def test_multi_node_ladder_fully_shards(self) -> None:
        """Across nodes HSDP and FSDP are tried, and model-parallel splits (with ZeRO-1 or
        FSDP over the data-parallel ranks) between them."""
        got = candidate_strategies(workload(), gpus=16, nodes=2, allow_offload=False)
        assert {s.sharding for s in got if s.parallel.trivial} == {Sharding.HSDP, Sharding.FSDP}
        assert {s.sharding for s in got if not s.parallel.trivial} == {
            Sharding.ZERO1,
            Sharding.FSDP,
        }
        assert got[0].sharding is Sharding.HSDP
        assert got[1].parallel.tp == 2

    def test_fixed_choices_are_honoured(self) -> None:
        """A sharding, offload or checkpointing the workload fixes is the only one tried."""
        w = workload(sharding=Sharding.ZERO2, checkpointing=True)
        got = candidate_strategies(w, gpus=4, nodes=1, allow_offload=False)
        assert got[0] == Strategy(Sharding.ZERO2, Offload.NONE, True)
        assert {(s.sharding, s.checkpointing) for s in got} == {(Sharding.ZERO2, True)}
        w = workload(offload=Offload.PARAMS)
        assert {s.offload for s in candidate_strategies(w, gpus=4, nodes=1)} == {Offload.PARAMS}


@pytest.mark.parametrize(
    "w",
    [
        workload(),
        workload(model=model("Llama 3 70B")),
        workload(model=model("Llama 3 70B"), method=Method.PRETRAIN, seq_len=32_768),
        workload(method=Method.QLORA),
        workload(sharding=Sharding.ZERO2),
        workload(checkpointing=True),
        workload(model=model("Mixtral 8x7B"), model_parallel=True),
        workload(tensor_parallel=2),
    ],
    ids=lambda w: f"{w.model.name} {w.method} {w.sharding} tp{w.tensor_parallel}",
)
@pytest.mark.parametrize(("gpus", "per_node"), [(1, 1), (2, 2), (8, 8), (16, 8), (64, 8), (24, 4)])
@pytest.mark.parametrize("nvlink", [True, False])
def test_ladder_without_offload_is_the_ladder_less_its_offload_rungs(
    w: Workload, gpus: int, per_node: int, nvlink: bool
) -> None:
    """What Layout.without_offload relies on to read both ladders off one."""
    kw = {"gpus": gpus, "nodes": -(-gpus // per_node), "gpus_per_node": per_node}
    every = candidate_strategies(w, allow_offload=True, nvlink=nvlink, **kw)
    without = candidate_strategies(w, allow_offload=False, nvlink=nvlink, **kw)
    assert without == tuple(s for s in every if s.offload is Offload.NONE)


class TestSmallestLayout:
    def test_small_lora_fits_one_gpu_without_switches(self) -> None:
        """An 8B LoRA at seq 2048 fits one H100 plainly, with no notes to explain."""
        plan = smallest_layout(workload(method=Method.LORA), H100)
        assert plan is not None
        assert (plan.gpus, plan.strategy.checkpointing, plan.strategy.sharding) == (
            1,
            False,
            Sharding.DDP,
        )
        assert plan.notes == ()

    def test_checkpointing_switched_on_only_when_it_makes_the_fit(self) -> None:
        """On one L4 the 8B LoRA at seq 1024 needs checkpointing (at 2048 it leaves less than
        the safety margin even then), and the note gives the numbers and cost."""
        plan = smallest_layout(workload(method=Method.LORA, seq_len=1024), L4)
        assert plan is not None
        assert plan.gpus == 1
        assert plan.strategy.checkpointing
        assert any(
            "activation checkpointing switched on: without it" in n and "33%" in n
            for n in plan.notes
        )

    def test_a_plan_keeps_the_safety_margin_when_more_gpus_can(self) -> None:
        """At seq 2048 one L4 would be left with 2.1 GiB, under the 2.2 GiB margin (10 % of
        22.3): the search moves on to two GPUs rather than offer the tight single card."""
        plan = smallest_layout(workload(method=Method.LORA), L4)
        assert plan is not None
        assert plan.gpus == 2
        assert plan.safe
        assert plan.headroom_gib >= plan.margin_gib

    def test_a_tight_plan_only_when_nothing_keeps_the_margin(self) -> None:
        """One named GPU: the cheapest strategy that fits at all, marked not safe."""
        plan = evaluate(workload(method=Method.LORA), L4, gpus=1)
        assert plan.fits
        assert not plan.safe
        assert plan.strategy.checkpointing

    def test_sharding_is_explained(self) -> None:
        """A 7B full fine-tune needs several A100-40GB and says why it shards."""
        plan = smallest_layout(workload(model=model("Llama 2 7B")), A100_40)
        assert plan is not None
        assert plan.gpus > 1
        assert plan.strategy.sharding is not Sharding.DDP
        assert any("sharding switched on" in n and "replicated (DDP)" in n for n in plan.notes)

    def test_multi_node_when_one_node_is_not_enough(self) -> None:
        """A 70B full fine-tune needs more than one 8×H100 node: tensor parallelism inside
        each node, pipeline stages across them (as NeMo's Llama 2 70B SFT, TP4 PP4 on 16)."""
        plan = smallest_layout(workload(model=model("Llama 3 70B")), H100)
        assert plan is not None
        assert plan.nodes >= 2
        assert plan.gpus_per_node == 8
        par = plan.strategy.parallel
        assert par.tp == 8
        assert par.pp == plan.nodes
        # TP8 × PP2 on 2 nodes needs 74.7 GiB/GPU: it fits the 79.2 usable but not the 15 %
        # safety margin (67.3), so the search adds a third stage: TP8 × PP3 on 3 nodes.
        assert any(n.startswith(f"model split TP8 × PP{plan.nodes}") for n in plan.notes)

    def test_fitted_plans_have_non_negative_headroom(self) -> None:
        """A plan that fits never exceeds usable memory."""
        plan = smallest_layout(workload(), H100)
        assert plan is not None
        assert plan.fits
        assert 0 <= plan.headroom_frac < 1
        assert plan.memory.total_gib <= plan.usable_gib

    def test_named_count_is_evaluated_as_is(self) -> None:
        """With "4 GPUs" in the text the answer is about 4 GPUs or nothing."""
        w = workload(hardware=HardwareRequest(gpu_id=None, count=4))
        plan = smallest_layout(w, H100)
        assert plan is not None
        assert plan.gpus == 4


class TestFitOnNodes:
    def test_whole_nodes_of_the_instance_shape(self) -> None:
        """On 2-GPU instances the fit uses 2, 4, 6 … GPUs, all of each node."""
        plan = fit_on_nodes(workload(model=model("Llama 2 13B")), H100, gpus_per_node=2)
        assert plan is not None
        assert plan.gpus % 2 == 0
        assert plan.gpus == plan.nodes * 2

    def test_single_node_only_without_a_fast_fabric(self) -> None:
        """Without multi-node, a job that needs two nodes gets None."""
        w = workload(model=model("Llama 3 70B"))
        assert fit_on_nodes(w, H100, gpus_per_node=8, multi_node=False) is None
        assert fit_on_nodes(w, H100, gpus_per_node=8) is not None

    def test_offload_only_with_known_host_ram(self) -> None:
        """Offload is proposed only when the node's RAM is known and holds the states."""
        w = workload()
        assert fit_on_nodes(w, L4, gpus_per_node=1, multi_node=False) is None
        small = fit_on_nodes(w, L4, gpus_per_node=1, multi_node=False, host_ram_gib=16)
        assert small is None
        big = fit_on_nodes(w, L4, gpus_per_node=1, multi_node=False, host_ram_gib=512)
        assert big is not None
        assert big.strategy.offload is not Offload.NONE
        assert big.host_ram_gib <= 512
        assert any("offloaded to CPU RAM" in n for n in big.notes)

    def test_named_count_is_honoured_beyond_the_search_limit(self) -> None:
        """The node limit bounds the search, not a count the user named (the shape plans
        price ``on 1024x H100`` as asked)."""
        w = workload(hardware=HardwareRequest(gpu_id=None, count=1024))
        plan = fit_on_nodes(w, H100, gpus_per_node=8, max_nodes=64)
        assert plan is not None
        assert (plan.gpus, plan.nodes) == (1024, 128)
        assert fit_on_nodes(w, H100, gpus_per_node=8, multi_node=False) is None

    def test_count_that_is_not_whole_nodes_is_rejected(self) -> None:
        """A named count of 4 cannot be made of 8-GPU nodes."""
        w = workload(hardware=HardwareRequest(gpu_id=None, count=4))
        assert fit_on_nodes(w, H100, gpus_per_node=8) is None


class TestEvaluate:
    def test_exact_hardware_that_does_not_fit(self) -> None:
        """On 1× A100-40GB an 8B full fine-tune does not fit; the least-memory need is shown."""
        plan = evaluate(workload(), A100_40, gpus=1)
        assert not plan.fits
        assert plan.headroom_frac < 0
        assert plan.strategy.checkpointing  # the least-memory strategy without offload
        assert plan.notes[0].startswith("does not fit")
        assert any("would fit with" in n and "host RAM" in n for n in plan.notes)

    def test_exact_hardware_that_fits(self) -> None:
        """On 8× H100 the same job fits, with the cheapest strategy that does."""
        plan = evaluate(workload(), H100, gpus=8)
        assert plan.fits
        assert plan.gpus == 8
        assert plan.nodes == 1

    def test_many_gpus_form_nodes_of_eight(self) -> None:
        """16 GPUs default to two 8-GPU nodes."""
        plan = evaluate(workload(model=model("Llama 3 70B")), H100, gpus=16)
        assert (plan.nodes, plan.gpus_per_node) == (2, 8)

    def test_memory_matches_the_estimator(self) -> None:
        """A plan's memory is the estimator's for its strategy and layout."""
        plan: Plan = evaluate(workload(), H100, gpus=4)
        again = estimate_memory(workload(), plan.strategy, gpus=4, gpus_per_node=4)
        assert plan.memory == again

    def test_describe_names_gpus_and_strategy(self) -> None:
        """describe() reads like "2× H100-SXM-80GB, ZeRO-2"."""
        plan = evaluate(workload(model=model("Llama 3 70B")), H100, gpus=16)
        assert plan.describe().startswith("16× H100-SXM-80GB (2 nodes × 8), ")


@pytest.mark.parametrize("gpus", [1, 2, 4, 8])
def test_strategy_describe_on_one_gpu_does_not_name_sharding(gpus: int) -> None:
    """On one GPU the strategy is "single GPU"; on several it names the sharding."""
    text = Strategy(Sharding.FSDP, Offload.NONE, True).describe(gpus)
    if gpus == 1:
        assert text == "single GPU + activation checkpointing"
    else:
        assert text == "FSDP full shard + activation checkpointing"
