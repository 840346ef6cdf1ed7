"""Fine-tunes and post-training take as long as they really do (issue #32): practitioners'
descriptions are read, each objective's passes and rollouts are priced, small jobs run at
the CPU's pace, every estimate carries a range, and published runs are met."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bench import posttrain_calibration as cal
from recommender.estimation.finetune_speed import (
    FULL_STATE_BYTES,
    LOAD_GBS,
    SAVE_GBS,
    START_S,
    adapter_bytes_per_token,
    eval_tokens,
    run_overhead_s,
    time_range,
)
from recommender.estimation.rollout import HF_STEP_S, decode_seconds, engine, engine_batch
from recommender.estimation.steptime import step_time
from recommender.estimation.strategies import Strategy
from recommender.estimation.throughput import Network, flops_per_token, peak_tflops, plan_step
from recommender.estimation.topology import LayoutSearch, Plan
from recommender.gpus import IntraNode, get_gpu
from recommender.parsing.parse import parse_workload
from recommender.pricing.billing import RULES
from recommender.pricing.economics import Economics, economics
from recommender.pricing.offers import Fabric
from recommender.workload import (
    Framework,
    Method,
    Objective,
    Offload,
    Precision,
    Sharding,
    Workload,
)
from tests.factories import model, workload

H100 = get_gpu("H100-SXM-80GB")
NVLINK = Network.typical(IntraNode.NVLINK, fast_fabric=True)


def plan(w: Workload, gpu_id: str = "H100-SXM-80GB", gpus: int = 8) -> Plan:
    found = LayoutSearch(w).evaluate(get_gpu(gpu_id), gpus=gpus)
    assert found is not None
    assert found.fits
    return found


def rate(w: Workload, gpus: int = 8, gpu_id: str = "H100-SXM-80GB") -> float:
    """Tokens per second of ``w`` on a fixed ZeRO-3 strategy (so only the workload varies)."""
    strategy = Strategy(sharding=Sharding.ZERO3, offload=Offload.NONE, checkpointing=True)
    p = replace(plan(w, gpu_id, gpus), strategy=strategy)
    return plan_step(w, p, NVLINK).tokens_per_second


class TestPractitionersWords:
    """Must show 1: descriptions as practitioners write them are read, none refused."""

    @pytest.mark.parametrize(
        ("text", "field", "value"),
        [
            ("llama-2-7b qlora r=64 alpha=16", "lora_rank", 64),
            ("llama-2-7b lora target modules q_proj,v_proj", "lora_targets", "attention"),
            ("llama-2-7b lora target_modules q_proj v_proj gate_proj", "lora_targets", "all"),
            ("llama-2-7b lora 4-bit base", "method", Method.QLORA),
            ("llama-2-7b load_in_8bit lora", "method", Method.LORA),
            ("llama-2-7b sft per_device_train_batch_size=8", "micro_batch", 8),
            ("llama-2-7b sft per-device batch 4", "micro_batch", 4),
            ("llama-2-7b sft max_length 4096", "seq_len", 4096),
            ("llama-2-7b sft max seq length 1024", "seq_len", 1024),
            ("llama-2-7b sft packing", "packing", True),
            ("llama-2-7b sft no packing", "packing", False),
            ("llama-2-7b sft packed to 4096", "seq_len", 4096),
            ("llama-2-7b sft packed into sequences of 2048 tokens", "packing", True),
            ("qwen2.5-7b grpo 8 samples per prompt", "group_size", 8),
            ("qwen2.5-7b grpo num_generations 16", "group_size", 16),
            ("qwen2.5-7b grpo max_completion_length 1024", "completion_len", 1024),
            ("qwen2.5-7b grpo 2048 completion tokens", "completion_len", 2048),
            ("qwen2.5-7b grpo 6 training GPUs + 2 vLLM GPUs", "generation_gpus", 2),
            ("qwen2.5-7b grpo on 8 H100, 1 gpu for vllm", "generation_gpus", 1),
            ("13b ppo with a 350m reward model", "reward_params", 350e6),
            ("7b rlvr", "objective", Objective.GRPO),
            ("7b dpo precompute_ref_log_probs", "precomputed_reference", True),
            ("7b grpo async rollouts", "async_rollouts", True),
        ],
    )
    def test_phrase_is_read(self, text: str, field: str, value: object) -> None:
        w = parse_workload(text)
        assert getattr(w, field) == value
        assert w.ignored == ()

    @pytest.mark.parametrize(
        ("word", "trainer", "rl"),
        [
            ("TRL", Framework.HF, None),
            ("OpenRLHF", None, "openrlhf"),
            ("verl", None, "verl"),
            ("DeepSpeed-Chat", None, "deepspeed-chat"),
            ("Open-R1", Framework.HF, "open-r1"),
            ("torchtune", Framework.TORCHTUNE, None),
            ("Axolotl", Framework.AXOLOTL, None),
            ("Unsloth", Framework.UNSLOTH, None),
        ],
    )
    def test_framework_is_named(self, word: str, trainer: Framework | None, rl: str | None) -> None:
        w = parse_workload(f"llama-3-8b dpo with {word}")
        assert (w.framework, w.rl_framework) == (trainer, rl)

    @pytest.mark.parametrize(
        "setting", ["alpha=32", "lr 2e-5", "learning_rate 5e-7", "beta 0.1", "warmup_ratio 0.1"]
    )
    def test_a_number_that_changes_nothing_is_shown_as_read(self, setting: str) -> None:
        w = parse_workload(f"llama-3-8b lora {setting}")
        assert w.ignored == ()
        assert any("does not change the estimate" in a for a in w.assumed)

    @pytest.mark.parametrize(
        ("text", "expect"),
        [
            (
                "Llama 3 8B QLoRA r=16, alpha=32, dropout 0.05, target_modules=all-linear, "
                "per_device_train_batch_size=2, gradient_accumulation_steps=8, "
                "max_seq_length=2048, packing=True, num_train_epochs=3, 20k examples, Axolotl",
                {"method": Method.QLORA, "micro_batch": 2, "packing": True, "seq_len": 2048},
            ),
            (
                "axolotl llama-3-8b adapter: qlora, load_in_4bit: true, lora_r: 32, "
                "lora_alpha: 16, sequence_len: 4096, sample_packing: true, micro_batch_size: 2, "
                "gradient_accumulation_steps: 4, num_epochs: 3, 50k samples",
                {"lora_rank": 32, "seq_len": 4096, "micro_batch": 2, "packing": True},
            ),
            (
                "torchtune llama3_1 8B lora_finetune_single_device batch_size=2 epochs=1, "
                "52k examples, on 1 RTX 4090",
                {"method": Method.LORA, "framework": Framework.TORCHTUNE},
            ),
            (
                "verl GRPO Qwen2.5-7B data.train_batch_size=1024 actor_rollout_ref.rollout.n=5 "
                "data.max_response_length=1024 data.max_prompt_length=512 "
                "trainer.n_gpus_per_node=8 trainer.total_epochs=15, 7473 prompts, on 8 H100",
                {"group_size": 5, "completion_len": 1024, "seq_len": 1536, "rl_framework": "verl"},
            ),
            (
                "OpenRLHF PPO Llama 3 8B, 100k prompts, rollout_batch_size 1024, "
                "n_samples_per_prompt 1, generate_max_len 1024, prompt_max_len 1024, "
                "4 vllm engines, on 16 A100",
                {"objective": Objective.PPO, "completion_len": 1024, "engine": "vllm"},
            ),
            (
                "DeepSpeed-Chat step 3 OPT-1.3b actor opt-350m critic on 1 A6000",
                {"objective": Objective.PPO, "reward_params": 350e6},
            ),
            (
                "DPO mistral-7b, 61k preference pairs, beta 0.1, lr 5e-7, 3 epochs, "
                "max_length 1024, max_prompt_length 512, 16 A100 80GB, alignment-handbook",
                {"objective": Objective.DPO, "seq_len": 1024, "framework": Framework.HF},
            ),
            (
                "KTO Qwen2 0.5B, 14k examples, desirable_weight 1.0, undesirable_weight 1.0",
                {"objective": Objective.KTO},
            ),
        ],
    )
    def test_framework_config_words_are_read(self, text: str, expect: dict[str, object]) -> None:
        w = parse_workload(text)
        for field, value in expect.items():
            assert getattr(w, field) == value, field
        assert not any(any(c.isdigit() for c in word) for word in w.ignored)

    def test_pairs_train_chosen_and_rejected(self) -> None:
        w = parse_workload("mistral-7b dpo on 60k pairs, max length 1024, 3 epochs")
        assert w.tokens == pytest.approx(60_000 * 2 * 1024 * 3)
        assert any("chosen + rejected" in a for a in w.assumed)

    def test_prompts_times_samples_times_completion(self) -> None:
        w = parse_workload("qwen2.5-7b grpo, 1000 prompts x 8 samples x 1024 completion tokens")
        assert (w.group_size, w.completion_len, w.seq_len) == (8, 1024, 1024 + 256)
        assert w.tokens == pytest.approx(1000 * 8 * (1024 + 256))

    def test_steps_times_the_batch_make_the_work(self) -> None:
        w = parse_workload(
            "llama-2-7b lora, 500 steps, per-device batch 4, gradient accumulation 8, "
            "max length 512, on 2x A100"
        )
        assert w.tokens == pytest.approx(500 * 4 * 8 * 2 * 512)
        g = parse_workload("llama-2-7b lora, 100 steps, global batch 64, max length 512")
        assert g.tokens == pytest.approx(100 * 64 * 512)

    def test_split_gpus_count_in_the_layout(self) -> None:
        w = parse_workload("qwen2.5-7b grpo on H100, 6 training GPUs + 2 vLLM GPUs")
        assert w.hardware is not None
        assert w.hardware.count == 8
        assert w.generation_gpus == 2
        assert engine(w) == "vllm"

    def test_completions_per_prompt_stay_a_group_size(self) -> None:
        w = parse_workload("llama-3-8b grpo 4 completions per prompt")
        assert w.group_size == 4
        assert w.completion_len is None

    def test_eight_bit_adam_is_still_an_optimizer(self) -> None:
        assert parse_workload("13b 8-bit adam").method is Method.FULL

    def test_every_published_description_is_answered(self) -> None:
        results = [cal.run(c) for c in cal.load_cases()]
        assert all(r.estimate is not None for r in results), [r.why for r in results]


class TestAlgorithmsWork:
    """Must show 2: each objective's own passes; rollouts from decode time."""

    def test_dpo_adds_a_reference_forward_unless_precomputed(self) -> None:
        w = workload(micro_batch=8)
        dpo = replace(w, objective=Objective.DPO)
        pre = replace(dpo, precomputed_reference=True)
        assert flops_per_token(dpo, checkpointing=False) > flops_per_token(w, checkpointing=False)
        assert flops_per_token(pre, checkpointing=False) == flops_per_token(w, checkpointing=False)
        assert rate(dpo) < rate(pre)

    def test_kto_orpo_simpo_each_their_own_passes(self) -> None:
        w = workload(micro_batch=8)
        f = {o: flops_per_token(replace(w, objective=o), checkpointing=False) for o in Objective}
        assert f[Objective.ORPO] == f[Objective.SIMPO] == f[Objective.SFT]  # no reference
        assert f[Objective.KTO] > f[Objective.DPO] > f[Objective.SFT]  # KL batch passes

    def test_a_smaller_reward_model_and_critic_cost_less(self) -> None:
        w = replace(workload(micro_batch=4), objective=Objective.PPO, completion_len=256)
        small = replace(w, reward_params=350e6)
        assert flops_per_token(small, checkpointing=False) < flops_per_token(w, checkpointing=False)

    def test_rollouts_dominate_long_completions(self) -> None:
        w = replace(workload(micro_batch=4, seq_len=4096), objective=Objective.GRPO)
        short, long_ = replace(w, completion_len=256), replace(w, completion_len=3840)
        sft = replace(w, objective=Objective.SFT)
        assert rate(long_) < rate(short) < rate(sft)
        assert rate(sft) / rate(long_) > 3  # generation, not the passes, sets the pace

    def test_vllm_decodes_faster_than_hf_generate(self) -> None:
        w = replace(workload(seq_len=2048), objective=Objective.GRPO, completion_len=1024)
        flops = peak_tflops(H100, w.precision) * 1e12 * 0.5
        args = {"sequences": 512.0, "gen_gpus": 8, "dedicated": False, "flops_rate": flops}
        hf = decode_seconds(replace(w, engine="hf"), H100, **args)
        vllm = decode_seconds(replace(w, engine="vllm"), H100, **args)
        assert vllm < hf / 2

    def test_hf_generate_pays_its_measured_step_whatever_the_depth(self) -> None:
        # bench/device_h200.jsonl: ~35-58 ms a decode step for 24- and 32-layer models alike
        flops = peak_tflops(H100, Precision.BF16_MIXED) * 1e12 * 0.5
        args = {"sequences": 64.0, "gen_gpus": 1, "dedicated": False, "flops_rate": flops}
        seconds = {}
        for name in ("qwen2.5-0.5b", "llama-3.1-8b"):
            w = replace(workload(model=name, seq_len=512), objective=Objective.GRPO)
            w = replace(w, completion_len=256, engine="hf")
            seconds[name] = decode_seconds(w, H100, **args)
            rounds = 64 / engine_batch(w, H100, gen_gpus=1, dedicated=False)
            assert seconds[name] >= rounds * 256 * HF_STEP_S
        # the 8B reads 16x the weights, yet decodes well under twice as long
        assert seconds["llama-3.1-8b"] < 2 * seconds["qwen2.5-0.5b"]

    def test_deepspeed_chat_generates_with_its_fused_kernels(self) -> None:
        w = replace(workload(seq_len=512), objective=Objective.PPO, completion_len=256)
        flops = peak_tflops(H100, w.precision) * 1e12 * 0.5
        args = {"sequences": 512.0, "gen_gpus": 8, "dedicated": False, "flops_rate": flops}
        hf = decode_seconds(w, H100, **args)
        hybrid = decode_seconds(replace(w, rl_framework="deepspeed-chat"), H100, **args)
        assert hybrid < hf / 2

    def test_decode_is_bound_by_memory_bandwidth(self) -> None:
        w = replace(workload(), objective=Objective.GRPO, completion_len=1024, engine="vllm")
        flops = peak_tflops(H100, w.precision) * 1e12 * 0.5
        args = {"sequences": 64.0, "gen_gpus": 1, "dedicated": True, "flops_rate": flops}
        h100 = decode_seconds(w, H100, **args)
        h200 = decode_seconds(w, get_gpu("H200-SXM-141GB"), **args)  # same FLOPs, more HBM
        assert h200 < h100 * 0.85

    def test_the_kv_cache_bounds_the_generation_batch(self) -> None:
        w = replace(workload(), objective=Objective.GRPO, engine="vllm")
        short = engine_batch(replace(w, seq_len=1024), H100, gen_gpus=1, dedicated=True)
        long_ = engine_batch(replace(w, seq_len=32768), H100, gen_gpus=1, dedicated=True)
        assert short == 256
        assert long_ < 64

    def test_gpus_set_aside_for_generation_count_and_train_nothing(self) -> None:
        w = replace(workload(micro_batch=4), objective=Objective.GRPO, completion_len=512)
        split = replace(w, generation_gpus=2, engine="vllm")
        colocated = replace(w, engine="vllm")
        step = plan_step(split, plan(split), NVLINK)
        assert step.posttrain_scale == pytest.approx(8 / 6)
        assert plan_step(colocated, plan(colocated), NVLINK).posttrain_scale == 1.0

    def test_overlap_only_when_rollouts_are_asynchronous(self) -> None:
        w = replace(workload(micro_batch=4), objective=Objective.GRPO, completion_len=1024)
        sync = replace(w, generation_gpus=2)
        overlapped = replace(sync, async_rollouts=True)
        assert rate(overlapped) > rate(sync)


class TestSmallJobs:
    """Must show 3: small jobs run far below pretraining MFU; fixed costs count."""

    def test_a_small_model_at_micro_batch_one_runs_at_the_cpus_pace(self) -> None:
        w = replace(workload(model=model("qwen2.5-0.5b"), seq_len=512), objective=Objective.KTO)
        tps = rate(w)
        peak = peak_tflops(H100, w.precision) * 1e12 * 8
        mfu = tps * flops_per_token(w, checkpointing=False) / peak
        assert mfu < 0.05  # a few TFLOP/s per GPU, not 40 % of peak

    def test_compile_and_unsloth_cut_the_overhead(self) -> None:
        w = workload(model=model("qwen2.5-0.5b"), seq_len=512, method=Method.LORA)
        compiled = replace(w, savers=replace(w.savers, compile=True))
        assert rate(compiled) > rate(w)
        assert rate(replace(w, framework=Framework.UNSLOTH)) > rate(w)

    def test_large_micro_steps_are_unchanged(self) -> None:
        """The CPU's pace hides behind big GPU work: no overhead at 8 × 4096 tokens of 8B."""
        w = workload(micro_batch=8, seq_len=4096)
        assert plan_step(w, plan(w), NVLINK).posttrain_s == 0.0

    def test_qlora_still_pays_its_dequantisation_at_micro_batch_one(self) -> None:
        lora = workload(model=model("llama-2-7b"), method=Method.LORA, seq_len=256)
        qlora = replace(lora, method=Method.QLORA)
        assert rate(qlora, gpus=1, gpu_id="A100-SXM-40GB") < rate(
            lora, gpus=1, gpu_id="A100-SXM-40GB"
        )

    def test_a_run_pays_start_load_and_save(self) -> None:
        w = workload(tokens=1e6)
        assert run_overhead_s(w, 8) > 120
        ppo = replace(w, objective=Objective.PPO)
        assert run_overhead_s(ppo, 8) > run_overhead_s(w, 8)  # four models, a vLLM engine

    def test_loading_is_at_the_measured_rate(self) -> None:
        """An 8B model's 16 GB take ~48 s at the safetensors loader's 0.33 GB/s."""
        w = workload(model=model("llama-3-8b"), tokens=1e6, method=Method.LORA)
        load = run_overhead_s(w, 8) - START_S
        assert load == pytest.approx(w.model.params * 2 / (LOAD_GBS * 1e9))
        assert 40 < load < 60

    def test_a_full_fine_tune_saves_a_resumable_checkpoint_each_epoch(self) -> None:
        one = workload(tokens=1e8, method=Method.FULL)
        three = replace(one, tokens=3e8, dataset_tokens=1e8)
        extra = run_overhead_s(three, 8) - run_overhead_s(one, 8)
        state = one.model.params * FULL_STATE_BYTES / (SAVE_GBS * 1e9)
        assert extra == pytest.approx(2 * state)
        # a 7B model's full state writes in ~150 s, the PyTorch/IBM measurement
        seven = workload(model=model("llama-2-7b"))
        assert 130 < seven.model.params * FULL_STATE_BYTES / (SAVE_GBS * 1e9) < 170

    def test_an_adapter_run_saves_nothing_worth_counting(self) -> None:
        lora = workload(tokens=3e8, dataset_tokens=1e8, method=Method.LORA)
        assert run_overhead_s(lora, 8) == pytest.approx(
            run_overhead_s(replace(lora, dataset_tokens=None), 8)
        )

    def test_evaluation_counts_when_the_description_has_an_eval_set(self) -> None:
        w = parse_workload("llama-3-8b sft, 52k examples, 2k eval examples, 3 epochs, on 8x H100")
        assert w.eval_tokens == pytest.approx(2000 * 1024)
        # three forward passes of 2 FLOPs over the eval set against 6 a trained token
        assert eval_tokens(w) == pytest.approx(3 * 2000 * 1024 * 2 / 6)
        assert eval_tokens(replace(w, eval_tokens=None)) == 0.0
        p = plan(w)
        tph = plan_step(w, p, NVLINK).tokens_per_second * 3600
        econ = economics(w, p, rule=RULES["aws"], spot=False, tokens_per_hour=tph)
        bare = economics(
            replace(w, eval_tokens=None), p, rule=RULES["aws"], spot=False, tokens_per_hour=tph
        )
        assert econ.hours - bare.hours == pytest.approx(eval_tokens(w) / tph)

    def test_a_dpo_eval_scores_both_answers_with_the_reference_too(self) -> None:
        w = parse_workload("llama-3-8b dpo, 60k pairs, eval set of 2000 pairs, on 8x H100")
        assert w.eval_tokens == pytest.approx(4000 * 1024)  # chosen + rejected
        # policy and reference forwards (4) against DPO's 6 + 2 a trained token
        assert eval_tokens(w) == pytest.approx(4000 * 1024 * 4 / 8)


class TestRanges:
    """Must show 4: every fine-tune and post-training estimate carries a range; the plan's
    pessimistic hours use its top."""

    @pytest.mark.parametrize("objective", list(Objective))
    def test_every_fine_tune_has_a_range(self, objective: Objective) -> None:
        low, high = time_range(replace(workload(), objective=objective))
        assert low < 1.0 < high

    def test_pretraining_keeps_its_own(self) -> None:
        assert time_range(workload(method=Method.PRETRAIN)) == (1.0, 1.0)

    def test_a_deadlines_pessimistic_hours_use_the_top(self) -> None:
        w = replace(
            workload(tokens=5e8, duration_hours=100.0), objective=Objective.GRPO, completion_len=512
        )
        p = plan(w)
        tph = plan_step(w, p, NVLINK).tokens_per_second * 3600
        econ = economics(w, p, rule=RULES["aws"], spot=False, tokens_per_hour=tph)
        expected = w.tokens / tph + run_overhead_s(w, 8) / 3600
        assert econ.hours == pytest.approx(expected)
        assert econ.pessimistic_wall_hours == pytest.approx(expected * time_range(w)[1])

    def _econ(self, w: Workload, *, spot: bool, ranged: bool = True) -> Economics:
        p = plan(w)
        tph = plan_step(w, p, NVLINK).tokens_per_second * 3600
        return economics(
            w, p, rule=RULES["aws"], spot=spot, tokens_per_hour=tph, gpu_id=H100.id, ranged=ranged
        )

    def test_the_pessimistic_hours_use_the_top_without_a_deadline(self) -> None:
        w = replace(workload(tokens=5e8), objective=Objective.DPO)
        assert w.deadline_hours is None
        econ = self._econ(w, spot=False)
        assert econ.pessimistic_wall_hours == pytest.approx(econ.hours * time_range(w)[1])
        assert econ.pessimistic_billed_hours > econ.billed_hours
        # on demand spot's risk is nil: the range is no risk of spot's
        assert econ.spot_worst_wall_hours == econ.wall_hours
        assert econ.spot_worst_billed_hours == econ.billed_hours

    def test_spots_worst_case_builds_on_the_top(self) -> None:
        """A run that takes the range's top meets more preemptions: the plan's pessimistic
        hours are spot's worst case times the top; spot's risk is its worst case alone."""
        w = replace(workload(tokens=5e9), objective=Objective.DPO)
        econ = self._econ(w, spot=True)
        assert econ.spot_worst_wall_hours > econ.wall_hours
        top = time_range(w)[1]
        assert econ.pessimistic_wall_hours == pytest.approx(econ.spot_worst_wall_hours * top)

    def test_pretraining_has_no_range_in_its_pessimistic_hours(self) -> None:
        econ = self._econ(workload(method=Method.PRETRAIN, tokens=5e8), spot=False)
        assert econ.pessimistic_wall_hours == econ.wall_hours

    def test_work_a_duration_buys_stops_when_the_duration_is_up(self) -> None:
        w = replace(workload(tokens=5e8), objective=Objective.DPO)
        econ = self._econ(w, spot=False, ranged=False)
        assert econ.pessimistic_wall_hours == econ.wall_hours

    def test_a_deadline_is_judged_at_the_top(self) -> None:
        w = replace(workload(tokens=5e8), objective=Objective.DPO)
        p = plan(w)
        tph = plan_step(w, p, NVLINK).tokens_per_second * 3600
        hours = economics(w, p, rule=RULES["aws"], spot=False, tokens_per_hour=tph).hours
        tight = replace(w, duration_hours=hours * 1.05)  # inside the estimate, not the top
        econ = economics(tight, p, rule=RULES["aws"], spot=False, tokens_per_hour=tph)
        assert not econ.meets_deadline


class TestPublishedRuns:
    """Must show 5, on tests/recommender/data/posttrain_calibration.csv (sources per row)."""

    def results(self, split: str) -> list[cal.Result]:
        return [cal.run(c) for c in cal.load_cases() if c.split == split]

    def test_held_out_runs_meet_the_targets(self) -> None:
        """The issue's targets, on the validation split no constant was set on."""
        answered, median, within = cal.summary(self.results("val"))
        assert answered >= 0.9
        assert median <= 0.35
        assert within >= 0.8

    def test_calibration_runs(self) -> None:
        """The calibration split meets them too, with two runs no mechanism here explains
        (Alpaca's 2023 FSDP run, TRL's KTO example: docs/estimator.md)."""
        answered, median, within = cal.summary(self.results("cal"))
        assert answered >= 0.9
        assert median <= 0.35
        assert within >= 0.8

    def test_held_out_times_fall_inside_the_stated_range(self) -> None:
        results = self.results("val")
        assert sum(cal.in_range(r) for r in results) / len(results) >= 0.8

    def test_no_estimate_beats_the_physical_floor(self) -> None:
        for r in self.results("cal") + self.results("val"):
            assert r.run_hours is not None
            assert r.floor is not None
            assert r.run_hours >= r.floor, r.case.name

    def test_both_splits_hold_every_kind_of_run(self) -> None:
        cases = cal.load_cases()
        for split in ("cal", "val"):
            texts = " ".join(c.text.lower() for c in cases if c.split == split)
            assert "ppo" in texts
            assert "lora" in texts

    def test_small_jobs_are_judged_on_more_than_one_benchmark_table(self) -> None:
        """Steady-throughput tables from LitGPT, torchtune (two tables) and NeMo, each split
        holding rows of each: no small-job figure rests on one framework's measurements."""
        cases = [c for c in cal.load_cases() if c.measure == "steady"]
        for split in ("cal", "val"):
            sources = {c.source.split(" ")[0] for c in cases if c.split == split}
            assert {"Lightning-AI/litgpt", "pytorch/torchtune", "NVIDIA/NeMo"} <= sources


class TestPhysicalFloor:
    """Must show 5: no estimate beats the run's FLOPs, generation included, at 60 % of the
    dense peak, across the kinds of job, not only the published runs."""

    @pytest.mark.parametrize("name", ["qwen2.5-0.5b", "llama-3-8b", "llama-3-70b"])
    @pytest.mark.parametrize("method", [Method.FULL, Method.LORA, Method.QLORA])
    @pytest.mark.parametrize(
        "objective", [Objective.SFT, Objective.DPO, Objective.KTO, Objective.GRPO, Objective.PPO]
    )
    @pytest.mark.parametrize(("micro_batch", "seq_len"), [(1, 512), (8, 4096)])
    def test_the_whole_runs_hours_are_at_or_over_the_floor(
        self, name: str, method: Method, objective: Objective, micro_batch: int, seq_len: int
    ) -> None:
        w = replace(
            workload(model=model(name), method=method, micro_batch=micro_batch, seq_len=seq_len),
            objective=objective,
            tokens=2e8,
        )
        gpus = 64 if (name, method) == ("llama-3-70b", Method.FULL) else 8  # where it fits
        found = LayoutSearch(w).evaluate(H100, gpus=gpus)
        assert found is not None
        assert found.fits
        tph = plan_step(w, found, NVLINK).tokens_per_second * 3600
        econ = economics(w, found, rule=RULES["aws"], spot=False, tokens_per_hour=tph)
        assert econ.hours >= cal.floor_hours(w, H100.id, gpus)


class TestAdapterTraffic:
    """LoRA's adapters beside the frozen layers move elementwise traffic no GEMM hides."""

    def test_peft_casts_cost_more_than_bf16_adapters_and_unsloth_fuses_them(self) -> None:
        w = workload(method=Method.LORA, framework=Framework.HF)
        peft = adapter_bytes_per_token(w, checkpointing=False)
        plain = adapter_bytes_per_token(
            replace(w, framework=Framework.TORCHTUNE), checkpointing=False
        )
        fused = adapter_bytes_per_token(
            replace(w, framework=Framework.UNSLOTH), checkpointing=False
        )
        assert peft > 1.5 * plain > 0
        assert fused == 0.0
        assert adapter_bytes_per_token(workload(), checkpointing=False) == 0.0  # full weights

    def test_recomputation_and_more_targets_add_traffic(self) -> None:
        w = workload(method=Method.LORA, framework=Framework.HF)
        assert adapter_bytes_per_token(w, checkpointing=True) > adapter_bytes_per_token(
            w, checkpointing=False
        )
        attention = replace(w, lora_targets="attention")
        assert adapter_bytes_per_token(attention, checkpointing=False) < adapter_bytes_per_token(
            w, checkpointing=False
        )

    def test_the_traffic_lengthens_the_step_of_a_large_micro_batch(self) -> None:
        w = workload(method=Method.LORA, framework=Framework.HF, micro_batch=4)
        strategy = Strategy(Sharding.DDP, Offload.NONE, False)
        h200 = get_gpu("H200-SXM-141GB")
        args = {"gpus": 1, "nodes": 1, "link": IntraNode.NVLINK, "fabric": Fabric.NONE}
        peft = step_time(w, h200, strategy, **args).compute_s
        fused = step_time(replace(w, framework=Framework.UNSLOTH), h200, strategy, **args)
        assert peft > fused.compute_s * 1.1
