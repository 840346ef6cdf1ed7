"""The parser's fast paths give the results of the plain ones.

``parse_workload`` runs the rule table with each run of consecutive regex rules as one
alternation (``parse._dispatch``), and normalises ASCII tokens without Unicode
normalisation (``_scan._normalise``). Both are compared with the plain way on generated text.
"""

from __future__ import annotations

import re
import unicodedata

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from recommender import _scan, models, parse
from recommender._draft import Draft
from recommender.errors import WorkloadError
from recommender.workload import Workload

#: A phrase for (nearly) every rule, and pairs that state a field twice, so that a rule's
#: handler declines and the rules after it are tried.
_PHRASES = [
    "13b",
    "7 billion params",
    "llama-3-8b",
    "llama 70b",
    "mixtral 8x7b",
    "seq 4k",
    "4k context",
    "on 2B tokens",
    "$3k",
    "3000 usd",
    "budget 5k",
    "we have 3k",
    "2 days",
    "for a day",
    "global batch 512",
    "micro-batch 4",
    "batch 8",
    "lora rank 16",
    "r=64",
    "lora on attention",
    "lora all linear",
    "4-bit",
    "no double quant",
    "double quant",
    "pure bf16",
    "bf16 mixed",
    "fp16",
    "bf16",
    "fp8",
    "fp32",
    "mixed",
    "adamw 8bit",
    "sgd momentum",
    "sgd",
    "adafactor",
    "lion",
    "adamw",
    "no checkpointing",
    "checkpointing",
    "no offload",
    "offload params",
    "offload optimizer",
    "fsdp grad op",
    "hsdp",
    "fsdp",
    "zero-3",
    "zero 1",
    "ddp",
    "spot only",
    "no spot",
    "spot ok",
    "aws only",
    "no aws",
    "in eu",
    "help us",
    "US",
    "on 8x H100",
    "2 gpus",
    "qlora",
    "lora",
    "pretrain",
    "full finetune",
    "fine-tune",
    "-5 days",
    "1e400 days",
    "$-5",
    "seq 0",
]

_text = st.one_of(
    st.lists(st.sampled_from(_PHRASES), min_size=1, max_size=10).map(" ".join),
    st.lists(st.sampled_from(_PHRASES) | st.text(max_size=10), max_size=10).map(" ".join),
)

#: The rule table tried rule by rule, as parse_workload did before the alternations.
_ONE_BY_ONE = tuple(rule.match for rule in parse._RULES)


def _outcome(text: str, steps: tuple[parse.Matcher, ...]) -> Workload | tuple[str, str, tuple]:
    try:
        return parse._parse(text, steps)
    except WorkloadError as err:
        return type(err).__name__, err.message, tuple(err.not_understood)


class TestAlternations:
    def test_regex_rules_run_as_few_alternations(self) -> None:
        """The table's regex rules are grouped (between the rules that are code)."""
        grouped = [s for s in parse._STEPS if isinstance(s, parse._Alternatives)]
        regex_rules = [r for r in parse._RULES if isinstance(r.match, parse._Rx)]
        assert sum(len(g.rules) for g in grouped) == len(regex_rules)
        assert len(parse._STEPS) < len(parse._RULES) / 5

    @pytest.mark.parametrize("phrase", _PHRASES)
    def test_each_phrase_parses_as_rule_by_rule(self, phrase: str) -> None:
        text = phrase if phrase in ("13b", "llama-3-8b") else f"13b {phrase}"
        assert _outcome(text, parse._STEPS) == _outcome(text, _ONE_BY_ONE)

    @settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(_text)
    def test_any_text_parses_as_rule_by_rule(self, text: str) -> None:
        """The same workload, or the same error, as trying every rule in turn."""
        assert _outcome(text, parse._STEPS) == _outcome(text, _ONE_BY_ONE)

    def test_a_declining_rule_hands_on_to_the_next(self) -> None:
        """The first rule whose regex matches declines: the rules after it are tried, and
        the first that takes the text wins; rules before it are not asked."""
        asked: list[str] = []

        def handler(name: str, takes: bool) -> parse.Handler:
            def handle(m: re.Match[str], raw: tuple[str, ...], draft: object) -> bool:
                asked.append(name)
                return takes

            return handle

        alternatives = parse._Alternatives(
            (
                parse._Rx("nope", handler("unmatched", True)),
                parse._Rx("foo(?: bar)?", handler("declines", False)),
                parse._Rx("baz", handler("unmatched later", True)),
                parse._Rx("foo", handler("takes", True)),
            )
        )
        toks = _scan.tokenize("x foo bar")
        assert alternatives(toks, 1, Draft()) == 1
        assert asked == ["declines", "takes"]
        assert alternatives(toks, 0, Draft()) == 0


class TestUncaptured:
    @pytest.mark.parametrize(
        ("pattern", "samples"),
        [
            (r"(?P<n>[0-9]+)(k)?", ["12", "12k", "k", ""]),
            (r"[(](a|b)\)", ["(a)", "(b)", "a", "(c)"]),
            (r"[]x(]+(?P<y>y)", ["]y", "x(y", "y", "]]"]),
            (r"[^]a](z)", ["bz", "]z", "az"]),
            (r"\((?:x)(?=y)(?<=x)", ["(xy", "(x", "x"]),
            (r"(?P<u>b|m)\b", ["b", "m", "bm"]),
        ],
    )
    def test_groups_go_and_matches_stay(self, pattern: str, samples: list[str]) -> None:
        stripped = re.compile(parse._uncaptured(pattern))
        assert stripped.groups == 0
        original = re.compile(pattern)
        for text in samples:
            a, b = original.match(text), stripped.match(text)
            assert (a and a.group()) == (b and b.group()), text

    def test_a_back_reference_fails_loudly(self) -> None:
        """A rule whose pattern refers back to its own group cannot be stripped of it."""
        with pytest.raises(re.error):
            parse._Alternatives((parse._Rx(r"(?P<a>x)(?P=a)", lambda m, raw, draft: True),))

    def test_a_group_left_fails_loudly(self) -> None:
        """A group the stripping does not see (after a "[" in a comment, read as a class)
        is caught by the count of the alternation's groups."""
        with pytest.raises(ValueError, match="keeps a capturing group"):
            parse._Alternatives((parse._Rx(r"(?#[)(x)", lambda m, raw, draft: True),))


def _normalised_by_unicode(raw: str) -> str:
    """``_scan._normalise`` without its ASCII shortcut."""
    s = unicodedata.normalize("NFKC", raw).casefold().translate(_scan._FOLD)
    s = _scan._SPACES.sub("-", _scan._DIGIT_COMMA.sub("", s))
    return s or raw.casefold()


class TestAsciiTokens:
    @settings(max_examples=500, deadline=None)
    @given(st.text(alphabet=st.characters(max_codepoint=0x7F)) | st.text(max_size=8))
    def test_the_shortcut_normalises_as_unicode_does(self, raw: str) -> None:
        assert _scan._normalise(raw) == _normalised_by_unicode(raw)

    @pytest.mark.parametrize("raw", ["A_B", "1,000", "1,0000", ",", "x\t", "a b", "Ａ", "ß"])
    def test_edge_cases(self, raw: str) -> None:
        assert _scan._normalise(raw) == _normalised_by_unicode(raw)


def _spelling_words() -> list[str]:
    """The words of every known model's name and aliases, split at spaces and dashes too."""
    words: set[str] = set()
    for arch in models.KNOWN_MODELS:
        for spelling in (arch.name, *arch.aliases):
            words.update(spelling.lower().split())
            words.update(re.split(r"[ \-]", spelling.lower()))
    return sorted(w for w in words if w)


_MODEL_WORDS = _spelling_words()
_word = st.one_of(
    st.sampled_from(_MODEL_WORDS),
    st.sampled_from(["-hf", "-it", "instruct", "meta-", "meta-llama", "/", "x/", "2049", "13b"]),
    st.text(alphabet="ab-./0123456789lmt", max_size=6),
    st.text(max_size=4),
)


class TestModelSpanBound:
    """``models.model_span_bound`` lets the parser skip runs of words that cannot spell a
    known model; it must never skip one that does."""

    @settings(max_examples=1000, deadline=None)
    @given(st.lists(_word, min_size=1, max_size=5))
    def test_no_longer_run_spells_a_model(self, words: list[str]) -> None:
        bound = models.model_span_bound(words)
        assert 0 <= bound <= len(words)
        for n in range(bound + 1, len(words) + 1):
            assert models.lookup_model(" ".join(words[:n])) is None, words[:n]

    @settings(max_examples=500, deadline=None)
    @given(st.lists(_word, min_size=1, max_size=5))
    def test_a_key_is_its_words_keys_run_together(self, words: list[str]) -> None:
        """What the bound stands on, for words without a "/"."""
        if any("/" in w for w in words):
            return
        assert models._model_key(" ".join(words)) == "".join(map(models._model_key, words))

    @pytest.mark.parametrize(
        ("text", "spelled"),
        [
            ("llama 3.1 8b instruct now", 3),
            ("llama-3.1-8b-instruct now", 1),
            ("mistral 7b lora", 2),
            ("meta-llama/llama-2-7b-hf qlora", 1),
            ("x meta-llama/llama-2-7b-hf", 2),
        ],
    )
    def test_the_bound_keeps_the_runs_that_spell_one(self, text: str, spelled: int) -> None:
        words = text.split()
        assert models.model_span_bound(words) >= spelled
        assert models.lookup_model(" ".join(words[:spelled])) is not None

    def test_the_bound_rules_out_the_usual_question(self) -> None:
        """None of a usual question's words starts a known spelling, so none is looked up."""
        words = _scan.tokenize("13B full finetune seq 2049 2 days").norm
        assert [models.model_span_bound(words[i : i + 5]) for i in range(len(words))] == [0] * 7
