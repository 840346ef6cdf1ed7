"""The parser reads what people type: typos, dataset sizes, durations and deadlines, money in
other currencies, counts, and Chinese (issue #21)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from recommender.errors import WorkloadError
from recommender.parsing._fuzzy import correct, distance
from recommender.parsing.parse import parse_workload
from recommender.pricing.fx import STALE_AFTER_DAYS, fx_table, to_usd
from recommender.workload import HardwareRequest, Method, Workload

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)  # a Tuesday


def parse(text: str) -> Workload:
    return parse_workload(text, now=NOW)


def notes(w: Workload) -> str:
    return " | ".join(w.assumed)


class TestTypos:
    def test_model_and_method_typos_are_corrected_and_stated(self) -> None:
        """ "lama3 8b lroa" is Llama 3 8B with LoRA, not a full fine-tune of a generic 8B."""
        w = parse("lama3 8b lroa")
        assert w.model.name == "Llama 3 8B"
        assert w.model.known
        assert w.method is Method.LORA
        assert "read 'lroa' as LoRA" in w.assumed
        assert "read 'lama3' as Llama 3" in w.assumed
        assert w.ignored == ()

    @pytest.mark.parametrize(
        ("text", "name"),
        [
            ("lama 8b lora", "Llama 3.1 8B"),
            ("mistrl 7b lora", "Mistral 7B"),
            ("qwen2.5 7b lora", "Qwen2.5 7B"),
        ],
    )
    def test_family_typos(self, text: str, name: str) -> None:
        assert parse(text).model.name == name

    @pytest.mark.parametrize(
        ("text", "method"),
        [("7b qlroa", Method.QLORA), ("7b pretrian", Method.PRETRAIN), ("7b lroa", Method.LORA)],
    )
    def test_method_typos(self, text: str, method: Method) -> None:
        assert parse(text).method is method

    def test_finetune_typo(self) -> None:
        w = parse("7b finetnue 2 days")
        assert "read 'finetnue' as fine-tune" in w.assumed
        assert "method: full fine-tune (say `lora` or `qlora` to change)" not in w.assumed

    def test_real_words_are_not_corrected(self) -> None:
        assert correct("lord") is None
        assert correct("the") is None
        assert correct("banana") is None

    def test_distance_counts_a_transposition_once(self) -> None:
        assert distance("lroa", "lora") == 1
        assert distance("kitten", "sitting") == 3

    @pytest.mark.parametrize("text", ["13b 3.5", "13b full finetune 100k", "7b lora 12zz"])
    def test_an_unknown_quantity_is_asked_about(self, text: str) -> None:
        """A number no rule understood stops the answer: never a price for another job."""
        with pytest.raises(WorkloadError, match="stands for") as err:
            parse(text)
        assert err.value.hint is not None
        assert "2 days" in err.value.hint

    def test_a_contradicting_size_is_still_reported_not_refused(self) -> None:
        assert parse("llama-3-8b 13b").ignored == ("13b",)


class TestDatasetSizes:
    def test_samples_times_length_times_epochs(self) -> None:
        w = parse("7b lora 3 epochs over 100k samples of 512 tokens")
        assert w.tokens == pytest.approx(153.6e6)
        assert w.seq_len == 512
        assert any("153.6M tokens" in a for a in w.assumed)

    @pytest.mark.parametrize(
        "text",
        [
            "7b lora 100k samples x 512 tokens 3 epochs",
            "7b lora 100k 512-token examples for 3 epochs",
            "7b lora 100k rows, 512 tokens each, three epochs",
            "7b lora 100k conversations 512 tokens per example 3 epochs",
        ],
    )
    def test_other_wordings(self, text: str) -> None:
        assert parse(text).tokens == pytest.approx(153.6e6)

    def test_default_length_is_stated(self) -> None:
        w = parse("7b lora 100k samples")
        assert w.tokens == pytest.approx(100e3 * 1024)
        assert "say `of 512 tokens` to change" in notes(w)
        assert "1 epoch (say `3 epochs` to change)" in w.assumed

    def test_pretraining_example_is_a_sequence(self) -> None:
        w = parse("1b pretrain 1m samples seq 4k")
        assert w.tokens == pytest.approx(1e6 * 4096)

    def test_epochs_over_tokens(self) -> None:
        assert parse("7b full finetune 1 epoch over 2B tokens").tokens == 2e9
        assert parse("7b full finetune 3 epochs on 2B tokens").tokens == 6e9

    def test_epochs_without_a_dataset_are_stated(self) -> None:
        w = parse("7b lora 3 epochs")
        assert w.tokens is None
        assert "no dataset size given" in notes(w)


class TestDurations:
    @pytest.mark.parametrize(
        ("text", "hours"),
        [
            ("7b lora two days", 48),
            ("7b lora a week", 168),
            ("7b lora a couple of days", 48),
            ("7b lora in 6 hours", 6),
            ("7b lora over the weekend", 48),
            ("7b lora overnight", 12),
            ("7b 2天", 48),
            ("7b 两天", 48),
            ("7b 十二小时", 12),
            ("7b 一周", 168),
        ],
    )
    def test_duration_words(self, text: str, hours: float) -> None:
        assert parse(text).duration_hours == pytest.approx(hours)

    def test_phrases_state_their_reading(self) -> None:
        assert "read 'overnight' as 12 h" in notes(parse("7b lora overnight"))

    @pytest.mark.parametrize(
        ("text", "hours"),
        [
            ("7b lora by Friday", 84),  # Tue 12:00 → end of Fri 4 Dec
            ("7b lora by tomorrow", 36),
            ("7b lora by Dec 15", 348),
            ("7b lora by 15 december", 348),
            ("7b lora by 2026-12-03", 60),
            ("7b 周五前", 84),
        ],
    )
    def test_deadlines_count_from_now(self, text: str, hours: float) -> None:
        w = parse(text)
        assert w.duration_hours == pytest.approx(hours)
        assert "deadline" in notes(w)

    def test_the_resolved_deadline_is_shown(self) -> None:
        assert "end of Fri 04 Dec 2026" in notes(parse("7b lora by Friday"))

    def test_a_deadline_date_already_past_is_next_year(self) -> None:
        w = parse("7b lora by Jan 2")
        assert "2027" in notes(w)

    def test_deadlines_follow_the_time_zone_of_now(self) -> None:
        tokyo = NOW.astimezone(timezone(timedelta(hours=9)))
        w = parse_workload("7b lora by tomorrow", now=tokyo)
        assert w.duration_hours == pytest.approx(24 + 24 - 21)

    def test_without_now_a_deadline_is_asked_about(self) -> None:
        with pytest.raises(WorkloadError, match="today's date"):
            parse_workload("7b lora by Friday")

    @pytest.mark.parametrize("text", ["7b lora by feb 31", "7b lora by 2020-01-01"])
    def test_impossible_or_past_dates_are_refused(self, text: str) -> None:
        with pytest.raises(WorkloadError):
            parse(text)


class TestMoney:
    def test_dollars_in_words(self) -> None:
        assert parse("7b lora 3k dollars").budget_usd == 3000

    @pytest.mark.parametrize(
        ("text", "amount", "code"),
        [
            ("7b lora €500", 500, "EUR"),
            ("7b lora 500 EUR", 500, "EUR"),
            ("7b lora budget 3k euros", 3000, "EUR"),
            ("7b lora £2k", 2000, "GBP"),
            ("7b lora 2000 GBP", 2000, "GBP"),
            ("7b lora ¥300000 JPY", 300_000, "JPY"),
            ("7b lora 3000 CNY", 3000, "CNY"),
            ("7b lora 预算 3000 元", 3000, "CNY"),
            ("7b lora 3000 人民币", 3000, "CNY"),
        ],
    )
    def test_other_currencies_convert_with_the_dated_table(
        self, text: str, amount: float, code: str
    ) -> None:
        w = parse(text)
        assert w.budget_usd == pytest.approx(to_usd(amount, code))
        assert fx_table().date in notes(w)
        assert "ecb.europa.eu" in notes(w)

    def test_chinese_dollars(self) -> None:
        assert parse("预算 500 美元 7b lora").budget_usd == 500

    def test_bare_yen_sign_is_asked_about(self) -> None:
        with pytest.raises(WorkloadError, match="yuan or Japanese yen"):
            parse("7b lora ¥3000")

    def test_yen_sign_in_chinese_is_yuan_and_says_so(self) -> None:
        w = parse("7b 微调 ¥3000")
        assert w.budget_usd == pytest.approx(to_usd(3000, "CNY"))
        assert "read ¥ as Chinese yuan" in notes(w)

    def test_a_stale_table_is_a_warning_in_the_answer(self) -> None:
        """Issue #39: the table is dated 2024-06-28; converting with it more than 30 days
        later warns (``Workload.warnings``, which every face shows); within 30 days, not."""
        table = fx_table()
        day = datetime.fromisoformat(table.date).replace(tzinfo=UTC)
        fresh = parse_workload("7b lora 500 EUR", now=day + timedelta(days=STALE_AFTER_DAYS))
        assert fresh.warnings == ()
        late = day + timedelta(days=STALE_AFTER_DAYS + 1)
        stale = parse_workload("7b lora 500 EUR", now=late)
        [warning] = stale.warnings
        assert f"{STALE_AFTER_DAYS + 1} days old" in warning
        assert table.date in warning
        assert parse_workload("7b lora $500", now=late).warnings == ()

    def test_the_table_is_dated_and_sourced(self) -> None:
        table = fx_table()
        assert table.date == "2024-06-28"
        assert table.per_eur["EUR"] == 1
        assert {"USD", "GBP", "JPY", "CNY"} <= set(table.per_eur)


class TestCounts:
    @pytest.mark.parametrize(
        ("text", "hardware"),
        [
            ("7b lora two cards", HardwareRequest(None, 2)),
            ("7b lora 两张 4090", HardwareRequest("RTX-4090", 2)),
            ("7b lora 两张4090", HardwareRequest("RTX-4090", 2)),
            ("7b lora 8块H100", HardwareRequest("H100-SXM-80GB", 8)),
            ("7b lora 2 nodes of 8x H100", HardwareRequest("H100-SXM-80GB", 16)),
            ("7b lora 4 nodes", HardwareRequest(None, 32)),
            ("7b lora a node", HardwareRequest(None, 8)),
            ("7b lora on 4090", HardwareRequest("RTX-4090", None)),
        ],
    )
    def test_counts(self, text: str, hardware: HardwareRequest) -> None:
        assert parse(text).hardware == hardware

    def test_nodes_without_a_count_state_eight_per_node(self) -> None:
        assert "8 per node" in notes(parse("7b lora 4 nodes"))


class TestChinese:
    def test_a_whole_question(self) -> None:
        w = parse("用两张4090微调llama3 8b两天预算500美元")
        assert w.model.name == "Llama 3 8B"
        assert w.hardware == HardwareRequest("RTX-4090", 2)
        assert w.duration_hours == 48
        assert w.budget_usd == 500
        assert w.ignored == ()

    @pytest.mark.parametrize(
        ("text", "method"),
        [
            ("70b 全量微调", Method.FULL),
            ("1b 预训练", Method.PRETRAIN),
            ("7b lora 微调", Method.LORA),
        ],
    )
    def test_methods(self, text: str, method: Method) -> None:
        assert parse(text).method is method

    def test_a_chinese_word_after_a_gpu_is_not_swallowed(self) -> None:
        w = parse("70b 全量微调 8张H100 周五前")
        assert w.hardware == HardwareRequest("H100-SXM-80GB", 8)
        assert w.duration_hours == pytest.approx(84)
