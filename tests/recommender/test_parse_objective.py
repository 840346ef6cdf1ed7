"""Reading what a question asks to optimise (issue #31): deadlines in the phrasings people
use, owned GPUs in English and Chinese, the value of time."""

from __future__ import annotations

from datetime import UTC, datetime
from zoneinfo import ZoneInfo

import pytest

from recommender.errors import WorkloadError
from recommender.parsing.parse import parse_workload, reads_calendar
from recommender.workload import Method, Urgency

#: Friday 4 Dec 2026, 06:00 UTC.
NOW = datetime(2026, 12, 4, 6, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "hours"),
    [
        ("7B pretrain on 1T tokens in 3 weeks", 504),
        ("7b lora on 2B tokens within 4 days", 96),
        ("7b lora on 2B tokens, has to be done in 30 hours", 30),
        ("7b lora on 2B tokens, needs to be ready in 2 weeks", 336),
        ("7b lora on 2B tokens, deadline is 10 days", 240),
        ("7b lora on 2B tokens in the next 3 days", 72),
        ("7b lora on 2B tokens before the 15th", 11 * 24 + 18),  # end of Tue 15 Dec
        ("7b lora on 2B tokens by the 2nd", 29 * 24 + 18),  # the 2nd has passed: 2 Jan
        ("7b lora on 2B tokens by 12/20", 16 * 24 + 18),  # month/day
        ("7b lora on 2B tokens by 20/12", 16 * 24 + 18),  # day/month past 12
        ("7b lora 3 epochs on 10k samples of 2k tokens, done by tomorrow", 42),
    ],
)
def test_work_and_a_time_is_a_deadline(text: str, hours: float) -> None:
    w = parse_workload(text, NOW)
    assert w.tokens is not None
    assert w.deadline_hours == pytest.approx(hours)
    assert w.ignored == ()


def test_a_time_alone_is_the_length_of_the_run() -> None:
    w = parse_workload("13B full finetune 2 days", NOW)
    assert w.duration_hours == 48
    assert w.deadline_hours is None


def test_a_date_that_does_not_exist_is_refused() -> None:
    with pytest.raises(WorkloadError, match="does not exist"):
        parse_workload("7b lora on 2B tokens by 13/13", NOW)


def test_a_calendar_deadline_is_read_in_the_zone_of_now() -> None:
    """In Honolulu (UTC-10) it is still Thursday evening: the end of Friday there is 28 h
    away, against 18 h in UTC."""
    utc = parse_workload("7b lora on 2B tokens by Friday", NOW)
    local = parse_workload(
        "7b lora on 2B tokens by Friday", NOW.astimezone(ZoneInfo("Pacific/Honolulu"))
    )
    assert utc.deadline_hours == pytest.approx(18)
    assert local.deadline_hours == pytest.approx(28)
    assert any("(HST)" in a for a in local.assumed)


@pytest.mark.parametrize(
    ("text", "calendar"),
    [
        ("7b lora by Friday", True),
        ("13B on 2B tokens before the 15th", True),
        ("by dec 15 please", True),
        ("周五前微调", True),
        ("7b lora in 3 weeks", False),
        ("7b lora 2 days", False),
    ],
)
def test_calendar_deadlines_are_told_from_spans(text: str, calendar: bool) -> None:
    assert reads_calendar(text) is calendar


@pytest.mark.parametrize(
    ("text", "gpu", "count"),
    [
        ("llama-3-8b lora, we already have 4x A100", "A100-SXM-40GB", 4),
        ("llama-3-8b lora, we own 8x H100", "H100-SXM-80GB", 8),
        ("llama-3-8b lora on 2B tokens, we have 16 H100s", "H100-SXM-80GB", 16),
        ("we've got 2 nodes of 8x H100, pretrain 7b on 100B tokens", "H100-SXM-80GB", 16),
        ("7b lora on 2B tokens on our own 8x H100", "H100-SXM-80GB", 8),
        ("我们已经有4张A100，微调llama3 8b", "A100-SXM-40GB", 4),
    ],
)
def test_owned_gpus(text: str, gpu: str, count: int) -> None:
    w = parse_workload(text, NOW)
    assert w.owned
    assert w.hardware is not None
    assert (w.hardware.gpu_id, w.hardware.count) == (gpu, count)
    assert w.ignored == ()


def test_money_we_have_is_a_budget_not_owned_hardware() -> None:
    w = parse_workload("we have $3k, pretrain a 1B model", NOW)
    assert w.budget_usd == 3000
    assert not w.owned


def test_hardware_named_without_owning_it_is_a_filter() -> None:
    w = parse_workload("llama-3-8b lora on 8x H100", NOW)
    assert not w.owned


@pytest.mark.parametrize(
    ("text", "per_day"),
    [
        ("7b lora on 2B tokens, time is worth $2k/day", 2000),
        ("7b lora, our time is worth 500 usd per day", 500),
        ("7b lora on 2B tokens, no rush", 0),
        ("7b lora on 2B tokens, not urgent", 0),
        ("7b lora on 2B tokens 不急", 0),
    ],
)
def test_the_value_of_time(text: str, per_day: float) -> None:
    w = parse_workload(text, NOW)
    assert w.time_value_usd_per_day == per_day
    assert w.ignored == ()


@pytest.mark.parametrize(
    ("text", "urgency"),
    [
        ("pretrain a 1B model on 20B tokens, cheapest", Urgency.CHEAPEST),
        ("what's the cheapest way to lora a 7b on 1B tokens", Urgency.CHEAPEST),
        ("7b lora on 1B tokens, as cheap as possible", Urgency.CHEAPEST),
        ("7b lora on 1B tokens at the lowest cost", Urgency.CHEAPEST),
        ("7b lora on 1B tokens 越便宜越好", Urgency.CHEAPEST),
        ("7b lora on 1B tokens asap", Urgency.FASTEST),
        ("7b lora on 1B tokens, we need it as soon as possible", Urgency.FASTEST),
        ("fastest way to pretrain a 1B model on 20B tokens", Urgency.FASTEST),
        ("7b lora on 1B tokens, urgent", Urgency.FASTEST),
        ("7b lora on 1B tokens 尽快", Urgency.FASTEST),
        ("7b lora on 1B tokens, not urgent", None),  # that is "no rush": time at $0
        ("7b lora on 1B tokens", None),
    ],
)
def test_cheapest_and_asap_are_read_not_dropped(text: str, urgency: Urgency | None) -> None:
    """ "cheapest" and "asap" were filler words: the answer ranked by the default value of
    time whatever the user asked for."""
    w = parse_workload(text, NOW)
    assert w.urgency is urgency
    assert w.ignored == ()


def test_a_budget_beside_a_dataset_caps_one_epoch_of_it() -> None:
    w = parse_workload("we have $3k, llama-3-70b lora on 100k samples of 1024 tokens", NOW)
    assert w.tokens == pytest.approx(100_000 * 1024)
    assert w.dataset_tokens == pytest.approx(100_000 * 1024)
    assert w.budget_usd == pytest.approx(3000)
    assert any("1 epoch" in a for a in w.assumed)
    stated = parse_workload("$3k, llama-3-70b lora 2 epochs over 100k samples of 1024 tokens", NOW)
    assert stated.tokens == pytest.approx(2 * 100_000 * 1024)


class TestHeldOutEightDeadlines:
    """Monday 30 Nov 2026, 10:00 UTC (the phrasing sets' time)."""

    MONDAY = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)

    def test_end_of_week_is_the_working_weeks_end_friday(self) -> None:
        w = parse_workload("7b lora on 2B tokens by end of week", self.MONDAY)
        assert w.deadline_hours == pytest.approx(110)  # end of Friday 4 Dec

    def test_before_the_weekday_it_is_means_next_week(self) -> None:
        w = parse_workload("7b lora on 2B tokens before monday", self.MONDAY)
        assert w.deadline_hours == pytest.approx(182)  # not the 14 h left of today
        w = parse_workload("7b lora on 2B tokens by monday", self.MONDAY)
        assert w.deadline_hours == pytest.approx(14)  # "by" today's weekday: today, as before


@pytest.mark.parametrize("when", ["by eod tomorrow", "by tmrw", "by tomorrow eod"])
def test_tomorrow_however_written(when: str) -> None:
    w = parse_workload(f"7b lora on 2B tokens {when}", TestHeldOutEightDeadlines.MONDAY)
    assert w.deadline_hours == pytest.approx(38)  # end of Tuesday


def test_next_weeks_weekday_in_chinese() -> None:
    w = parse_workload("qwen2.5-32b lora 2亿token 下周五前", TestHeldOutEightDeadlines.MONDAY)
    assert w.deadline_hours == pytest.approx(110 + 168)  # Friday 11 Dec, not 4 Dec


def test_examples_with_a_stated_seq_fill_it() -> None:
    """The seq a user sets bounds each example: costed full (the bill's upper bound), and
    said; with no seq, TRL's 1,024-token default."""
    w = parse_workload("lora gemma 3 12b, 90k examples, seq 4096, 2 epochs", NOW)
    assert w.tokens == pytest.approx(90_000 * 4096 * 2)
    assert any("the seq stated, an upper bound" in a for a in w.assumed)
    pairs = parse_workload("dpo llama-3.1-70b with 25k preference pairs, seq 2048", NOW)
    assert pairs.tokens == pytest.approx(25_000 * 2 * 2048)
    unstated = parse_workload("lora gemma 3 12b, 90k examples, 2 epochs", NOW)
    assert unstated.tokens == pytest.approx(90_000 * 1024 * 2)


def test_labeled_completions_are_examples_and_per_prompt_ones_a_group() -> None:
    kto = parse_workload("kto llama-3.1-8b lora 40k labeled completions, 1k tokens each", NOW)
    assert kto.tokens == pytest.approx(40_000 * 1024, rel=0.03)
    grpo = parse_workload("grpo qwen2.5-7b 10k prompts, 8 completions per prompt", NOW)
    assert grpo.group_size == 8


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("simpo llama-3.1-8b full, 60k prefs @ 2048", 60_000 * 2 * 2048),  # "@": at
        ("lora llama-3-8b on 10k samples at 512", 10_000 * 512),  # a bare length after "at"
        ("sft llama-3.1-8b on 1.1M chat turns (avg 380 tokens)", 1.1e6 * 380),
        ("10k optimizer steps, batch 128 x 4096 tokens, llama 3.2 1b full", 1e4 * 128 * 4096),
    ],
)
def test_lead2_forms_are_read(text: str, tokens: float) -> None:
    w = parse_workload(text, NOW)
    assert w.tokens == pytest.approx(tokens)
    assert w.ignored == ()


def test_full_alone_is_the_method_but_not_full_precision_or_shard() -> None:
    assert parse_workload("dpo qwen2.5-7b full 80k pairs", NOW).ignored == ()
    assert parse_workload("llama 3 8b lora, full precision, 1B tokens", NOW).method is Method.LORA


def test_a_mention_is_not_read_as_at() -> None:
    w = parse_workload("@gpufit lora llama-3-8b on 1B tokens", NOW)
    assert w.tokens == pytest.approx(1e9)
    assert w.ignored == ()


def test_qwen_math_is_the_qwen2_5_shape_it_was_tuned_from() -> None:
    assert parse_workload("grpo qwen2.5-math-7b 1k prompts", NOW).model.name == "Qwen2.5 7B"


def test_a_budget_with_no_currency_says_it_is_read_as_dollars() -> None:
    bare = parse_workload("budget 5k, lora llama-3-8b 100M tokens", NOW)
    assert bare.budget_usd == pytest.approx(5000)
    assert any("as US dollars" in a for a in bare.assumed)
    dollars = parse_workload("lora llama-3-8b 100M tokens under $5k", NOW)
    assert not any("as US dollars" in a for a in dollars.assumed)
