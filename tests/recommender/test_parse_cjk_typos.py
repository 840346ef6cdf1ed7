"""Money written the Chinese way (万, 亿 and 千 after digits, with any currency word or
symbol: issue #35 item 4; "预算3万人民币" raised KeyError: 'sym' before) and typos of units
and magnitudes ("5 bilion tokns", "3 dayz": item 3)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from recommender.errors import WorkloadError
from recommender.parsing._scan import tokenize
from recommender.parsing.parse import parse_workload
from recommender.pricing.fx import fx_table, to_usd

NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "amount", "code"),
    [
        ("llama-3-8b lora 预算3万人民币", 30_000, "CNY"),
        ("llama-3-8b lora 预算3万元", 30_000, "CNY"),
        ("llama-3-8b lora 预算￥3万", 30_000, "CNY"),
        ("llama-3-8b lora 预算1.5万美元", 15_000, "USD"),
        ("llama-3-8b lora 预算5千元", 5_000, "CNY"),
        ("70b 预训练 预算1亿人民币", 100_000_000, "CNY"),
        ("llama-3-8b lora 预算50万日元", 500_000, "JPY"),
        ("llama-3-8b lora budget 3万 rmb", 30_000, "CNY"),
        ("llama-3-8b lora 预算两万元", 20_000, "CNY"),
        ("用8张H100微调qwen2.5-7b，预算2万元", 20_000, "CNY"),
    ],
)
def test_magnitudes_with_any_currency(text: str, amount: float, code: str) -> None:
    w = parse_workload(text, now=NOW)
    expected = amount if code == "USD" else to_usd(amount, code)
    assert w.budget_usd == pytest.approx(expected)
    assert w.ignored == ()


def test_a_foreign_budget_names_the_rate_date_and_warns_when_stale() -> None:
    """The shipped ECB table is dated; an answer converting with a table over 30 days old
    says so in its warnings."""
    w = parse_workload("llama-3-8b lora 预算3万人民币", now=NOW)
    assert fx_table().date in " ".join(w.assumed)
    assert any("days old" in line for line in w.warnings)


def test_a_chinese_budget_with_no_currency_is_asked_about() -> None:
    """ "预算5千" could be yuan or dollars: asked, never guessed."""
    with pytest.raises(WorkloadError, match="which currency") as err:
        parse_workload("llama-3-8b lora 预算5千", now=NOW)
    assert "5千" in err.value.not_understood


def test_digits_and_a_magnitude_are_one_token_and_one_amount() -> None:
    toks = tokenize("预算3万元 10万条数据 ￥1.5亿")
    assert toks.raw == ("预算", "3万", "元", "10万", "条数据", "￥1.5亿")
    assert toks.norm[1] == "30000"
    assert toks.norm[3] == "100000"
    assert toks.norm[5].endswith("150000000")


@pytest.mark.parametrize(
    ("text", "field", "value", "typo"),
    [
        ("llama-3-8b on 5 bilion tokns", "tokens", 5e9, "tokns"),
        ("13b full finetune 3 dayz", "duration_hours", 72.0, "dayz"),
        ("13b qlora for 7 hourz", "duration_hours", 7.0, "hourz"),
        ("llama-3-8b lora 2 weks", "duration_hours", 336.0, "weks"),
        ("mistral-7b full finetune on 800 milion tokens", "tokens", 8e8, "milion"),
        ("pretrain 1b on 20 billon tokens", "tokens", 2e10, "billon"),
    ],
)
def test_typos_of_units_and_magnitudes_are_read_and_said(
    text: str, field: str, value: float, typo: str
) -> None:
    """Issue #35: "5 bilion tokns" was asked about, "tokns" alone was dropped."""
    w = parse_workload(text, now=NOW)
    assert getattr(w, field) == pytest.approx(value)
    assert any(repr(typo) in line for line in w.readings)


def test_real_words_near_a_unit_are_left_alone() -> None:
    with pytest.raises(WorkloadError, match="'3'"):
        parse_workload("13b lora it says 3", now=NOW)
