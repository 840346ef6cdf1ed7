"""``parse_workload`` on the text itself: tokens, leftovers, rejections, long input."""

from __future__ import annotations

import contextlib
import time

import pytest

import recommender.parsing.parse as parse_module
from recommender import gpus, models
from recommender.errors import EXAMPLE, WorkloadError
from recommender.parsing._scan import tokenize
from recommender.parsing.parse import parse_workload
from tests.factories import parse, rejected


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
        assert tokenize(text).norm == norm


class TestLeftovers:
    def test_fillers_are_silent(self) -> None:
        """Chat noise and glue words are consumed without being reported."""
        w = parse_workload("hey @gpufit please, can we train the 13b model with a job?")
        assert w.ignored == ()

    def test_unknown_words_are_reported_in_order_once(self) -> None:
        """Words nothing understood are reported in order, each once."""
        w = parse_workload("13b banana lora banana kiwi")
        assert w.ignored == ("banana", "kiwi")

    def test_negation_is_never_silent(self) -> None:
        """A negation no rule understood is reported rather than dropped."""
        assert "no" in parse("no banana").ignored


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
            "13b on 70000x H100",
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
        # ~0.3 s here; a parse quadratic in the digits ran for minutes (gpus._key before)
        assert time.perf_counter() - start < 30.0
