"""3D parallelism: degrees read from text, searched, divided into memory and time, and
checked against published runs (each case names its source; ``docs/estimator.md`` tabulates
them)."""

from __future__ import annotations

import pytest

from bench.time_calibration import estimate as time_estimate
from bench.time_calibration import load_cases
from recommender.errors import WorkloadError
from recommender.estimation.estimate import estimate
from recommender.estimation.layouts import evaluate
from recommender.estimation.memory import estimate_memory
from recommender.estimation.parallelism import Parallel, activation_scale, stage_fractions
from recommender.estimation.steptime import step_time
from recommender.estimation.strategies import Strategy
from recommender.gpus import IntraNode, get_gpu
from recommender.parsing.parse import parse_workload
from recommender.pricing.offers import Fabric
from recommender.workload import MemorySavers, Method, Objective, Offload, Sharding
from tests.factories import model, workload

H100 = get_gpu("H100-SXM-80GB")
L40S = get_gpu("L40S")


def ckpt(sharding: Sharding, par: Parallel) -> Strategy:
    return Strategy(sharding, Offload.NONE, True, par)


class TestParse:
    @pytest.mark.parametrize(
        ("text", "degrees"),
        [
            ("llama 3 70b tp 8 pp 4", (8, 4, None, None, None)),
            ("llama 3 70b tp8 pp4 vp 5", (8, 4, None, None, 5)),
            ("llama 3 70b tensor parallel 8", (8, None, None, None, None)),
            ("llama 3 70b 8-way tensor parallelism", (8, None, None, None, None)),
            ("llama 3 70b pipeline parallel size 4 cp 2", (None, 4, 2, None, None)),
            ("mixtral 8x7b ep 8", (None, None, None, 8, None)),
        ],
    )
    def test_degrees(self, text: str, degrees: tuple[int | None, ...]) -> None:
        w = parse_workload(text)
        got = (
            w.tensor_parallel,
            w.pipeline_parallel,
            w.context_parallel,
            w.expert_parallel,
            w.virtual_stages,
        )
        assert got == degrees
        assert w.ignored == ()

    def test_3d_parallel_asks_for_a_split_and_is_not_three_days(self) -> None:
        w = parse_workload("llama 3 70b pretrain 3d parallel")
        assert w.model_parallel
        assert w.duration_hours is None

    def test_tensor_parallelism_stays_in_a_node(self) -> None:
        with pytest.raises(WorkloadError, match="between 1 and 8"):
            parse_workload("llama 3 70b tp 16")


class TestSearch:
    def test_70b_pretraining_on_256_h100_fits_with_a_split(self) -> None:
        """The brief's case: Llama 3 70B at seq 8192 on 256 H100 fits, model split."""
        est = estimate(parse_workload("llama-3-70b pretrain seq 8192 on 256x H100"))
        plan = est.hardware
        assert plan is not None
        assert plan.fits
        assert plan.strategy.parallel.tp > 1
        assert plan.notes[0].startswith("model split TP")

    def test_requested_degrees_are_honoured(self) -> None:
        est = estimate(parse_workload("llama-3-70b pretrain seq 8192 tp 8 pp 4 on 256x H100"))
        plan = est.hardware
        assert plan is not None
        assert plan.fits
        assert plan.strategy.parallel == Parallel(tp=8, pp=4)
        assert "TP8 × PP4 × DP8" in plan.describe()
        assert "as requested" in plan.notes[0]

    def test_a_split_the_layout_cannot_host_does_not_fit(self) -> None:
        w = parse_workload("llama-3-70b pretrain tp 8 pp 4 on 16x H100")
        plan = evaluate(w, H100, gpus=16)
        assert not plan.fits

    def test_no_tensor_parallelism_without_nvlink(self) -> None:
        """L40S nodes have PCIe only: the search never puts TP on them."""
        w = workload(model=model("Llama 3 70B"), method=Method.PRETRAIN, seq_len=8192)
        plan = evaluate(w, L40S, gpus=64)
        assert plan.strategy.parallel.tp == 1

    def test_single_node_answers_keep_plain_sharding(self) -> None:
        """An 8B full fine-tune on one node still uses sharding alone."""
        plan = evaluate(workload(), H100, gpus=8)
        assert plan.strategy.parallel.trivial


class TestMemory:
    def test_model_states_divide_by_tp_and_pp_then_by_dp(self) -> None:
        """memory.md §2: model memory ÷ (p·t), then ZeRO-1 shards the optimizer over DP."""
        w = workload(model=model("Llama 3 70B"), method=Method.PRETRAIN)
        plain = estimate_memory(w, ckpt(Sharding.DDP, Parallel()), gpus=1, gpus_per_node=1)
        split = estimate_memory(
            w, ckpt(Sharding.ZERO1, Parallel(tp=8, pp=4)), gpus=64, gpus_per_node=8
        )
        # heaviest stage: 20 of 80 layers plus the embedding, ÷8
        assert split.weights_gib == pytest.approx(plain.weights_gib / 32, rel=0.15)
        assert split.optimizer_gib == pytest.approx(split.weights_gib * 6 / 2, rel=0.01)

    def test_activations_follow_korthikanti(self) -> None:
        """÷t with sequence parallelism, ÷cp; 1F1B first stage = one micro-batch's L layers;
        interleaved ×(1 + (p−1)/(p·v)); without a pipeline the logits count as well."""
        assert activation_scale(80.0, 20.0, Parallel(tp=8)) == pytest.approx(100 / 8)
        assert activation_scale(80.0, 20.0, Parallel(cp=4)) == pytest.approx(100 / 4)
        assert activation_scale(80.0, 4.0, Parallel(pp=4)) == pytest.approx(80.0)
        assert activation_scale(80.0, 4.0, Parallel(pp=4, vp=2)) == pytest.approx(80 * 11 / 8)

    def test_torchtitan_70b_fsdp32_tp8(self) -> None:
        """pytorch/torchtitan benchmarks/llama3_h100_202412_torchtitan.md Table 4: Llama 3.1
        70B, FSDP32 × TP8 on 256 H100 (96 GB), seq 8192, local batch 16, full AC: 71.9 GiB
        (reserved). Estimate 55.7 GiB: within 25 % (torchtitan reports reserved memory)."""
        w = workload(model=model("Llama 3.1 70B"), method=Method.PRETRAIN, seq_len=8192)
        w = type(w)(**{**{f: getattr(w, f) for f in w.__slots__}, "micro_batch": 16})
        m = estimate_memory(w, ckpt(Sharding.FSDP, Parallel(tp=8)), gpus=256, gpus_per_node=8)
        assert m.pytorch_gib == pytest.approx(71.9, rel=0.25)

    @pytest.mark.parametrize(
        ("cp", "seq", "published"),
        [(1, 32768, 83.9), (2, 65536, 84.2), (4, 131072, 84.0), (8, 262144, 84.5)],
    )
    def test_torchtitan_8b_context_parallel(self, cp: int, seq: int, published: float) -> None:
        """torchtitan Table 2: Llama 3.1 8B on 8 H100 (96 GB), FSDP (8/cp) × CP, full AC,
        seq 32k·cp, batch 1: 83.9-84.5 GiB; the estimate is flat in cp too (−9 %)."""
        w = workload(model=model("Llama 3.1 8B"), method=Method.PRETRAIN, seq_len=seq)
        m = estimate_memory(w, ckpt(Sharding.FSDP, Parallel(cp=cp)), gpus=8, gpus_per_node=8)
        assert m.pytorch_gib == pytest.approx(published, rel=0.15)

    def test_torchtitan_405b_3d_keeps_the_stage_unsharded(self) -> None:
        """torchtitan Table 5: Llama 3.1 405B FSDP8 × TP8 × PP8 on 512 H100: 82.5 GiB (1F1B).
        Under PP torchtitan does not reshard after forward and the stage syncs gradients only
        on the last micro-batch, so the stage's bf16 weights and fp32 gradients stay whole:
        ~54 GiB (was ~21 GiB without that rule). Still ~34 % low (FP8 all-gathers, pipeline
        send/receive buffers and reserved-vs-allocated are not counted); pinned so a change
        in either direction is noticed."""
        w = workload(model=model("Llama 3.1 405B"), method=Method.PRETRAIN, seq_len=8192)
        m = estimate_memory(w, ckpt(Sharding.FSDP, Parallel(tp=8, pp=8)), gpus=512, gpus_per_node=8)
        assert 0.6 * 82.5 < m.pytorch_gib < 82.5

    def test_full_sharding_under_pp_gathers_the_stage(self) -> None:
        """FSDP × PP: the stage's 16-bit weights are whole (shard + the rest gathered) and its
        gradients accumulate unsharded in fp32 (mixed precision): 2 + 4 B per stage param on
        top of the shards; without PP only one unit is gathered."""
        w = workload(model=model("Llama 3 70B"), method=Method.PRETRAIN)
        par = Parallel(tp=8, pp=4)
        m = estimate_memory(w, ckpt(Sharding.FSDP, par), gpus=256, gpus_per_node=8)
        own, _ = stage_fractions(w.model, par)
        stage = own * w.model.params
        n = 256 // 32
        expected = stage * (2 * (1 - 1 / n) + 4) / 2**30
        assert m.gathered_gib == pytest.approx(expected, rel=1e-6)
        flat = estimate_memory(w, ckpt(Sharding.FSDP, Parallel(tp=8)), gpus=256, gpus_per_node=8)
        assert flat.gathered_gib < m.gathered_gib / 10


class TestTime:
    def test_tp_traffic_stays_on_nvlink(self) -> None:
        """TP collectives never cross nodes: a slower fabric does not change them."""
        w = workload(model=model("Llama 3 70B"), method=Method.PRETRAIN)
        s = ckpt(Sharding.ZERO1, Parallel(tp=8, pp=2))
        kw = {"gpus": 16, "nodes": 2, "link": IntraNode.NVLINK}
        ib = step_time(w, H100, s, fabric=Fabric.INFINIBAND, **kw)  # type: ignore[arg-type]
        eth = step_time(w, H100, s, fabric=Fabric.ETHERNET, **kw)  # type: ignore[arg-type]
        assert ib.split_s == eth.split_s > 0

    def test_bubble_shrinks_with_micro_batches_and_interleaving(self) -> None:
        w = workload(model=model("Llama 3 70B"), method=Method.PRETRAIN)
        kw = {"gpus": 64, "nodes": 8, "link": IntraNode.NVLINK, "fabric": Fabric.INFINIBAND}
        one = step_time(w, H100, ckpt(Sharding.ZERO1, Parallel(tp=8, pp=4)), **kw)  # type: ignore[arg-type]
        inter = step_time(w, H100, ckpt(Sharding.ZERO1, Parallel(tp=8, pp=4, vp=4)), **kw)  # type: ignore[arg-type]
        assert inter.bubble_s == pytest.approx(one.bubble_s / 4)

    @pytest.mark.parametrize(
        ("name", "tolerance"),
        [
            # NeMo 24.07 Llama 2 70B TP4 PP4 VP20, 64 H100, FP8 1707 tok/s/GPU (≈1330
            # bf16-equivalent); NeMo's TP1 PP1 7B row is +25 % off too (their FP8 gain)
            ("nemo_llama2_70b_64", 0.35),
            ("tt_70b_256_bf16", 0.15),  # torchtitan 70B FSDP32 × TP8, bf16: 597 tok/s/GPU
        ],
    )
    def test_published_split_runs(self, name: str, tolerance: float) -> None:
        case = {c.name: c for c in load_cases()}[name]
        assert not case.strategy.parallel.trivial
        err = case.published / time_estimate(case) - 1
        assert abs(err) <= tolerance, f"{name}: {err:+.0%} ({case.source})"


class TestWithMemorySavers:
    """Model parallelism composes with the memory savers and post-training models."""

    def test_reference_model_is_split_like_the_policy(self) -> None:
        """DPO's frozen reference is part of the weights TP2 halves (same dp, 1 rank)."""
        w = workload(objective=Objective.DPO)
        plain = estimate_memory(
            w, Strategy(Sharding.DDP, Offload.NONE, True), gpus=1, gpus_per_node=1
        )
        tp2 = estimate_memory(w, ckpt(Sharding.DDP, Parallel(tp=2)), gpus=2, gpus_per_node=2)
        assert tp2.weights_gib == pytest.approx(plain.weights_gib / 2, rel=1e-6)

    def test_paged_states_and_offloaded_activations_are_split(self) -> None:
        """Host RAM for paged states (÷tp) and offloaded activations (÷tp) per GPU."""
        savers = MemorySavers(paged_optimizer=True, activation_offload=True)
        w = workload(savers=savers)
        plain = estimate_memory(
            w, Strategy(Sharding.DDP, Offload.NONE, True), gpus=1, gpus_per_node=1
        )
        tp4 = estimate_memory(w, ckpt(Sharding.DDP, Parallel(tp=4)), gpus=4, gpus_per_node=4)
        assert plain.cpu_offload_gib > 0
        assert tp4.cpu_offload_gib == pytest.approx(plain.cpu_offload_gib / 4, rel=1e-6)

    def test_optimizer_in_backward_floor_is_split(self) -> None:
        """The one unit's gradient left by optimizer-in-backward is ÷tp as well."""
        w = workload(savers=MemorySavers(optimizer_in_backward=True))
        plain = estimate_memory(
            w, Strategy(Sharding.DDP, Offload.NONE, True), gpus=1, gpus_per_node=1
        )
        tp8 = estimate_memory(w, ckpt(Sharding.DDP, Parallel(tp=8)), gpus=8, gpus_per_node=8)
        assert 0 < tp8.gradients_gib == pytest.approx(plain.gradients_gib / 8, rel=1e-6)

    def test_split_plans_keep_the_safety_margin(self) -> None:
        """A searched split fits with the 15 % margin (Plan.safe), as every plan does."""
        plan = evaluate(workload(model=model("Llama 3 70B")), H100, gpus=32, gpus_per_node=8)
        assert plan.fits
        assert plan.safe
        assert not plan.strategy.parallel.trivial
