"""The layout search's pretraining mechanisms of issue #33: expert parallelism for mixtures of
experts, the interleaved 1F1B schedule where the batch leaves few micro-batches, and the
16M-token dense batch ceiling at 16,384 GPUs (each case names its source)."""

from __future__ import annotations

import pytest

from recommender.estimation.global_batch import MAX_DENSE_BATCH_TOKENS
from recommender.estimation.layouts import evaluate
from recommender.estimation.parallelism import Parallel, auto_layouts, with_fixed
from recommender.estimation.steptime import step_time
from recommender.estimation.strategies import Strategy
from recommender.estimation.throughput import Network, plan_step
from recommender.gpus import IntraNode, get_gpu
from recommender.parsing.parse import parse_workload
from recommender.pricing.offers import Fabric
from recommender.workload import Method, Offload, Sharding, Workload
from tests.factories import model, workload

H100 = get_gpu("H100-SXM-80GB")
H800 = get_gpu("H800-SXM-80GB")
IB = Network(IntraNode.NVLINK, Fabric.INFINIBAND)


def _pretrain(name: str, *, seq: int) -> Workload:
    return workload(model=model(name), method=Method.PRETRAIN, seq_len=seq)


class TestExpertParallelism:
    """Megatron-Core's MoE guidelines (megatron/core/transformer/moe/README.md, "Best
    Practices"): EP × TP inside the NVLink node, EP before TP, PP across nodes."""

    @pytest.mark.parametrize(
        ("name", "before"),
        [
            # DeepSeek-V3 report §3.2: PP16 × EP64 on 2,048 H800; the search chose TP8 × PP16
            ("DeepSeek V3", Parallel(tp=8, pp=16)),
            # DeepSeek-V2 report §3.4: PP16 × EP8 with ZeRO-1; the search chose TP8 × PP2
            ("DeepSeek V2", Parallel(tp=8, pp=2)),
        ],
    )
    def test_deepseek_on_2048_h800_gets_expert_parallelism(
        self, name: str, before: Parallel
    ) -> None:
        """The search proposes EP inside the node, and it beats the tensor-parallel split it
        chose before EP was a rung."""
        w = workload(model=model(name), method=Method.PRETRAIN, seq_len=4096)
        plan = evaluate(w, H800, gpus=2048)
        assert plan.fits
        par = plan.strategy.parallel
        assert par.ep > 1
        assert par.ep * par.tp <= 8
        chosen = plan_step(w, plan, IB).tokens_per_second
        tp_split = Strategy(Sharding.ZERO1, Offload.NONE, False, before)
        kw = {"gpus": 2048, "nodes": 256, "link": IntraNode.NVLINK, "fabric": Fabric.INFINIBAND}
        old = step_time(w, H800, tp_split, **kw).tokens_per_second  # type: ignore[arg-type]
        assert chosen > old * 1.1

    def test_expert_layouts_stay_in_the_node_before_tensor_parallelism(self) -> None:
        moe = workload(model=model("DeepSeek V3"), method=Method.PRETRAIN, seq_len=4096)
        layouts = auto_layouts(moe, gpus=2048, gpus_per_node=8, nvlink=True)
        assert all(p.ep * p.tp <= 8 for p in layouts)
        assert layouts.index(Parallel(ep=8)) < layouts.index(Parallel(tp=2, ep=4))
        assert layouts.index(Parallel(pp=16, ep=8)) < layouts.index(Parallel(tp=8, pp=2))
        dense = workload(model=model("Llama 3 70B"), method=Method.PRETRAIN)
        assert all(p.ep == 1 for p in auto_layouts(dense, gpus=64, gpus_per_node=8, nvlink=True))

    def test_expert_gradients_reduce_only_over_their_replicas(self) -> None:
        """DeepSeek-V3's PP16 × EP64 on 2048 H800 (§3.2): each GPU all-reduces 1/64 of the
        experts' gradients, not all of them, so its data-parallel traffic is far smaller."""
        w = workload(model=model("DeepSeek V3"), method=Method.PRETRAIN, seq_len=4096)
        kw = {"gpus": 2048, "nodes": 256, "link": IntraNode.NVLINK, "fabric": Fabric.INFINIBAND}
        with_ep = Strategy(Sharding.ZERO1, Offload.NONE, True, Parallel(pp=16, ep=64))
        without = Strategy(Sharding.ZERO1, Offload.NONE, True, Parallel(pp=16))
        a = step_time(w, H800, with_ep, **kw)  # type: ignore[arg-type]
        b = step_time(w, H800, without, **kw)  # type: ignore[arg-type]
        assert 0 < a.dp_s < b.dp_s / 10


class TestInterleaving:
    def test_405b_on_16384_h100_interleaves_under_a_16m_batch(self) -> None:
        """Llama 3 405B on 16,384 H100: 16M tokens leave each pipeline few micro-batches, and
        Meta ran the interleaved schedule (Dubey et al. 2024 §3.3.2); the batch stays at the
        16M tokens of §3.4.1, not DeepSeek LLM's law's 55M."""
        w = parse_workload("pretrain llama 3.1 405b on 16384x H100 15.6T tokens seq 8k")
        plan = evaluate(w, H100, gpus=16_384)
        assert plan.fits
        par = plan.strategy.parallel
        assert par.pp > 1
        assert par.vp > 1
        step = plan_step(w, plan, IB)
        assert step.global_batch_tokens <= MAX_DENSE_BATCH_TOKENS
        assert step.micro_batches < 4 * par.pp  # the ceiling binds: few micro-batches
        plain = Strategy(
            plan.strategy.sharding,
            Offload.NONE,
            plan.strategy.checkpointing,
            Parallel(tp=par.tp, pp=par.pp),
        )
        kw = {"gpus": 16_384, "nodes": 2048, "link": IntraNode.NVLINK, "fabric": Fabric.INFINIBAND}
        plain_step = step_time(w, H100, plain, **kw)  # type: ignore[arg-type]
        assert step.tokens_per_second > plain_step.tokens_per_second * 1.1

    def test_a_pipeline_with_many_micro_batches_stays_plain(self) -> None:
        """Where the batch rule keeps ≥ 4 micro-batches per stage the plain 1F1B schedule
        holds fewer micro-batches' activations and loses little to its bubble."""
        w = _pretrain("Llama 3 70B", seq=4096)
        for par in auto_layouts(w, gpus=64, gpus_per_node=8, nvlink=True):
            assert par.vp == 1

    def test_a_fixed_pipeline_degree_drops_the_searched_virtual_stages(self) -> None:
        """Virtual stages chosen for PP2 do not carry to a PP3 the user fixed (80 layers cannot
        make 3 × 40 stages); the interleaving check refuses such a split."""
        got = with_fixed((Parallel(tp=8, pp=2, vp=40),), {"pp": 3})
        assert Parallel(tp=8, pp=3) in got
        assert all(p.vp == 1 for p in got)
        problem = Parallel(tp=8, pp=3, vp=40).problem(
            model("Llama 3 70B"), gpus=24, gpus_per_node=8
        )
        assert problem is not None
        assert "interleaved" in problem
