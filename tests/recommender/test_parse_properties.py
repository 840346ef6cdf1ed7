"""Properties of ``parse_workload`` over arbitrary text: it answers or says what it missed."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recommender.errors import WorkloadError
from recommender.parsing.parse import parse_workload
from recommender.workload import Workload

#: Phrases the parser knows, plus hostile ones: Slack pings, huge and negative numbers.
_PHRASES = [
    "13b",
    "llama-3-8b",
    "8x7b",
    "lora",
    "qlora",
    "full finetune",
    "on 8x H100",
    "8xA100 80GB",
    "2 days",
    "-5 days",
    "1e400 days",
    "seq 4k",
    "seq 0",
    "$3,000",
    "$-5",
    "$1e400",
    "on 2B tokens",
    "0 gpus",
    "9" * 400 + "x H100",
    "zero-3",
    "offload params",
    "no spot",
    "aws only",
    "in eu",
    "r=64",
    "<!channel>",
    "<@U123>",
    "<#C1|general>",
    "&lt;script&gt;",
    "&amp;",
    "'; DROP TABLE workloads; --",
    "{{7*7}}",
    "１３Ｂ",
    "ｌｏｒａ",
]

_text = st.one_of(
    st.text(max_size=200),
    st.lists(st.sampled_from(_PHRASES) | st.text(max_size=12), max_size=12).map(" ".join),
)

_PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _outcome(text: str) -> Workload | WorkloadError:
    try:
        return parse_workload(text)
    except WorkloadError as err:
        return err


class TestTotality:
    @_PROPERTY
    @given(_text)
    def test_raises_nothing_but_workload_error(self, text: str) -> None:
        """Any text yields a Workload or a WorkloadError: no other exception escapes."""
        _outcome(text)

    @settings(max_examples=30, deadline=None)
    @given(st.text(min_size=2001, max_size=2100))
    def test_huge_input_is_refused(self, text: str) -> None:
        """Text beyond the length cap is refused for its length, whatever it says."""
        with pytest.raises(WorkloadError, match="characters long"):
            parse_workload(text)

    @_PROPERTY
    @given(
        st.text(alphabet="0123456789.e-", min_size=1, max_size=400),
        st.sampled_from(
            ["days", "h", "b", "params", "tokens", "gpus", "x h100", "k context", "usd"]
        ),
    )
    def test_any_number_with_any_unit(self, number: str, unit: str) -> None:
        """Huge, negative or malformed numbers before a unit never escape as ValueError."""
        _outcome(f"13b ${number} {number} {unit}")


class TestNothingIsDropped:
    @_PROPERTY
    @given(_text)
    def test_ignored_words_come_from_the_input(self, text: str) -> None:
        """Every word reported as ignored is a substring of the input, and listed once."""
        outcome = _outcome(text)
        words = outcome.ignored if isinstance(outcome, Workload) else outcome.not_understood
        assert len(set(words)) == len(words)
        for word in words:
            assert word in text

    @_PROPERTY
    @given(
        st.lists(st.sampled_from(_PHRASES), min_size=1, max_size=4).map(" ".join),
        st.sampled_from(["please", "thanks", "hey", "the"]),
    )
    def test_a_filler_word_changes_nothing(self, text: str, filler: str) -> None:
        """A filler word added before or after the text leaves the workload as it was (but
        for the text kept), or the text still refused."""
        outcome = _outcome(text)
        for padded in (f"{filler} {text}", f"{text} {filler}"):
            again = _outcome(padded)
            if isinstance(outcome, Workload):
                assert again == replace(outcome, text=padded)
            else:
                assert isinstance(again, WorkloadError)

    @_PROPERTY
    @given(st.lists(st.sampled_from(_PHRASES[:8]), min_size=1, max_size=6))
    def test_parsing_is_deterministic(self, phrases: list[str]) -> None:
        """The same text always parses to the same result."""
        text = " ".join(phrases)
        first, second = _outcome(text), _outcome(text)
        if isinstance(first, Workload):
            assert first == second
        else:
            assert isinstance(second, WorkloadError)
            assert first.message == second.message
