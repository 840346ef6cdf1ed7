"""Questions in Spanish, German, French and Chinese are read through the English words the
rules know (recommender/parsing/_foreign.py, _words.CJK_ENGLISH), with the thousands grouped
as those languages group them (issue #35 item 6)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from recommender.errors import WorkloadError
from recommender.parsing._foreign import reads_foreign
from recommender.parsing._scan import tokenize
from recommender.parsing.parse import parse_workload
from recommender.pricing.fx import to_usd
from recommender.workload import Method, SpotPolicy, Workload

NOW = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)  # a Monday: "by Friday" is 110 h


def parse(text: str) -> Workload:
    return parse_workload(text, now=NOW)


@pytest.mark.parametrize(
    ("text", "tokens", "hours"),
    [
        (
            "entrenar mistral 7b con qlora, 20 mil ejemplos, 3 épocas, durante 2 días",
            61_440_000,
            48,
        ),
        (
            "Mistral 7B mit LoRA feintunen, 3 Epochen über 20.000 Beispiele, bis Freitag",
            61_440_000,
            110,
        ),
        ("LoRA sur mistral-7b, 20 000 exemples, 3 époques, en 6 heures", 61_440_000, 6),
        ("mistral 7b con lora sobre 2 millones de tokens, en 2 semanas", 2e6, 336),
        ("Mistral 7B mit LoRA, 1,5 Mrd. Tokens", 1.5e9, None),  # a decimal comma
    ],
)
def test_work_and_time_in_other_languages_read_as_in_english(
    text: str, tokens: float, hours: float | None
) -> None:
    w = parse(text)
    assert w.model.name == "Mistral 7B"
    assert w.tokens == pytest.approx(tokens)
    assert w.duration_hours == pytest.approx(hours)
    assert w.ignored == ()


@pytest.mark.parametrize(
    ("text", "amount", "code"),
    [
        ("Wir wollen Mistral 7B mit QLoRA feintunen, Budget 1.500 €", 1500, "EUR"),
        ("fine-tuning complet de mistral-7b, budget 5 000 €, 8 H100", 5000, "EUR"),
        ("mistral 7b con lora, presupuesto 2.000 euros", 2000, "EUR"),
        ("mistral 7b lora budget 800€", 800, "EUR"),  # the sign after the amount, in English too
    ],
)
def test_money_with_the_sign_after_and_grouped_thousands(
    text: str, amount: float, code: str
) -> None:
    w = parse(text)
    assert w.budget_usd == pytest.approx(to_usd(amount, code))
    assert "€" not in w.ignored


def test_french_full_fine_tuning_is_full_and_a_stray_word_translates_nothing() -> None:
    assert (
        parse("fine-tuning complet de mistral-7b sur 300 millions de tokens").method is Method.FULL
    )
    # one word of the table in an English question ("sin" here) leaves it English: a
    # dot-grouped number stays ambiguous and is asked about
    assert not reads_foreign(tokenize("mistral 7b lora sin 50.000 samples").norm)
    with pytest.raises(WorkloadError, match=r"50\.000"):
        parse("mistral 7b lora on 50.000 samples")
    # a space between numbers joins nothing in English: "8 128" stays two numbers
    assert tokenize("mistral 7b lora on 8 128 samples").raw[-3:] == ("8", "128", "samples")


@pytest.mark.parametrize(
    ("text", "spot"),
    [
        ("DPO训练llama-3-8b，2万对偏好数据，按需实例", SpotPolicy.NEVER),
        ("llama-3-8b lora 1B tokens，不要竞价实例", SpotPolicy.NEVER),
        ("llama-3-8b lora 1B tokens，竞价实例可以", SpotPolicy.ALLOW),
    ],
)
def test_chinese_spot_and_on_demand_words(text: str, spot: SpotPolicy) -> None:
    w = parse(text)
    assert w.spot is spot
    assert w.ignored == ()


def test_a_chinese_count_with_its_counter_counts_epochs() -> None:
    w = parse("llama-3-8b lora 1万条 每条1000 tokens 训练2个epoch")
    assert w.tokens == 10_000 * 1000 * 2


def test_german_case_endings_read_as_the_word() -> None:
    w = parse("QLoRA auf Mistral 7B mit 50.000 Beispielen, 2 Epochen")
    assert w.tokens == 50_000 * 1024 * 2


def test_french_a_between_a_count_and_a_length() -> None:
    w = parse("LoRA-Finetuning von Mistral 7B auf 80.000 Beispielen à 1.000 Tokens, 3 Epochen")
    assert w.tokens == 80_000 * 1000 * 3


@pytest.mark.parametrize(
    ("text", "method", "tokens"),
    [
        (
            "entrenar desde cero un modelo de 1B con 50 mil millones de tokens",
            Method.PRETRAIN,
            5e10,
        ),
        ("Llama 3.1 8B mit QLoRA: 40.000 Dialoge, je 800 Tokens, 2 Epochen", Method.QLORA, 6.4e7),
    ],
)
def test_phrases_of_several_words_and_each(text: str, method: Method, tokens: float) -> None:
    w = parse(text)
    assert w.method is method
    assert w.tokens == tokens
    assert w.ignored == ()


def test_a_german_negation_refuses_the_provider_and_spot_instances_are_read() -> None:
    w = parse("Mixtral 8x7B LoRA, 300M Tokens, kein AWS, Spot-Instanzen ok")
    assert w.providers
    assert "aws" not in w.providers
    assert w.spot is SpotPolicy.ALLOW
    assert w.ignored == ()


@pytest.mark.parametrize(
    "text",
    [
        "QLoRA sur Mixtral 8x7B avec 4 A100, 50 millions de tokens, pas de spot",
        "entrenar llama 3 8b con QLoRA, 25.000 ejemplos, en 2 A100, sin instancias spot",
    ],
)
def test_no_spot_in_french_and_spanish(text: str) -> None:
    assert parse(text).spot is SpotPolicy.NEVER


def test_a_single_card_in_chinese_and_a_german_sized_model() -> None:
    w = parse("whisper-small 微调 100小时 录音 单张4090")
    assert w.hardware is not None
    assert w.hardware.count == 1
    w = parse("Pretraining eines 3B-Modells auf 300 Mrd. Tokens mit 128 H100")
    assert w.method is Method.PRETRAIN
    assert w.tokens == 3e11


def test_each_one_of_a_million_and_we_have_in_german() -> None:
    w = parse(
        "Hacer fine-tuning completo de llama 3.2 1b con 2 millones de ejemplos, 256 tokens cada uno"
    )
    assert w.tokens == 2e6 * 256
    w = parse("Wir haben 8 H100 im eigenen Rechenzentrum: Llama 3 8B voll feintunen, 2 Mrd. Tokens")
    assert w.owned
    assert w.method is Method.FULL


def test_a_spanish_billon_is_a_million_millions_and_french_d_ici() -> None:
    assert parse("preentrenamiento de un modelo de 7B con 1 billón de tokens").tokens == 1e12
    w = parse("fine-tuning QLoRA de Llama 3.1 70B, 40 millions de tokens, d'ici vendredi")
    assert w.duration_hours == 110


def test_pretrain_verbs_and_at_the_latest_at_most() -> None:
    w = parse(
        "¿Cuántas horas en 8 H100 para preentrenar un modelo de 1B con 20 mil millones de tokens?"
    )
    assert (w.method, w.tokens) == (Method.PRETRAIN, 2e10)
    w = parse("Llama 3.1 8B mit LoRA, 50 Mio. Tokens, spätestens Freitag, höchstens 500 €")
    assert w.duration_hours == 110
    assert w.budget_usd == pytest.approx(to_usd(500, "EUR"))


def test_compounds_elision_and_articles() -> None:
    w = parse("LoRA-Feintuning von Qwen2.5 14B: 50 Mio. Tokens, 2 A100, bis Donnerstag")
    assert (w.method, w.duration_hours) == (Method.LORA, 86)
    w = parse("QLoRA sur Qwen2.5 72B, 20 millions de tokens, 4 H100, pas d'AWS")
    assert w.providers
    assert "aws" not in w.providers
    w = parse("fine-tuning complet de gemma 2 2b sur 100 000 exemples, 1 époque, une A100")
    assert w.hardware is not None
    assert w.hardware.count == 1
    assert parse("pré-entraînement d'un modèle 1B sur 100 milliards de tokens").method is (
        Method.PRETRAIN
    )


def test_before_the_weekday_in_spanish() -> None:
    w = parse("QLoRA de Llama 3.1 70B con 20 millones de tokens en 2 H100 antes del viernes")
    assert w.duration_hours == 110
