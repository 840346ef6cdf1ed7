"""Work in the units people state it (issue #35 item 3): each unit becomes tokens, and each
step of the arithmetic is stated in the answer."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from recommender.errors import WorkloadError
from recommender.models import lookup_model
from recommender.parsing._datasets import DATASETS
from recommender.parsing._rules_work import audio_positions_per_second, image_positions
from recommender.parsing.parse import parse_workload
from recommender.pricing.fx import to_usd
from recommender.workload import Workload

NOW = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)  # a Monday


def parse(text: str) -> Workload:
    return parse_workload(text, now=NOW)


def said(w: Workload) -> str:
    return " | ".join(w.assumed)


class TestSteps:
    def test_steps_at_a_bare_batch_are_steps_times_the_global_batch_times_seq(self) -> None:
        w = parse("qwen2.5-7b sft 1000 steps at batch 64, seq 4096")
        assert w.tokens == 1000 * 64 * 4096
        assert w.micro_batch == 1  # "batch 64" is not 64 sequences on one GPU
        assert "64 (the global batch) per step" in said(w)

    def test_a_bare_batch_beside_steps_is_read_as_the_global_batch_and_said(self) -> None:
        w = parse("llama-3-8b lora, 500 steps, batch size 32, max_seq_length 2048")
        assert w.tokens == 500 * 32 * 2048
        assert w.micro_batch == 1
        assert "read 'batch 32' as the global batch" in said(w)

    def test_per_device_batch_times_accumulation_times_gpus(self) -> None:
        w = parse(
            "mistral-7b lora, max_steps=1500, per_device_train_batch_size=4, "
            "gradient_accumulation_steps=8, 8 gpus, max_seq_length=2048"
        )
        assert w.tokens == 1500 * 4 * 8 * 8 * 2048
        assert w.micro_batch == 4

    def test_tokens_per_step(self) -> None:
        assert parse("mistral-7b pretrain 10k iterations at 1M tokens per step").tokens == 1e10

    def test_a_batch_of_sequences_of_a_length(self) -> None:
        w = parse("llama-3-8b 1000 steps at global batch 1024 of 2048-token sequences")
        assert w.tokens == 1000 * 1024 * 2048


class TestPairsAndPrompts:
    def test_preference_pairs_train_chosen_and_rejected(self) -> None:
        w = parse("orpo llama-3-8b over 30k preference pairs at 2048 tokens")
        assert w.tokens == 30_000 * 2 * 2048
        assert "chosen + rejected" in said(w)

    def test_prompts_times_samples_times_prompt_and_completion(self) -> None:
        w = parse(
            "grpo qwen2.5-7b 5000 prompts with 8 samples each, max completion length 1024, "
            "max prompt length 512"
        )
        assert (w.group_size, w.completion_len) == (8, 1024)
        assert w.tokens == 5000 * 8 * (1024 + 512)

    def test_a_length_after_prompts_that_names_responses_is_the_completion(self) -> None:
        w = parse("ppo llama-3-8b, 10k prompts, 512 token responses")
        assert w.completion_len == 512


class TestAudio:
    def test_hours_of_audio_are_data_not_a_run_length(self) -> None:
        """Issue #35: "1000 hours of audio" became a 1000-hour run."""
        w = parse("fine-tune whisper-large-v3 on 1000 hours of audio")
        assert w.duration_hours is None
        assert w.tokens == 1000 * 3600 * 50  # 50 encoder positions a second
        assert "50 positions/s" in said(w)

    def test_hours_of_audio_beside_a_run_length(self) -> None:
        w = parse("whisper-small on 12 hours of audio within 6 hours")
        assert (w.duration_hours, w.tokens) == (6, 12 * 3600 * 50)

    def test_audio_needs_a_speech_model(self) -> None:
        with pytest.raises(WorkloadError, match="not a speech model"):
            parse("llama-3-8b on 100 hours of audio")

    def test_the_rate_is_the_models(self) -> None:
        whisper, llama = lookup_model("whisper-small"), lookup_model("llama-3-8b")
        assert whisper is not None
        assert llama is not None
        assert audio_positions_per_second(whisper) == 50
        assert audio_positions_per_second(llama) is None


class TestImages:
    @pytest.mark.parametrize(
        ("text", "per_image"),
        [
            ("vit-base on 1.2M images at 224x224", 197),
            ("ViT-L/16 on 500k images at 384px resolution", 577),
            ("fine-tune vit-huge on 100k 224x224 images", 257),
            ("vit-base on 100k images, 384x384", 577),
            ("ViT-B/16 on 300k product photos at 224px", 197),
        ],
    )
    def test_images_times_patches(self, text: str, per_image: int) -> None:
        w = parse(text)
        assert w.tokens is not None
        count = w.tokens / per_image
        assert count in (1.2e6, 5e5, 1e5, 3e5)

    def test_a_gpu_count_is_not_a_resolution(self) -> None:
        w = parse("vit-base on 100k images 16x4090")
        assert w.hardware is not None
        assert w.hardware.count == 16

    def test_patches_from_the_name(self) -> None:
        vit = lookup_model("vit-huge")
        assert vit is not None
        assert image_positions(vit, 224, 224) == 16 * 16 + 1


class TestDatasets:
    @pytest.mark.parametrize(
        ("text", "tokens"),
        [
            ("pretrain a 1b model on all of FineWeb-Edu", 1.3e12),
            ("350m from scratch on the whole of SlimPajama", 627e9),
            ("train 760m on the pile", 300e9),
            ("llama-3-8b full finetune on the whole of Alpaca, 3 epochs", 52_002 * 1024 * 3),
            ("whisper-small on LibriSpeech (all 960 hours)", 960 * 3600 * 50),
            ("dpo llama-3-8b on the full UltraFeedback binarized set", 61_135 * 2 * 1024),
        ],
    )
    def test_the_whole_of_a_dataset(self, text: str, tokens: float) -> None:
        w = parse(text)
        assert w.tokens == pytest.approx(tokens)
        assert "huggingface.co" in said(w) or "et al." in said(w) or "openslr" in said(w)

    def test_an_unknown_dataset_is_asked_about(self) -> None:
        with pytest.raises(WorkloadError, match="don't know the dataset") as err:
            parse("llama-3-8b full finetune on the whole of my-private-corpus")
        assert err.value.not_understood == ("my-private-corpus",)

    def test_math_the_word_is_not_the_dataset(self) -> None:
        w = parse("qwen2.5-7b grpo on math reasoning, 2 days")
        assert w.tokens is None
        assert "math" in w.ignored

    def test_every_dataset_has_a_size_and_a_source(self) -> None:
        assert len(DATASETS) >= 19
        for dataset in DATASETS:
            assert dataset.size > 0
            assert dataset.source


class TestChineseNumerals:
    @pytest.mark.parametrize(
        ("text", "amount"),
        [("预算十万人民币", 100_000), ("预算两万五千元", 25_000), ("预算五十万元", 500_000)],
    )
    def test_sections_multiply(self, text: str, amount: float) -> None:
        from recommender.pricing.fx import to_usd

        w = parse(f"qwen2.5-7b lora {text}")
        assert w.budget_usd == pytest.approx(to_usd(amount, "CNY"))


class TestHowTeamsWriteIt:
    """Phrasings from the fourth held-out set's first measurement (52 of 61 read as meant)."""

    @pytest.mark.parametrize(
        ("text", "tokens"),
        [
            ("qwen2.5-7b sft: 80k samples, avg length 1.5k tokens, 2 epochs", 80e3 * 1536 * 2),
            ("llama-3-8b lora on 250k support tickets, each about 600 tokens", 250e3 * 600),
            ("whisper-small 微调 500小时音频", 500 * 3600 * 50),
            ("llama-3-8b sft 2000 steps of 64 x 4096 tokens", 2000 * 64 * 4096),
            ("llama-3-8b grpo group size 16 on 4k math problems, 1024-token completions", None),
        ],
    )
    def test_read_as_meant(self, text: str, tokens: float | None) -> None:
        w = parse(text)
        if tokens is not None:
            assert w.tokens == pytest.approx(tokens)
        assert w.duration_hours is None
        assert w.ignored == ()

    def test_a_batch_of_prompts_per_step(self) -> None:
        w = parse(
            "GRPO qwen2.5-7b: batch of 128 prompts per step, 8 generations each, 300 steps, "
            "1024 max completion tokens"
        )
        assert w.completion_len == 1024
        assert w.tokens == 300 * 128 * 8 * (1024 + 256)

    def test_chinese_preference_pairs(self) -> None:
        w = parse("用qwen2.5-7b做DPO，3万对偏好数据，2轮")
        assert w.tokens == 30_000 * 2 * 1024 * 2

    def test_a_short_typo_of_days(self) -> None:
        assert parse("13b lora 2 dys").duration_hours == 48


class TestFifthSet:
    """Phrasings from the fifth held-out set's first measurement (54 of 61 read as meant)."""

    def test_g_is_the_group_and_a_singular_completion_its_length(self) -> None:
        w = parse("grpo qwen2.5-7b, 6k prompts, G=8, 1k completion")
        assert (w.group_size, w.completion_len) == (8, 1024)

    def test_images_at_a_bare_side(self) -> None:
        assert parse("vit-base on 60k images at 224, 30 epochs").tokens == 60e3 * 197 * 30

    def test_a_descriptive_word_with_digits(self) -> None:
        w = parse("sft qwen2.5-1.5b on 25k gsm8k-style problems, 400 tokens each")
        assert w.tokens == 25e3 * 400

    @pytest.mark.parametrize(("text", "amount"), [("预算 1万块", 10_000), ("预算 3千块", 3_000)])
    def test_kuai_after_a_magnitude_is_yuan_not_cards(self, text: str, amount: float) -> None:
        from recommender.pricing.fx import to_usd

        w = parse(f"mistral-7b 微调 {text}")
        assert w.budget_usd == pytest.approx(to_usd(amount, "CNY"))
        assert w.hardware is None


class TestSixthSet:
    """Phrasings from the sixth held-out set's first measurement (58 of 61 read as meant)."""

    def test_steps_times_sequences_times_tokens(self) -> None:
        w = parse("llama-3-8b, 2k steps × 128 sequences × 2048 tokens")
        assert w.tokens == 2000 * 128 * 2048

    def test_tokens_slash_step(self) -> None:
        assert parse("mistral-7b pretrain 3000 steps, 4M tokens/step").tokens == 1.2e10

    def test_rollouts_slash_prompt(self) -> None:
        assert parse("grpo llama-3.1-8b, 16 rollouts/prompt, 2k prompts").group_size == 16

    def test_steps_beside_a_dataset_are_said_unused(self) -> None:
        """The dataset size counts the work; the steps are not dropped in silence."""
        w = parse("llama-3-8b lora 500 steps over 10k samples of 512 tokens")
        assert w.tokens == 10_000 * 512
        assert "500 steps read; the work is counted from the dataset size" in said(w)

    def test_tokens_per_step_without_steps_are_said_unused(self) -> None:
        w = parse("llama-3-8b lora 4M tokens per step")
        assert w.tokens is None
        assert "tokens per step: not used, say how many steps" in said(w)


class TestChainsAndUnits:
    """Held-out set 7's misreads, each a general form (issue #35 item 6)."""

    def test_audio_in_any_time_unit_is_data_and_a_preposition_ends_the_phrase(self) -> None:
        w = parse("whisper-small, 3 days of audio, 5 epochs")
        assert w.tokens == 72 * 3600 * 50 * 5
        assert w.duration_hours is None
        assert parse("whisper-small on 90 minutes of speech").tokens == 1.5 * 3600 * 50
        # "10 hours of training on audio" is a run length, not ten hours of data
        w = parse("whisper-small 10 hours of training on 50 hours of audio")
        assert (w.duration_hours, w.tokens) == (10, 50 * 3600 * 50)

    def test_prompts_times_samples_times_length_is_a_rollout_chain(self) -> None:
        w = parse("grpo llama-3.2-3b-instruct, 4k prompts × 8 samples × 1k tokens")
        assert (w.group_size, w.completion_len) == (8, 1024)
        assert w.tokens == 4000 * 8 * (256 + 1024)  # 256: the prompt length assumed

    @pytest.mark.parametrize(
        ("text", "tokens"),
        [
            ("llama-3-8b lora 40k samples × 2048 seq × 3 epochs", 40_000 * 2048 * 3),
            ("llama-3-8b lora 10k samples 4096 ctx", 10_000 * 4096),
            ("llama-3-8b lora 10k samples of 4k context length", 10_000 * 4096),
        ],
    )
    def test_samples_at_a_sequence_length_are_that_long(self, text: str, tokens: int) -> None:
        w = parse(text)
        assert w.tokens == tokens
        assert "tokens (as given)" in said(w)

    def test_tokens_per_epoch_times_epochs(self) -> None:
        assert parse("qwen3 8b lora, 2.5M tokens/epoch, 4 epochs").tokens == 10e6
        assert parse("qwen3 8b lora, 2.5M tokens an epoch, 2 epochs").tokens == 5e6

    def test_a_context_suffix_is_part_of_a_name_only_when_joined_to_it(self) -> None:
        w = parse("grpo llama-3.2-3b-instruct 4k prompts")
        assert w.model.name == "Llama 3.2 3B"
        assert "4k prompts" in [p.text for p in w.phrases]
        assert parse("phi-3-mini-4k-instruct lora 1B tokens").model.name == "Phi-3 mini"

    def test_q_and_a_pairs_are_examples_not_preference_pairs(self) -> None:
        w = parse("fine tune llama 3.3 70b on 12k legal q&a pairs w/ qlora")
        assert w.tokens == 12_000 * 1024
        assert w.objective.value == "sft"
        assert w.ignored == ()


class TestHeldOutEightForms:
    """General forms behind held-out set 8's misreads (issue #35 item 6)."""

    @pytest.mark.parametrize(
        ("text", "tokens"),
        [
            ("bert-base on 10M sentences, seq 128, 3 epochs", 10e6 * 128 * 3),
            ("qwen2.5-vl-7b lora on 200k screenshots", None),
            ("llama-3-8b lora 30k rows, avg 2k tokens/row", 30_000 * 2048),
            ("llama-3-8b lora 30k rows of 600 tokens/sample", 30_000 * 600),
            ("8b dpo on 60k prefs", 60_000 * 2 * 1024),  # chosen + rejected
        ],
    )
    def test_data_nouns_and_lengths_per_slash(self, text: str, tokens: float | None) -> None:
        w = parse(text)
        assert w.ignored == ()
        if tokens is not None:
            assert w.tokens == pytest.approx(tokens)

    @pytest.mark.parametrize(
        "text",
        [
            "whisper medium fine-tune 2,000 hours german speech",
            "whisper medium 微调 2000小时 中文语音",
        ],
    )
    def test_audio_described_without_of(self, text: str) -> None:
        assert parse(text).tokens == 2000 * 3600 * 50

    @pytest.mark.parametrize(
        "text",
        [
            "grpo qwen3-4b, 5000 prompts, 8 rollouts each, max 1024 new tokens",
            "Qwen3-4B做GRPO，5千个prompt，每个prompt采样8次，最长生成1024 tokens",
        ],
    )
    def test_group_and_completion_length_in_other_words(self, text: str) -> None:
        w = parse(text)
        assert (w.group_size, w.completion_len) == (8, 1024)
        assert w.tokens == 5000 * 8 * (256 + 1024)


class TestHeldOutNineForms:
    """General forms behind held-out set 9's misreads (issue #35 item 6)."""

    @pytest.mark.parametrize(
        ("text", "tokens"),
        [
            ("qwen2.5-7b continued pretraining on 30B domain tokens", 30e9),
            ("pretrain 1.5b, 100B tok", 100e9),
            ("用8卡A100全参微调llama-3.1-8b，10亿token", 1e9),
            ("llama-3-8b qlora on half a billion tokens", 5e8),
            ("llama-3-8b lora on 2.5 bilion tokens", 2.5e9),  # a typo of the magnitude, still
        ],
    )
    def test_token_phrasings(self, text: str, tokens: float) -> None:
        w = parse(text)
        assert w.tokens == pytest.approx(tokens)
        assert w.ignored == ()

    def test_hours_after_on_are_a_speech_models_data_and_anothers_run_length(self) -> None:
        w = parse("wav2vec2-large-lv60 on 1000h")
        assert (w.tokens, w.duration_hours) == (pytest.approx(1000 * 3600 * 50), None)
        assert parse("llama-3-8b lora 1B tokens on 10h").duration_hours == 10

    def test_lengths_said_after_the_number_and_an_encoder_decoders_input(self) -> None:
        assert parse("llama-3.1-70b dpo 20k pairs, 2048 max length").seq_len == 2048
        w = parse("t5-large finetune 500k examples, input 512 target 128")
        assert w.seq_len == 512
        assert "read 'target 128'" in said(w)

    def test_pics_are_images(self) -> None:
        assert parse("flux dev lora training 20 pics").ignored == ()


class TestHeldOutTenForms:
    """General forms behind held-out set 10's misreads (issue #35 item 6)."""

    def test_group_and_completion_said_shortly(self) -> None:
        w = parse("grpo qwen2.5-1.5b on 2k prompts, 16 gens per prompt, 512 max completion")
        assert (w.group_size, w.completion_len) == (16, 512)
        w = parse("GRPO训练qwen2.5-3b，8000条数学题，每题生成16个答案")
        assert w.group_size == 16

    def test_hours_of_a_named_speech_corpus_are_those_hours(self) -> None:
        assert parse("wav2vec2-base finetune 100 hours librispeech clean").tokens == (
            100 * 3600 * 50
        )

    def test_a_vit_named_at_a_resolution_counts_its_patches_there(self) -> None:
        w = parse("vit-base-patch16-384 finetune on 200k images, 20 epochs")
        assert w.model.name == "ViT-B/16"
        assert w.tokens == 200_000 * ((384 // 16) ** 2 + 1) * 20

    def test_a_million_steps_at_a_batch_with_no_preposition(self) -> None:
        w = parse("bert-large pretraining 1M steps batch 256 seq 512")
        assert w.tokens == 1e6 * 256 * 512
        assert "read 'batch 256' as the global batch" in said(w)

    def test_a_size_before_a_family_word_names_the_model(self) -> None:
        assert parse("train 124M gpt-2 from scratch on 1B tokens").model.name == "GPT-2"

    def test_a_corpus_named_after_a_token_count_is_their_source(self) -> None:
        w = parse("train 124M gpt-2 from scratch, 10B tokens fineweb-edu")
        assert w.tokens == 10e9
        assert w.ignored == ()
        assert "FineWeb-Edu: read as the source of the 10,000,000,000 tokens stated" in said(w)

    def test_responses_are_examples(self) -> None:
        assert parse("kto mistral 7b 25k good/bad labeled responses").tokens == 25_000 * 1024


class TestHeldOutElevenForms:
    def test_selfies_are_images_and_a_sized_model_word(self) -> None:
        assert parse("flux.1 dev lora on 25 selfies").ignored == ()
        assert parse("pretrain a 3B-model on 300B tokens").model.params == pytest.approx(
            3e9, rel=0.1
        )

    def test_overnite(self) -> None:
        assert parse("llama-2-7b lora 20M tokens overnite").duration_hours == 12


class TestHeldOutTwelveForms:
    def test_a_mistyped_magnitude_is_not_a_describing_word(self) -> None:
        assert parse("qwen2.5-7b lora 5 milion samples x 200 tokens").tokens == 5e6 * 200

    def test_token_singular_before_a_word_it_does_not_describe(self) -> None:
        assert parse("预算3000美元，llama-3-8b全参微调，5亿token，按需实例").tokens == 5e8
        assert parse("llama-3-8b lora on 4k samples of 512 token length").tokens == 4000 * 512

    def test_chinese_average_length_questions_and_answers_per_question(self) -> None:
        w = parse("qwen2.5-14b lora 微调，8万条样本，平均800 tokens，3轮，本周五前")
        assert (w.tokens, w.duration_hours) == (80_000 * 800 * 3, 110)
        w = parse("GRPO微调qwen2.5-7b，5000个问题，每个问题8个回答，最大长度1024")
        assert (w.group_size, w.seq_len) == (8, 1024)

    def test_end_of_next_week(self) -> None:
        assert parse("13b qlora 80M tokens, need it by end of next week").duration_hours == 278


class TestHeldOutThirteenForms:
    def test_outputs_and_shots(self) -> None:
        assert parse("kto qwen2.5-3b full on 40k labeled outputs").tokens == 40_000 * 1024
        assert parse("flux1-dev lora, 30 product shots").ignored == ()

    def test_a_range_of_time_is_its_upper_end_and_said(self) -> None:
        w = parse("7b qlora 5M tokens in 2-3 hours")
        assert w.duration_hours == 3
        assert "read 'in 2-3 hours' as its upper end, 3 h" in said(w)

    def test_a_chinese_article_before_a_size(self) -> None:
        w = parse("用16张A800预训练一个3B模型，3000亿tokens")
        assert w.model.params == pytest.approx(3e9, rel=0.1)
        assert w.tokens == 3e11


class TestHeldOutFourteenForms:
    def test_bare_hours_for_a_speech_model_are_its_data_and_said(self) -> None:
        w = parse("hubert-large finetune 100h, 2x A100")
        assert (w.tokens, w.duration_hours) == (100 * 3600 * 50, None)
        assert "read '100h' as hours of audio for HuBERT large" in said(w)
        # a run length said as one stays one
        assert parse("whisper-small lora 12 hours max").duration_hours == 12
        w = parse("whisper-small lora on 200 hours of audio, 12 hours")
        assert (w.tokens, w.duration_hours) == (200 * 3600 * 50, 12)

    def test_steps_per_epoch_times_the_epochs(self) -> None:
        w = parse("llama-3-8b sft 2 epochs, 800 steps per epoch at batch 128, 2048 seq")
        assert w.tokens == 2 * 800 * 128 * 2048
        assert "800 steps per epoch × 2 epochs" in said(w)

    def test_chinese_single_card_and_a_longer_description_of_the_audio(self) -> None:
        w = parse("qwen2.5-7b lora，1万条数据，每条2k tokens，单卡4090能跑吗")
        assert w.hardware is not None
        assert (w.hardware.gpu_id, w.hardware.count) == ("RTX-4090", 1)
        assert parse("whisper-large-v3 微调，2000小时普通话语音").tokens == 2000 * 3600 * 50


class TestHeldOutFifteenForms:
    def test_charts_are_images_and_a_7b_llama_is_llama(self) -> None:
        assert parse("internvl2-2b full ft, 100k charts").ignored == ()
        assert parse("training a 7B llama from scratch, 2T tokens").model.name == "Llama 2 7B"

    @pytest.mark.parametrize(("text", "tokens"), [("3*10^8 tokens", 3e8), ("10^9 tokens", 1e9)])
    def test_powers_of_ten(self, text: str, tokens: float) -> None:
        assert parse(f"llama-3-8b lora {text}").tokens == tokens

    def test_kuai_after_budget_is_yuan(self) -> None:
        w = parse("8b lora 100M tokens, 预算5000块")
        assert w.budget_usd == pytest.approx(to_usd(5000, "CNY"))
        assert parse("用两块A100训练llama 8b").hardware is not None


class TestHeldOutSixteenForms:
    def test_at_a_side_for_an_image_model_and_not_for_another(self) -> None:
        assert parse("vit-l/14 at 224, 5M images, 2 epochs").tokens == 5e6 * 257 * 2
        assert parse("llama 8b lora at 512 tokens each 10k samples").tokens == 10_000 * 512

    def test_a_dgx_is_an_8_gpu_node(self) -> None:
        w = parse("70b qlora 20M tokens, we have a DGX H100")
        assert w.owned
        assert w.hardware is not None
        assert (w.hardware.gpu_id, w.hardware.count) == ("H100-SXM-80GB", 8)

    def test_chinese_problems_and_generation_length(self) -> None:
        w = parse("GRPO训练qwen2.5-1.5b，2000道题，每题采样16次，生成长度512")
        assert (w.group_size, w.completion_len) == (16, 512)
        assert w.tokens == 2000 * 16 * (256 + 512)


class TestHeldOutSeventeenForms:
    def test_a_mistyped_dashed_model_name_is_corrected_and_said(self) -> None:
        w = parse("lama-3.1-8b lora 200M tokens")
        assert w.model.name == "Llama 3.1 8B"
        assert "read 'lama-3.1-8b' as Llama 3.1 8B" in said(w)

    def test_the_currency_after_the_budget_word_and_issues_and_eow_and_our(self) -> None:
        assert parse("8b lora 100M tokens, ¥20000 budget (CNY)").budget_usd == pytest.approx(
            to_usd(20000, "CNY")
        )
        assert parse("code llama 13b lora on 50k github issues").tokens == 50_000 * 1024
        assert parse("13b lora 200M tokens, by eow").duration_hours == 110
        w = parse("7b lora 100M tokens, our 4 V100s")
        assert w.owned


class TestHeldOutEighteenForms:
    def test_a_names_plus_and_mln(self) -> None:
        assert parse("command r+ lora 10M tokens").model.name == "Command R+ 104B"
        assert parse("command r lora 10M tokens").model.name == "Command R 35B"
        assert parse("qwen2.5-7b lora 200 mln tokens").tokens == 2e8

    def test_thousands_grouped_with_a_space_in_english_only_for_000(self) -> None:
        assert parse("llama-3-8b lora 40 000 samples, 2 epochs").tokens == 40_000 * 1024 * 2
        assert parse("llama-3-8b lora batch 8 128 steps").tokens == 128 * 8 * 1024

    def test_a_day_or_two_is_its_upper_end_and_our_on_prem_is_owned(self) -> None:
        w = parse("13b lora 100M tokens in a day or two")
        assert w.duration_hours == 48
        assert "as its upper end, 48 h" in said(w)
        assert parse("7b full ft 200M tokens, our on-prem 8x A100").owned
        assert parse("预训练350M模型，200亿tokens，8张4090，我们自己的").owned


class TestHeldOutNineteenForms:
    @pytest.mark.parametrize("power", ["2.5 x 10^8", "2.5 * 10^8", "2.5×10^8"])
    def test_a_power_of_ten_with_a_factor(self, power: str) -> None:
        assert parse(f"llama-3-8b lora {power} tokens").tokens == 2.5e8

    def test_a_bare_standard_side_after_images_and_logs(self) -> None:
        assert parse("vit-l/16 on 2M images 224 3 epochs").tokens == 2e6 * 197 * 3
        assert parse("kto llama-3.2-3b lora 80k feedback logs").tokens == 80_000 * 1024

    def test_our_single_card_is_one_and_our_cards_are_asked(self) -> None:
        w = parse("7b qlora 20M tokens on our rtx 4090")
        assert w.owned
        assert w.hardware is not None
        assert w.hardware.count == 1
        with pytest.raises(WorkloadError):
            parse("7b qlora on our H100s")


class TestHeldOutTwentyForms:
    def test_gens_each_and_steps_slash_epoch(self) -> None:
        w = parse("grpo qwen2.5-7b: 8k prompts, 8 gens each, 3k max completion")
        assert (w.group_size, w.completion_len) == (8, 3072)
        w = parse("llama-3-8b sft, 4 epochs × 2,500 steps/epoch, batch 16, seq 2048")
        assert w.tokens == 4 * 2500 * 16 * 2048

    def test_a_chinese_duration_with_ge_is_never_a_dropped_count(self) -> None:
        w = parse("预训练一个13B模型，1万亿tokens，512张H800，一个月")
        assert w.duration_hours == 730
        assert parse("qwen2.5-7b lora 1亿tokens 两个小时").duration_hours == 2


class TestHeldOutTwentyOneForms:
    def test_grand_is_a_thousand_dollars(self) -> None:
        assert parse("8b lora 100M tokens, budget of 2 grand").budget_usd == 2000

    def test_epochs_of_steps_are_steps_per_epoch(self) -> None:
        w = parse("llama-3-8b sft 3 epochs of 1,000 steps at global batch 64 and 4k context")
        assert w.tokens == 3 * 1000 * 64 * 4096
        # steps said alone stay the total, epochs or not
        assert parse("llama-3-8b sft 2 epochs, 800 steps at batch 128, 2048 seq").tokens == (
            800 * 128 * 2048
        )

    def test_chinese_by_tomorrow(self) -> None:
        w = parse("用2张A100全参微调qwen2.5-3b，5000万tokens，明天之前")
        assert w.duration_hours == 38


def test_an_amount_of_money_in_words_is_asked_about_not_dropped() -> None:
    with pytest.raises(WorkloadError, match="amount of money") as err:
        parse("llama-3-8b lora 50M tokens, budget five hundred dollars")
    assert err.value.not_understood == ("dollars",)
    assert parse("llama 8b lora 1B tokens, price in dollars please").budget_usd is None


def test_answers_are_examples_and_numerals_with_kuai_after_budget_are_yuan() -> None:
    assert parse("kto gemma-2-9b lora, 25k upvoted/downvoted answers").tokens == 25_000 * 1024
    w = parse("8b lora 100M tokens, 预算两千块")
    assert w.budget_usd == pytest.approx(to_usd(2000, "CNY"))


def test_up_to_four_describing_words_between_a_count_and_its_noun() -> None:
    w = parse("kto mistral-7b lora, 30k thumbs up / thumbs down samples")
    assert w.tokens == 30_000 * 1024
    with pytest.raises(WorkloadError, match="100"):
        parse("llama-3-8b lora on 100 quux of data")  # "of" ends the words: asked about
