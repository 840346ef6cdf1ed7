"""``parse_workload``: the model and how it trains, with every default made explicit."""

from __future__ import annotations

import pytest

from recommender.models import lookup_model
from recommender.parsing.parse import parse_workload
from recommender.workload import (
    HardwareRequest,
    Method,
    Offload,
    Optimizer,
    Precision,
    Sharding,
    SpotPolicy,
)
from tests.factories import parse, rejected


class TestExamplesFromTheBrief:
    def test_short_full_finetune(self) -> None:
        """The canonical example parses to a 13B full fine-tune priced for 48 hours."""
        w = parse_workload("13B full finetune 2 days")
        assert (w.model.params, w.method, w.duration_hours) == (13e9, Method.FULL, 48.0)
        assert w.ignored == ()

    def test_slack_question_with_budget_and_tokens(self) -> None:
        """A Slack question yields a LoRA on Llama 3 70B with budget and token budget."""
        w = parse_workload("@gpufit we have $3,000, can we LoRA llama-3-70b on 2B tokens?")
        assert w.model.name == "Llama 3 70B"
        assert (w.method, w.budget_usd, w.tokens) == (Method.LORA, 3000.0, 2e9)
        assert w.ignored == ()

    def test_everything_at_once(self) -> None:
        """A dense spec sets model, method, sequence, batch, hardware, spot and provider."""
        w = parse_workload(
            "meta-llama/Llama-2-7b-hf qlora seq 4k batch 4 on 1x A100-40GB spot ok aws only"
        )
        assert w.model.name == "Llama 2 7B"
        assert (w.method, w.seq_len, w.micro_batch) == (Method.QLORA, 4096, 4)
        assert w.hardware == HardwareRequest(gpu_id="A100-SXM-40GB", count=1)
        assert (w.spot, w.providers) == (SpotPolicy.ALLOW, frozenset({"aws"}))
        assert w.ignored == ()

    def test_text_is_kept(self) -> None:
        """The original text is kept on the workload for display."""
        assert parse_workload("13b lora").text == "13b lora"


class TestSizes:
    @pytest.mark.parametrize(
        ("phrase", "params"),
        [
            ("13B", 13e9),
            ("1.3b", 1.3e9),
            ("350M", 350e6),
            ("7e9 params", 7e9),
            ("70 billion", 70e9),
            ("7,000,000,000 parameters", 7e9),
            ("１３Ｂ", 13e9),
        ],
    )
    def test_bare_size_infers_an_architecture(self, phrase: str, params: float) -> None:
        """A bare size gives an inferred (not known) architecture of that size."""
        w = parse_workload(phrase)
        assert w.model.params == round(params)
        assert not w.model.known

    @pytest.mark.parametrize(
        ("phrase", "name"),
        [
            ("llama-3-8b", "Llama 3 8B"),
            ("Llama 3.1 70B", "Llama 3.1 70B"),
            ("llama3 8b", "Llama 3 8B"),
            ("Llama 3.1 405B", "Llama 3.1 405B"),
            ("llama-3.2-1b", "Llama 3.2 1B"),
            ("Llama 3.2 3B", "Llama 3.2 3B"),
            ("meta-llama/Llama-2-7b-hf", "Llama 2 7B"),
            ("llama 2 13b", "Llama 2 13B"),
            ("Llama-2-70b", "Llama 2 70B"),
            ("Mistral 7B", "Mistral 7B"),
            ("mixtral 8x7b", "Mixtral 8x7B"),
            ("8x7B", "Mixtral 8x7B"),
            ("Qwen2.5-7B-Instruct", "Qwen2.5 7B"),
            ("qwen2.5 0.5b", "Qwen2.5 0.5B"),
            ("Qwen/Qwen2.5-72B", "Qwen2.5 72B"),
            ("gemma-2-9b", "Gemma 2 9B"),
            ("Gemma 2 27B", "Gemma 2 27B"),
            ("phi-3-mini", "Phi-3 mini"),
            ("falcon-40b", "Falcon 40B"),
            ("gpt2", "GPT-2"),
            ("gpt2-xl", "GPT-2 XL"),
            ("t5-3b", "T5-3B"),
            ("llama 3.1 8b instruct", "Llama 3.1 8B"),
            ("llama-3.1-8b-instruct", "Llama 3.1 8B"),
            ("meta-llama/Meta-Llama-3-8B-Instruct", "Llama 3 8B"),
            ("Ｌｌａｍａ-３-８Ｂ", "Llama 3 8B"),
        ],
    )
    def test_known_name_sets_the_real_architecture(self, phrase: str, name: str) -> None:
        """A known model spelling resolves to its published architecture."""
        w = parse_workload(f"{phrase} lora")
        assert w.model == lookup_model(name)
        assert w.model.known
        assert w.ignored == ()

    def test_token_budget_is_not_a_size(self) -> None:
        """ "2B tokens" is a token budget, so the model size comes from elsewhere."""
        w = parse_workload("7b on 2B tokens")
        assert (w.model.params, w.tokens) == (7e9, 2e9)

    def test_hardware_count_is_not_a_size(self) -> None:
        """ "8x H100" is hardware; "8x7B" alone is Mixtral."""
        w = parse_workload("8x7B on 8x H100")
        assert w.model.name == "Mixtral 8x7B"
        assert w.hardware == HardwareRequest(gpu_id="H100-SXM-80GB", count=8)

    def test_a_second_size_is_reported(self) -> None:
        """The first model wins; a conflicting second size is reported as ignored."""
        w = parse_workload("llama-3-8b 13b")
        assert w.model.name == "Llama 3 8B"
        assert w.ignored == ("13b",)


class TestFamilyAndSize:
    @pytest.mark.parametrize(
        ("text", "name"),
        [
            ("llama 70b qlora", "Llama 3.1 70B"),
            ("llama 8b lora", "Llama 3.1 8B"),
            ("llama 7b", "Llama 2 7B"),
            ("llama 13b", "Llama 2 13B"),
            ("llama 1b", "Llama 3.2 1B"),
            ("qwen 14b sft", "Qwen2.5 14B"),
            ("gemma 27b", "Gemma 2 27B"),
            ("gpt2 1.5b full finetune", "GPT-2 XL"),
            ("gpt2 355m", "GPT-2 Medium"),
        ],
    )
    def test_a_family_word_and_a_size_name_the_closest_known_model(
        self, text: str, name: str
    ) -> None:
        """`llama 70b` is the family's known model nearest that size, newest on a tie."""
        assert parse_workload(text).model.name == name

    def test_a_family_word_that_is_also_a_model_name_still_names_it_alone(self) -> None:
        """`gpt2` alone is GPT-2 (124M); a following size makes it a family word instead, and
        the size is not reported as not understood."""
        alone = parse_workload("gpt2 full finetune")
        assert alone.model.name == "GPT-2"
        sized = parse_workload("gpt2 1.5b full finetune")
        assert sized.model.name == "GPT-2 XL"
        assert "1.5b" not in sized.ignored

    def test_a_size_the_family_never_had_is_inferred_in_the_family_shape(self) -> None:
        """`llama 33b` has no known model: the size is inferred with the family's vocabulary
        and attention groups, and the answer says so (issue #21; it used to report `llama`
        as not understood)."""
        w = parse_workload("llama 33b")
        assert not w.model.known
        assert w.model.vocab == 128256
        assert "llama" not in w.ignored
        assert any("no llama model of 33b is known" in a for a in w.assumed)


class TestMethod:
    @pytest.mark.parametrize(
        ("phrase", "method"),
        [
            ("pretrain", Method.PRETRAIN),
            ("pretraining", Method.PRETRAIN),
            ("pre-training", Method.PRETRAIN),
            ("from scratch", Method.PRETRAIN),
            ("full finetune", Method.FULL),
            ("full fine-tune", Method.FULL),
            ("fine-tune", Method.FULL),
            ("finetune", Method.FULL),
            ("fft", Method.FULL),
            ("sft", Method.FULL),
            ("lora", Method.LORA),
            ("LoRA fine-tune", Method.LORA),
            ("qlora", Method.QLORA),
            ("QLoRA", Method.QLORA),
            ("4-bit lora", Method.QLORA),
        ],
    )
    def test_method_words(self, phrase: str, method: Method) -> None:
        """Each method phrase selects its method without being recorded as assumed."""
        w = parse(phrase)
        assert w.method is method
        assert not any(a.startswith("method") for a in w.assumed)
        assert w.ignored == ()

    def test_default_is_full_fine_tune_and_assumed(self) -> None:
        """With no method word the job is a full fine-tune, and the reply says so."""
        w = parse("")
        assert w.method is Method.FULL
        assert "method: full fine-tune (say `lora` or `qlora` to change)" in w.assumed

    def test_fine_tune_with_lora_stays_lora(self) -> None:
        """ "fine-tune with lora" is a LoRA fine-tune, in either order."""
        assert parse("fine-tune with lora").method is Method.LORA

    def test_four_bit_full_fine_tune_is_rejected(self) -> None:
        """NF4 weights cannot be fully fine-tuned, and the error says so."""
        assert "QLoRA" in rejected("13b full finetune nf4").message


class TestPrecision:
    @pytest.mark.parametrize(
        ("phrase", "precision"),
        [
            ("bf16", Precision.BF16_MIXED),
            ("fp16", Precision.FP16_MIXED),
            ("fp32", Precision.FP32),
            ("fp8", Precision.FP8_MIXED),
            ("pure bf16", Precision.BF16_TRUE),
            ("bf16-true", Precision.BF16_TRUE),
            ("mixed", Precision.BF16_MIXED),
            ("amp", Precision.BF16_MIXED),
            ("bf16 mixed", Precision.BF16_MIXED),
            ("fp16 mixed", Precision.FP16_MIXED),
        ],
    )
    def test_precision_words_on_full_fine_tune(self, phrase: str, precision: Precision) -> None:
        """On a full fine-tune, plain bf16/fp16 mean the mixed regime."""
        w = parse(f"full finetune {phrase}")
        assert w.precision is precision
        assert not any(a.startswith("precision") for a in w.assumed)

    @pytest.mark.parametrize(
        ("method", "precision"),
        [
            ("pretrain", Precision.BF16_MIXED),
            ("full finetune", Precision.BF16_MIXED),
            ("lora", Precision.BF16_TRUE),
            ("qlora", Precision.BF16_TRUE),
        ],
    )
    def test_default_precision_follows_the_method(self, method: str, precision: Precision) -> None:
        """Full training defaults to bf16 mixed; LoRA/QLoRA keep a pure bf16 base."""
        w = parse(method)
        assert w.precision is precision
        assert any(a.startswith(f"precision: {precision.label}") for a in w.assumed)

    def test_plain_bf16_on_lora_is_pure(self) -> None:
        """Plain bf16 on LoRA means a frozen pure-bf16 base."""
        assert parse("lora bf16").precision is Precision.BF16_TRUE


class TestOptimizer:
    @pytest.mark.parametrize(
        ("phrase", "optimizer"),
        [
            ("adamw", Optimizer.ADAMW),
            ("adam", Optimizer.ADAMW),
            ("8-bit adam", Optimizer.ADAMW_8BIT),
            ("adamw 8bit", Optimizer.ADAMW_8BIT),
            ("adam8bit", Optimizer.ADAMW_8BIT),
            ("paged adamw 8bit", Optimizer.ADAMW_8BIT),
            ("paged_adamw_8bit", Optimizer.ADAMW_8BIT),
            ("sgd", Optimizer.SGD),
            ("sgd momentum", Optimizer.SGD_MOMENTUM),
            ("adafactor", Optimizer.ADAFACTOR),
            ("lion", Optimizer.LION),
        ],
    )
    def test_optimizer_words(self, phrase: str, optimizer: Optimizer) -> None:
        """Each optimizer spelling selects its optimizer."""
        w = parse(phrase)
        assert w.optimizer is optimizer
        assert "optimizer: AdamW" not in w.assumed
        assert w.ignored == ()

    def test_default_is_adamw_and_assumed(self) -> None:
        """Without an optimizer word AdamW is used and recorded as assumed."""
        w = parse("")
        assert w.optimizer is Optimizer.ADAMW
        assert "optimizer: AdamW" in w.assumed


class TestSequenceAndBatch:
    @pytest.mark.parametrize(
        ("phrase", "seq"),
        [
            ("seq 4096", 4096),
            ("4k context", 4096),
            ("ctx 8192", 8192),
            ("context 32k", 32768),
            ("seq len 2048", 2048),
            ("8k seq", 8192),
            ("seq_len=1024", 1024),
        ],
    )
    def test_sequence_phrases(self, phrase: str, seq: int) -> None:
        """Sequence-length phrases set seq_len; "k" means ×1024."""
        w = parse(phrase)
        assert w.seq_len == seq
        assert w.ignored == ()
        assert not any(a.startswith("seq") for a in w.assumed)

    @pytest.mark.parametrize(
        ("phrase", "batch"),
        [("batch 4", 4), ("micro-batch 2", 2), ("mb 2", 2), ("bs 8", 8), ("bs=8", 8)],
    )
    def test_micro_batch_phrases(self, phrase: str, batch: int) -> None:
        """Batch phrases set the per-GPU micro-batch."""
        w = parse(phrase)
        assert w.micro_batch == batch
        assert "micro-batch 1" not in w.assumed

    def test_defaults_are_assumed(self) -> None:
        """Sequence 2048 and micro-batch 1 are defaults the reply shows."""
        w = parse("")
        assert (w.seq_len, w.micro_batch) == (2048, 1)
        assert "seq 2048 (say `seq 8k` to change)" in w.assumed
        assert "micro-batch 1" in w.assumed

    def test_global_batch_is_not_a_micro_batch(self) -> None:
        """A global batch size is not taken as the micro-batch; it is shown as read (#32)."""
        w = parse("global batch 512")
        assert w.micro_batch == 1
        assert any("global batch 512" in a for a in w.assumed)


class TestCheckpointing:
    @pytest.mark.parametrize(
        ("phrase", "value"),
        [
            ("grad checkpointing", True),
            ("gradient checkpointing", True),
            ("activation checkpointing", True),
            ("ac", True),
            ("no checkpointing", False),
            ("no ac", False),
            ("", None),
        ],
    )
    def test_checkpointing_phrases(self, phrase: str, value: bool | None) -> None:
        """Checkpointing is on, off, or left to the search when not mentioned."""
        assert parse(phrase).checkpointing is value


class TestShardingAndOffload:
    @pytest.mark.parametrize(
        ("phrase", "sharding"),
        [
            ("ddp", Sharding.DDP),
            ("zero1", Sharding.ZERO1),
            ("zero2", Sharding.ZERO2),
            ("zero3", Sharding.ZERO3),
            ("zero-3", Sharding.ZERO3),
            ("zero 2", Sharding.ZERO2),
            ("ZeRO-1", Sharding.ZERO1),
            ("fsdp", Sharding.FSDP),
            ("fsdp grad op", Sharding.FSDP_GRAD_OP),
            ("shard grad op", Sharding.FSDP_GRAD_OP),
            ("hsdp", Sharding.HSDP),
            ("hybrid shard", Sharding.HSDP),
        ],
    )
    def test_sharding_phrases(self, phrase: str, sharding: Sharding) -> None:
        """Each sharding phrase selects its strategy."""
        w = parse(phrase)
        assert w.sharding is sharding
        assert w.ignored == ()

    @pytest.mark.parametrize(
        ("phrase", "offload"),
        [
            ("cpu offload", Offload.OPTIMIZER),
            ("offload optimizer", Offload.OPTIMIZER),
            ("offload params", Offload.PARAMS),
            ("param offload", Offload.PARAMS),
        ],
    )
    def test_offload_phrases(self, phrase: str, offload: Offload) -> None:
        """Offload phrases choose optimizer-state or parameter offload."""
        assert parse(phrase).offload is offload

    def test_param_offload_implies_zero3(self) -> None:
        """Parameter offload without a sharding named uses ZeRO-3, and says so."""
        w = parse("offload params")
        assert w.sharding is Sharding.ZERO3
        assert any("ZeRO-3" in a for a in w.assumed)

    def test_param_offload_keeps_fsdp(self) -> None:
        """Parameter offload with FSDP keeps FSDP."""
        assert parse("fsdp offload params").sharding is Sharding.FSDP

    def test_param_offload_with_zero2_is_rejected(self) -> None:
        """Parameter offload with ZeRO-2 is impossible and raises a WorkloadError."""
        assert "ZeRO-3" in rejected("13b zero2 offload params").message


class TestLora:
    @pytest.mark.parametrize(("phrase", "rank"), [("r=64", 64), ("rank 64", 64), ("r 8", 8)])
    def test_rank(self, phrase: str, rank: int) -> None:
        """The LoRA rank phrases set lora_rank."""
        assert parse(f"lora {phrase}").lora_rank == rank

    @pytest.mark.parametrize(
        ("phrase", "targets"), [("lora on attention", "attention"), ("lora all linear", "all")]
    )
    def test_targets(self, phrase: str, targets: str) -> None:
        """Adapter targets are attention only or all linear layers."""
        assert parse(phrase).lora_targets == targets

    def test_lora_defaults_are_assumed(self) -> None:
        """A LoRA with no rank shows the default rank 16 as assumed."""
        w = parse("lora")
        assert w.lora_rank == 16
        assert any(a.startswith("LoRA rank 16") for a in w.assumed)


class TestSaversAndObjectives:
    @pytest.mark.parametrize(
        ("phrase", "field", "value"),
        [
            ("selective checkpointing", "selective_checkpointing", True),
            ("selective activation checkpointing", "selective_checkpointing", True),
            ("liger", "loss", "fused"),
            ("fused loss", "loss", "fused"),
            ("fused cross entropy", "loss", "fused"),
            ("chunked loss", "loss", "chunked"),
            ("chunked ce", "loss", "chunked"),
            ("optimizer in backward", "optimizer_in_backward", True),
            ("optimizer in bwd", "optimizer_in_backward", True),
            ("paged adamw 8bit", "paged_optimizer", True),
            ("PagedAdamW8bit", "paged_optimizer", True),
            ("torch.compile", "compile", True),
            ("compile", "compile", True),
            ("activation offloading", "activation_offload", True),
            ("activation offload", "activation_offload", True),
            ("offload activations", "activation_offload", True),
        ],
    )
    def test_saver_phrases(self, phrase: str, field: str, value: object) -> None:
        w = parse(phrase)
        assert getattr(w.savers, field) == value
        assert not w.ignored

    def test_selective_checkpointing_turns_checkpointing_on(self) -> None:
        assert parse("selective checkpointing").checkpointing is True

    @pytest.mark.parametrize("phrase", ["adamw8bit", "paged adamw 8bit", "adamw 8-bit"])
    def test_eight_bit_optimizers(self, phrase: str) -> None:
        assert parse(phrase).optimizer is Optimizer.ADAMW_8BIT

    def test_plain_adamw8bit_is_not_paged(self) -> None:
        assert not parse("adamw8bit").savers.paged_optimizer

    @pytest.mark.parametrize(
        ("phrase", "objective"),
        [
            ("dpo", "dpo"),
            ("ipo", "ipo"),
            ("kto", "kto"),
            ("orpo", "orpo"),
            ("simpo", "simpo"),
            ("ppo", "ppo"),
            ("rlhf", "ppo"),
            ("grpo", "grpo"),
            ("qlora dpo", "dpo"),
        ],
    )
    def test_objectives(self, phrase: str, objective: str) -> None:
        w = parse(phrase, model="llama-3-8b")
        assert w.objective == objective
        assert any(a.startswith(w.objective.label) for a in w.assumed)

    def test_lora_dpo_keeps_the_method(self) -> None:
        w = parse("lora dpo", model="llama-3-8b")
        assert w.method is Method.LORA
        assert w.objective == "dpo"

    def test_grpo_group_size(self) -> None:
        assert parse("grpo group 16", model="llama-3-8b").group_size == 16
        assert parse("grpo 4 completions per prompt", model="llama-3-8b").group_size == 4
