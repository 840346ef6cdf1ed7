"""Never a silent drop, never a traceback (issue #35 item 5).

A property test builds questions from the parser's grammar (a model, a method, an
algorithm, work in any of its units, time, money, hardware; in any order, some words
mistyped) and asserts that every number of the question is used by a phrase
(``Workload.phrases``) or listed as not understood (``Workload.ignored``), or that the
question is refused with a message. A fuzz test feeds text in any script and asserts that
nothing but a Workload or a WorkloadError comes out.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bench.phrasings import NOW, dropped_numbers
from recommender.errors import WorkloadError
from recommender.parsing.parse import parse_workload
from recommender.workload import Workload

_PROPERTY = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_int = st.integers(min_value=1, max_value=999)
_unit = st.sampled_from(["", "k", "M", "B", " million", " billion", "万", "亿"])
_model = st.sampled_from(
    ["llama-3-8b", "mistral-7b", "13b", "qwen2.5-7b", "whisper-small", "vit-base", "70B"]
)
_method = st.sampled_from(["", "lora", "qlora", "full finetune", "full ft", "微调", "pretrain"])
_algorithm = st.sampled_from(["", "dpo", "kto", "grpo", "orpo", "simpo", "ppo", "sft", "ipo"])


def _phrase(template: str, *parts: st.SearchStrategy[object]) -> st.SearchStrategy[str]:
    return st.tuples(*parts).map(lambda values: template.format(*values))


_work = st.one_of(
    _phrase("{}{} tokens", _int, _unit),
    _phrase("on {}{} tokns", _int, _unit),
    _phrase("{} bilion tokens", _int),
    _phrase("{}k samples of {} tokens", _int, _int),
    _phrase("{}k sampels, {} epochs", _int, st.integers(1, 9)),
    _phrase("{} steps at batch {}", _int, _int),
    _phrase("{} steps, global batch {}, seq {}", _int, _int, _int),
    _phrase("{}k preference pairs of {} tokens", _int, _int),
    _phrase("{} prompts with {} samples each", _int, st.integers(1, 64)),
    _phrase("{} completion tokens", _int),
    _phrase("{} hours of audio", _int),
    _phrase("{}k images at {}x{}", _int, st.integers(32, 1024), st.integers(32, 1024)),
    _phrase("{}万条数据", _int),
    st.sampled_from(["the whole of Alpaca", "all of FineWeb-Edu", "on LibriSpeech", "GSM8K"]),
)
_time = st.one_of(
    _phrase("{} days", st.integers(1, 300)),
    _phrase("{} dayz", st.integers(1, 300)),
    _phrase("in {} hours", st.integers(1, 5000)),
    _phrase("{} weks", st.integers(1, 40)),
    st.sampled_from(["by friday", "overnight", "两天", "周五前"]),
)
_money = st.one_of(
    _phrase("${}", _int),
    _phrase("budget {}k", _int),
    _phrase("预算{}万元", _int),
    _phrase("预算{}千人民币", _int),
    _phrase("€{}k", _int),
    _phrase("{}万美元", _int),
    _phrase("¥{} JPY", _int),
)
_hardware = st.one_of(
    _phrase("on {}x H100", st.integers(1, 64)),
    _phrase("{} nodes", st.integers(1, 16)),
    _phrase("用{}张A100", st.integers(1, 16)),
)
_noise = st.sampled_from(["", "please", "asap", "for our team", "widgets 7", "hmm", "(approx)"])


def _typo(word: str, at: int) -> str:
    """Two neighbouring letters swapped, as fast typing does ("lroa", "tokesn")."""
    if len(word) < 4 or not word.isalpha():
        return word
    i = at % (len(word) - 1)
    return word[:i] + word[i + 1] + word[i] + word[i + 2 :]


@st.composite
def _question(draw: st.DrawFn) -> str:
    parts = [
        draw(_model),
        draw(_method),
        draw(_algorithm),
        *draw(st.lists(st.one_of(_work, _time, _money, _hardware, _noise), max_size=4)),
    ]
    parts = draw(st.permutations(parts))
    words = " ".join(p for p in parts if p).split(" ")
    if draw(st.booleans()):
        at = draw(st.integers(0, len(words) - 1))
        words[at] = _typo(words[at], draw(st.integers(0, 20)))
    return draw(st.sampled_from([" ", ", "])).join(words)


class TestNoNumberDisappears:
    @_PROPERTY
    @given(_question())
    def test_every_number_is_used_listed_or_asked_about(self, text: str) -> None:
        try:
            w = parse_workload(text, now=NOW)
        except WorkloadError as err:
            refused = err
        else:
            assert dropped_numbers(text, w) == [], [(p.text, p.sets) for p in w.phrases]
            assert set(w.unread) <= set(w.ignored)
            return
        assert refused.message  # refused, with a message naming only words of the text
        assert all(word in text for word in refused.not_understood)

    def test_a_known_drop_is_caught_by_the_checker(self) -> None:
        """The checker itself sees a number no phrase used: a workload whose phrases were
        emptied drops every number of its question."""
        text = "llama-3-8b lora on 2B tokens, $500"
        w = parse_workload(text, now=NOW)
        assert dropped_numbers(text, w) == []
        assert w.phrases
        emptied = Workload(**{**_fields(w), "phrases": ()})
        assert dropped_numbers(text, emptied) == ["$500", "2B", "llama-3-8b"]


def _fields(w: Workload) -> dict[str, object]:
    return {name: getattr(w, name) for name in w.__dataclass_fields__}


_SCRIPTS = st.text(
    alphabet=st.characters(
        codec="utf-8",
        categories=["L", "M", "N", "P", "S", "Z"],
    ),
    max_size=120,
)
_PIECES = st.sampled_from(
    [
        "万",
        "亿",
        "两",
        "千",
        "¥",
        "￥",
        "$",
        "€",
        "x",
        "1e400",
        "-3",
        ".5",
        "3万",
        "٣",
        "३",
        "８",
        "预算",
        "每条",
        "the whole of",
        "hours of audio",
        "images at",
        "steps at batch",
        "preference pairs",
        "‮",
        "🚀",
        "\u200b",
        "ｔｏｋｅｎｓ",
    ]
)


class TestNoTraceback:
    @settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(
        st.lists(st.one_of(_SCRIPTS, _PIECES, _question()), min_size=1, max_size=6).map(" ".join)
    )
    def test_any_text_in_any_script(self, text: str) -> None:
        try:
            outcome: Workload | WorkloadError = parse_workload(text, now=NOW)
        except WorkloadError as err:
            outcome = err
        assert isinstance(outcome, Workload | WorkloadError)
