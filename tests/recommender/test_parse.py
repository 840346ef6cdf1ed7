"""``parse_workload``: free text → a validated Workload, with defaults and leftovers explicit."""

from __future__ import annotations

import contextlib
import time

import pytest

import recommender.parse as parse_module
from recommender import gpus, models
from recommender._scan import clean, tokenize
from recommender.errors import EXAMPLE, UnknownGpuError, WorkloadError
from recommender.models import lookup_model
from recommender.parse import parse_workload
from recommender.workload import (
    HardwareRequest,
    Method,
    Offload,
    Optimizer,
    Precision,
    Sharding,
    SpotPolicy,
    Workload,
)


def parse(extra: str, *, model: str = "13B") -> Workload:
    """Parse ``model`` followed by ``extra`` (every test phrase needs a model)."""
    return parse_workload(f"{model} {extra}".strip())


def rejected(text: str) -> WorkloadError:
    with pytest.raises(WorkloadError) as info:
        parse_workload(text)
    return info.value


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
        """A global batch size is not taken as the micro-batch; it is reported."""
        w = parse("global batch 512")
        assert w.micro_batch == 1
        assert "512" in w.ignored


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


class TestHardware:
    @pytest.mark.parametrize(
        ("phrase", "gpu", "count"),
        [
            ("on 8x H100", "H100-SXM-80GB", 8),
            ("on 1x A100-40GB", "A100-SXM-40GB", 1),
            ("8xA100 80GB", "A100-SXM-80GB", 8),
            ("8 x h100", "H100-SXM-80GB", 8),
            ("on 4 L40S", "L40S", 4),
            ("2 gpus", None, 2),
            ("single gpu", None, 1),
            ("one gpu", None, 1),
            ("on H100", "H100-SXM-80GB", None),
            ("on an RTX 4090", "RTX-4090", 1),
        ],
    )
    def test_hardware_phrases(self, phrase: str, gpu: str | None, count: int | None) -> None:
        """Hardware phrases give a GPU id (via gpus.normalize) and/or a count."""
        w = parse(phrase)
        assert w.hardware == HardwareRequest(gpu_id=gpu, count=count)
        assert w.ignored == ()

    def test_no_hardware_phrase_leaves_it_open(self) -> None:
        """Without a hardware phrase any hardware may be recommended."""
        assert parse("lora").hardware is None

    @pytest.mark.parametrize("phrase", ["on 8x H900", "8xZ9000", "on 4x tpu"])
    def test_unknown_gpu_raises(self, phrase: str) -> None:
        """An unknown accelerator in a hardware phrase raises UnknownGpuError."""
        with pytest.raises(UnknownGpuError) as info:
            parse(phrase)
        assert isinstance(info.value, WorkloadError)
        assert info.value.not_understood


class TestDurationTokensBudget:
    @pytest.mark.parametrize(
        ("phrase", "hours"),
        [
            ("2 days", 48.0),
            ("36h", 36.0),
            ("90 min", 1.5),
            ("1 week", 168.0),
            ("for 3 hours", 3.0),
            ("1.5 days", 36.0),
            ("a day", 24.0),
        ],
    )
    def test_durations(self, phrase: str, hours: float) -> None:
        """Durations convert to hours."""
        w = parse(phrase)
        assert w.duration_hours == pytest.approx(hours)
        assert w.ignored == ()

    @pytest.mark.parametrize(
        ("phrase", "tokens"),
        [("on 2B tokens", 2e9), ("1T tokens", 1e12), ("500M tokens", 5e8)],
    )
    def test_token_budgets(self, phrase: str, tokens: float) -> None:
        """Token budgets convert to a token count."""
        assert parse(phrase).tokens == tokens

    @pytest.mark.parametrize(
        ("phrase", "usd"),
        [
            ("$500", 500.0),
            ("budget 2k", 2000.0),
            ("under $3,000", 3000.0),
            ("$3k", 3000.0),
            ("3000 usd", 3000.0),
            ("$1.2M", 1.2e6),
            ("we have 2k", 2000.0),
        ],
    )
    def test_budgets(self, phrase: str, usd: float) -> None:
        """Money phrases set the budget in USD."""
        w = parse(phrase)
        assert w.budget_usd == pytest.approx(usd)
        assert w.ignored == ()

    def test_bare_k_is_not_money(self) -> None:
        """ "4k context" is a sequence length, not money."""
        w = parse("4k context")
        assert (w.budget_usd, w.seq_len) == (None, 4096)


class TestSpotProvidersRegions:
    @pytest.mark.parametrize(
        ("phrase", "spot"),
        [
            ("spot ok", SpotPolicy.ALLOW),
            ("spot", SpotPolicy.ALLOW),
            ("preemptible ok", SpotPolicy.ALLOW),
            ("spot only", SpotPolicy.ONLY),
            ("no spot", SpotPolicy.NEVER),
            ("on-demand only", SpotPolicy.NEVER),
            ("on demand", SpotPolicy.NEVER),
            ("can't be interrupted", SpotPolicy.NEVER),
            ("can’t be interrupted", SpotPolicy.NEVER),
        ],
    )
    def test_spot_phrases(self, phrase: str, spot: SpotPolicy) -> None:
        """Spot phrases set the spot policy."""
        w = parse(phrase)
        assert w.spot is spot
        assert w.ignored == ()

    def test_spot_default_is_allow_and_assumed(self) -> None:
        """Without a spot phrase spot is allowed, and the reply says so."""
        w = parse("")
        assert w.spot is SpotPolicy.ALLOW
        assert any(a.startswith("spot allowed") for a in w.assumed)

    @pytest.mark.parametrize(
        ("phrase", "providers"),
        [
            ("aws only", {"aws"}),
            ("on lambda", {"lambda"}),
            ("gcp", {"gcp"}),
            ("runpod", {"runpod"}),
            ("nebius", {"nebius"}),
            ("azure", {"azure"}),
            ("vast", {"vast"}),
            ("vast.ai", {"vast"}),
            ("coreweave", {"coreweave"}),
            ("oracle", {"oci"}),
            ("paperspace", {"paperspace"}),
            ("fluidstack", {"fluidstack"}),
            ("datacrunch", {"datacrunch", "verda"}),
            ("tensordock", {"tensordock"}),
            ("crusoe", {"crusoe"}),
            ("aws or gcp", {"aws", "gcp"}),
        ],
    )
    def test_provider_phrases(self, phrase: str, providers: set[str]) -> None:
        """Provider names become lower-case canonical provider ids."""
        w = parse(phrase)
        assert w.providers == frozenset(providers)
        assert w.ignored == ()

    def test_excluding_a_provider_keeps_the_others(self) -> None:
        """ "no aws" allows every known provider except AWS."""
        w = parse("no aws")
        assert "aws" not in w.providers
        assert {"gcp", "lambda", "runpod"} <= w.providers

    @pytest.mark.parametrize(
        ("phrase", "prefixes"),
        [
            ("in us-east", ("us-east", "eastus")),
            ("in us", ("us",)),
            ("US", ("us",)),
            ("eu", ("eu", "europe")),
            ("europe", ("eu", "europe")),
            ("asia", ("ap", "asia")),
            ("in europe-west4", ("europe-west4",)),
        ],
    )
    def test_region_phrases(self, phrase: str, prefixes: tuple[str, ...]) -> None:
        """Region words become lower-case region prefixes in every provider's spelling."""
        w = parse(phrase)
        assert set(prefixes) <= set(w.regions)
        assert w.ignored == ()

    def test_lower_case_us_is_the_pronoun(self) -> None:
        """ "can you help us" does not restrict the region."""
        assert parse("can you help us").regions == ()


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


class TestLeftovers:
    def test_fillers_are_silent(self) -> None:
        """Chat noise and glue words are consumed without being reported."""
        w = parse_workload("hey @gpufit please, can we train the 13b model with a job?")
        assert w.ignored == ()

    def test_slack_mentions_are_silent(self) -> None:
        """Slack user mentions and channel pings are not workload words."""
        assert parse_workload("<@U123ABC> <!channel> 13b lora").ignored == ()

    def test_unknown_words_are_reported_in_order_once(self) -> None:
        """Words nothing understood are reported in order, each once."""
        w = parse_workload("13b banana lora banana kiwi")
        assert w.ignored == ("banana", "kiwi")

    def test_negation_is_never_silent(self) -> None:
        """A negation no rule understood is reported rather than dropped."""
        assert "no" in parse("no banana").ignored

    def test_escaped_entities_are_unescaped(self) -> None:
        """Slack's &amp;/&lt;/&gt; escapes are undone before parsing."""
        w = parse_workload("13b lora &amp; fsdp &lt;2 days&gt;")
        assert (w.method, w.sharding, w.duration_hours) == (Method.LORA, Sharding.FSDP, 48.0)
        assert w.ignored == ()


class TestTokens:
    @pytest.mark.parametrize(
        ("text", "norm"),
        [
            ("Fine_Tune", ("fine-tune",)),  # case-folded, "_" read as "-"
            ("fine—tune 8×H100", ("fine-tune", "8xh100")),  # dashes and the multiplication sign
            ("ｌｏｒａ １３Ｂ ﬁne-tune", ("lora", "13b", "fine-tune")),  # NFKC
            ("Straße", ("strasse",)),  # case folding, not lower()
            ("2,000,000 tokens", ("2000000", "tokens")),  # digit-group commas
            ("7b, lora; (fsdp)", ("7b", "lora", "fsdp")),  # punctuation splits and trims
            ("-5 days .5 h", ("-5", "days", ".5", "h")),  # a number keeps its sign and point
        ],
    )
    def test_tokens_are_normalised_for_matching(self, text: str, norm: tuple[str, ...]) -> None:
        """Each token is matched in a normalised form; the form typed is what is reported."""
        assert tokenize(clean(text)).norm == norm


class TestRejections:
    @pytest.mark.parametrize("text", ["", "   ", "\n\t", "?!", "<@U123>"])
    def test_empty_input(self, text: str) -> None:
        """Empty or punctuation-only input raises a WorkloadError with an example."""
        assert EXAMPLE in rejected(text).user_text()

    def test_no_model_lists_what_was_not_understood(self) -> None:
        """Input without a model raises with the words not understood and an example."""
        err = rejected("lora banana 2 days")
        assert err.not_understood == ("banana",)
        assert "banana" in err.message
        assert EXAMPLE in err.user_text()

    @pytest.mark.parametrize(
        "text",
        [
            "13b -5 days",
            "13b 0 hours",
            "13b seq 0",
            "13b seq 1.5",
            "13b 0 gpus",
            "13b on 0x H100",
            "13b on 5000x H100",
            "1e400 params",
            "0.0001b",
            "99999t",
            "13b $-5",
            "13b $0",
            "13b $2b",
            "13b batch 0",
            "13b lora r=0",
            "13b on 0 tokens",
            "13b 1e400 days",
            "13b 500 days",
        ],
    )
    def test_out_of_range_values(self, text: str) -> None:
        """Out-of-range values raise WorkloadError naming the phrase, never ValueError."""
        err = rejected(text)
        assert err.not_understood
        assert err.message.endswith(".")

    def test_too_long(self) -> None:
        """Input beyond the length cap is refused with a WorkloadError."""
        assert "characters" in rejected("13b " * 600).message


class TestLongDigitRuns:
    """A run of digits costs time in proportion to its length. (Looking a word up as a GPU
    name once took time quadratic in its digits: a 2,000-digit question held the event loop
    for ~80 ms.) Checked far beyond MAX_CHARS, where a quadratic step takes minutes and a
    linear one a fraction of a second."""

    @pytest.mark.parametrize(
        "template",
        ["{}", "13b {}", "13b 8x{}a", "13b on {}a", "13b {}gb", "13b ${}", "13b seq {}k",
         "llama {}b", "13b a{}", "13b {}-{}"],
    )  # fmt: skip
    def test_parse_time_is_linear_in_the_digits(
        self, template: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(parse_module, "MAX_CHARS", 1_000_000)
        gpus.try_normalize.cache_clear()  # a first sight, as an attacker's new number is
        models.lookup_model.cache_clear()
        text = template.format(*["1" + "9" * 40_000] * template.count("{}"))
        start = time.perf_counter()
        with contextlib.suppress(WorkloadError):  # most of these numbers are out of range
            parse_workload(text)
        assert time.perf_counter() - start < 3.0


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

    def test_a_size_the_family_never_had_is_inferred_and_the_word_reported(self) -> None:
        """`llama 33b` has no known model: the size is inferred and `llama` is reported."""
        w = parse_workload("llama 33b")
        assert not w.model.known
        assert "llama" in w.ignored


class TestBudgetWordOrder:
    @pytest.mark.parametrize(
        "text", ["$5k budget 13B lora", "13B lora $5k budget", "13B lora budget $5,000"]
    )
    def test_budget_before_or_after_the_amount(self, text: str) -> None:
        """`$5k budget` and `budget $5,000` set the budget; a size after it stays a size."""
        w = parse_workload(text)
        assert w.budget_usd == 5000
        assert w.model.params == 13e9
        assert "budget" not in w.ignored

    def test_budget_followed_by_a_size_is_not_money(self) -> None:
        """`budget 13B` without a dollar sign is a model size, not a $13B budget."""
        w = parse_workload("budget 13B lora")
        assert w.budget_usd is None
        assert w.model.params == 13e9
