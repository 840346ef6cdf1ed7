"""Parser rules for the way people write: dataset sizes and epochs, money in other
currencies, owned GPUs, node counts, and Chinese (time has its own module,
:mod:`recommender.parsing._rules_time`).

Each ``h_*`` function is a handler for :func:`recommender.parsing.parse._rx` (a regex match, the raw
tokens, the draft → taken or not); :func:`settle` turns a dataset size into a token budget
once every word has been read. Vocabulary lives in :mod:`recommender.parsing._words`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import replace

from recommender.errors import WorkloadError
from recommender.gpus import try_normalize
from recommender.models import family_models, infer_architecture
from recommender.parsing import _lexicon as lex
from recommender.parsing import _money_words as money
from recommender.parsing import _words as w
from recommender.parsing._draft import Draft
from recommender.parsing._rulekit import Matcher, _bad, _number, _set
from recommender.parsing._scan import Tokens
from recommender.pricing.fx import fx_table, to_usd
from recommender.workload import MAX_BUDGET_USD, MIN_BUDGET_USD, Method

__all__ = [
    "DEFAULT_EXAMPLE_TOKENS",
    "ask_back",
    "family_shape",
    "nodes",
    "retokenize",
    "settle",
]

#: Tokens per fine-tuning example when the length is not stated: TRL's SFTTrainer truncates
#: at ``max_length``, whose default is min(tokenizer.model_max_length, 1024)
#: (huggingface.co/docs/trl/sft_trainer, "Make sure to pass the correct value for
#: max_length"); so 1,024 is what a default fine-tuning run pads or truncates examples to.
#: For pretraining an example is one packed sequence of the training sequence length.
DEFAULT_EXAMPLE_TOKENS = 1024


def _num(text: str, raw: tuple[str, ...]) -> float:
    """A number in digits or words (``two``, ``twenty-four``)."""
    value = w.NUMBER_WORDS.get(text.replace("-", " "))
    return float(value) if value is not None else _number(text, raw)


# ------------------------------------------------------------------ dataset sizes


def _length(m: re.Match[str], raw: tuple[str, ...]) -> int | None:
    groups = m.groupdict()
    number, k = next(
        (
            (groups[n], groups.get(u))
            for n, u in (("ln", "lk"), ("ln3", "lk3"), ("ln2", "lk2"))
            if groups.get(n)
        ),
        (None, None),
    )
    if not number:
        return None
    value = _num(number, raw) * (1024 if k else 1)
    if not 1 <= value <= 10_000_000:
        raise _bad(raw, "An example length must be from 1 to 10M tokens")
    return round(value)


def h_dataset(m: re.Match[str], raw: tuple[str, ...], st: Draft) -> bool:
    count = _num(m["n"], raw) * w.COUNT_UNITS.get(m["u"] or "", 1.0)
    if not 1 <= count <= 1e12:
        raise _bad(raw, "A dataset must have from 1 to 1T examples")
    length = _length(m, raw)
    if not _set(st, "examples", count):
        return False
    return length is None or _set(st, "example_len", length)


def h_example_length(m: re.Match[str], raw: tuple[str, ...], st: Draft) -> bool:
    return _set(st, "example_len", _length(m, raw))


def h_epochs(m: re.Match[str], raw: tuple[str, ...], st: Draft) -> bool:
    epochs = _num(m["n"], raw)
    if not 0 < epochs <= 1000:
        raise _bad(raw, "Epochs must be more than 0 and at most 1,000")
    return _set(st, "epochs", epochs)


def _epochs(epochs: float) -> str:
    return "1 epoch" if epochs == 1 else f"{epochs:g} epochs"


def _tokens(tokens: float) -> str:
    for unit, scale in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("k", 1e3)):
        if tokens >= scale:
            return f"{tokens / scale:,.4g}{unit}"
    return f"{tokens:,.0f}"


def settle(st: Draft) -> None:
    """A dataset size and epochs become a token budget, each assumption stated; a model's
    approximation note and its tokens per example (images, audio) are stated too."""
    model = st.model
    if model is not None and model.note:
        st.notes.append(f"{model.name}: {model.note}")
    if model is not None and model.default_seq and st.seq_len is None:
        st.seq_len = model.default_seq
        st.notes.append(f"seq {model.default_seq}: tokens per example for {model.name}")
    epochs = st.epochs or 1.0
    if st.eval_examples is not None:
        length = st.example_len or st.seq_len or DEFAULT_EXAMPLE_TOKENS
        st.eval_tokens = st.eval_examples * length
        st.notes.append(
            f"evaluation: {st.eval_examples:,.0f} sequences × {length:,} tokens, forward passes "
            "once an epoch"
        )
    if st.examples is not None:
        if st.example_len is not None:
            length, said = st.example_len, "as given"
            if st.seq_len is None:
                st.seq_len = length
                st.notes.append(f"seq {length}: the example length (say `seq 4k` to change)")
        elif model is not None and model.default_seq:
            length = st.seq_len or model.default_seq
            said = f"one example for {model.name}"
        elif st.method is Method.PRETRAIN:
            length = st.seq_len or 2048
            said = "assumed: a pretraining example is one packed sequence"
        elif st.seq_len is not None:
            # The sequence the user set bounds each example: costed full, the upper bound of
            # the bill (a shorter average is for the user to say, never guessed down)
            length, said = st.seq_len, "each filling the seq stated"
            st.notes.append(
                f"assumed {length:,} tokens per example, the seq stated, an upper bound "
                "(say `of 512 tokens` to change)"
            )
        else:
            length = DEFAULT_EXAMPLE_TOKENS
            said = "assumed"
            st.notes.append(
                f"assumed {length:,} tokens per example, TRL SFTTrainer's default max_length "
                "(say `of 512 tokens` to change)"
            )
        st.dataset_tokens = st.examples * length
        # A budget beside a dataset caps the run, it does not buy epochs: "DPO on 100k pairs,
        # budget $200" means one pass within $200, not as many passes as $200 buys (64 of
        # them, on the bundled catalog); a budget alone still buys the work (ranking/work.py).
        tokens = st.examples * length * epochs
        if st.epochs is None:
            st.notes.append("1 epoch (say `3 epochs` to change)")
        if not _set(st, "tokens", min(tokens, 1e15)):
            st.notes.append("the dataset size was ignored: a token budget was stated too")
            return
        st.notes.append(
            f"{st.examples:,.0f} examples × {length:,} tokens ({said}) × {_epochs(epochs)} "
            f"= {_tokens(tokens)} tokens"
        )
    elif st.epochs is not None:
        if st.tokens is not None:
            st.tokens = min(st.tokens * epochs, 1e15)
            st.notes.append(
                f"{_epochs(epochs)} over the tokens stated = {_tokens(st.tokens)} tokens"
            )
        else:
            st.notes.append(
                f"{_epochs(epochs)}: no dataset size given, so no token budget "
                "(say `over 100k samples of 512 tokens`)"
            )
    elif st.example_len is not None and st.seq_len is None:
        st.seq_len = st.example_len
        st.notes.append(f"seq {st.example_len}: the example length (say `seq 4k` to change)")


# ------------------------------------------------------------------ money


def _currency(m: re.Match[str], st: Draft, raw: tuple[str, ...]) -> str:
    groups = m.groupdict()
    word = (groups.get("cur") or groups.get("cur2") or "").replace("-", " ")
    if word:
        return money.CURRENCY_WORDS.get(word) or {"rmb": "CNY"}.get(word, word.upper())
    if not groups.get("sym"):  # "预算 5000": 元 or dollars? never a silent guess on money
        raise WorkloadError(
            f"{' '.join(raw)!r}: which currency is the budget in?",
            not_understood=raw,
            hint='Try: "预算5000元", "预算5000美元" or "budget $5000"',
        )
    code = money.CURRENCY_SYMBOLS[groups["sym"]]
    if code != "?":
        return code
    if st.cjk:  # "¥500" in a Chinese message: yuan
        st.notes.append("read ¥ as Chinese yuan (CNY); write `JPY` for yen")
        return "CNY"
    raise WorkloadError(
        f"{' '.join(raw)!r}: is ¥ Chinese yuan or Japanese yen?",
        not_understood=raw,
        hint='Try: "budget ¥20000 CNY" or "budget ¥300000 JPY"',
    )


def h_money(m: re.Match[str], raw: tuple[str, ...], st: Draft) -> bool:
    amount = _num(m["n"], raw) * money.MONEY_UNITS.get(m["u"] or "", 1.0)
    code = _currency(m, st, raw)
    known = fx_table().per_eur
    if code not in known:  # "budget 1,200 CHF": never priced as dollars
        raise WorkloadError(
            f"{' '.join(raw)!r}: I have no exchange rate for {code}, so I can't tell what "
            "the budget buys.",
            not_understood=tuple(r for r in raw if r.upper() == code) or raw,
            hint=f'Try: the budget in {", ".join(sorted(known))} ("budget $1,300").',
        )
    usd = amount if code == "USD" else to_usd(amount, code)
    if not MIN_BUDGET_USD <= usd <= MAX_BUDGET_USD:
        raise _bad(raw, "A budget must be between a cent and $1B")
    if not _set(st, "budget_usd", usd):
        return False
    if code != "USD":
        table = fx_table()
        st.notes.append(f"budget {amount:,.0f} {code} ≈ ${usd:,.0f} at the {table.describe()}")
        stale = table.stale_text(st.now) if st.now is not None else None
        if stale is not None:
            st.warnings.append(f"budget {amount:,.0f} {code}: {stale}")
    return True


def owned(*hardware: Matcher) -> Matcher:
    """``we already have 4x A100``, ``我们已经有4张A100``: the hardware that follows is the
    team's own. Only the words before the hardware are taken; ``hardware`` (the parser's
    hardware matchers: ``8x H100``, ``2 nodes of 8x H100``) read the rest, and are tried
    here on a scratch draft first."""
    pattern = re.compile(rf"(?:{w.OWNED})(?= |$)")

    def match(toks: Tokens, i: int, st: Draft) -> int:
        m = pattern.match(toks.text, toks.starts[i])
        if m is None:
            return 0
        end = toks.index_after(m.end())
        if end >= len(toks.norm) or not any(
            read(toks, end, Draft(now=st.now, cjk=st.cjk)) for read in hardware
        ):
            return 0
        st.owned = True
        return end - i

    return match


def h_owned_after(m: re.Match[str], raw: tuple[str, ...], st: Draft) -> bool:
    """``4x 4090 we already own``: hardware stated before is the team's (none stated: not
    this rule's words)."""
    if st.gpu_id is None and st.gpu_count is None:
        return False
    st.owned = True
    return True


# ------------------------------------------------------------------ counts


def nodes(hardware: Matcher) -> Matcher:
    """``2 nodes of 8x H100``, ``4 nodes``, ``a node``: GPUs = nodes × GPUs per node (8 when
    not said). ``hardware`` is the parser's hardware matcher, reused for what follows."""
    pattern = re.compile(rf"(?:{w.NODES})(?= |$)")

    def match(toks: Tokens, i: int, st: Draft) -> int:
        m = pattern.match(toks.text, toks.starts[i])
        if m is None:
            return 0
        end = toks.index_after(m.end())
        raw = toks.raw[i:end]
        count = _num(m["n"], raw)
        if not 1 <= count <= 512 or count != int(count):
            raise _bad(raw, "The node count must be a whole number from 1 to 512")
        j = end + (1 if end < len(toks.norm) and toks.norm[end] in ("of", "with", "x") else 0)
        scratch = Draft()
        used = hardware(toks, j, scratch) if j < len(toks.norm) else 0
        per = scratch.gpu_count if used else None
        gpus = int(count) * (per or w.GPUS_PER_NODE)
        gpu_id = scratch.gpu_id if used else None
        if not (_set(st, "gpu_count", gpus) and (gpu_id is None or _set(st, "gpu_id", gpu_id))):
            return 0
        if per is None:
            st.notes.append(
                f"read {' '.join(raw)!r} as {gpus} GPUs ({w.GPUS_PER_NODE} per node; "
                "say `2 nodes of 4x A100` to change)"
            )
        return (j + used if used else end) - i

    return match


def bare_gpu(toks: Tokens, i: int, st: Draft) -> int:
    """A GPU named by its number alone: ``4090``, ``3090`` (the hardware rule wants a count,
    a prefix or letters first)."""
    word = toks.norm[i]
    if not word.isdigit():
        return 0
    gpu = try_normalize(word)
    return 1 if gpu is not None and _set(st, "gpu_id", gpu) else 0


# ------------------------------------------------------------------ family shapes

_SIZE = re.compile(r"(?P<n>[0-9]+(?:\.[0-9]+)?)(?P<u>[bm])")


def family_shape(toks: Tokens, i: int, st: Draft) -> int:
    """``llama 33b``: a family word with a size it never had. The size sets the depth and
    width (:func:`infer_architecture`); the family's nearest model sets what the family
    shares: vocabulary, tied embeddings, block type and the query/key-value head ratio."""
    if st.model is not None or i + 1 >= len(toks.norm):
        return 0
    family, size = family_models(toks.norm[i]), _SIZE.fullmatch(toks.norm[i + 1])
    if not family or size is None:
        return 0
    if any(a.image_tokens or a.tokens_per_audio_second for a in family):
        return 0  # no text shape stands for an image or speech model: the word is asked about
    params = float(size["n"]) * (1e9 if size["u"] == "b" else 1e6)
    if not 1e8 <= params <= 1e13:
        return 0
    ref = min(family, key=lambda a: abs(math.log(a.params / params)))
    base = infer_architecture(params)
    group = max(1, ref.heads // ref.kv_heads)
    kv = base.heads // group if base.heads % group == 0 else base.kv_heads
    st.model = replace(
        base,
        name=f"{base.name.split(' ')[0]} (inferred, shaped like {ref.name})",
        vocab=ref.vocab,
        tied_embeddings=ref.tied_embeddings,
        block=ref.block,
        kv_heads=kv,
    )
    st.notes.append(
        f"no {toks.raw[i]} model of {toks.raw[i + 1]} is known: layers and width inferred "
        f"from the size, vocabulary and attention groups from {ref.name}"
    )
    return 2


# ------------------------------------------------------------------ Chinese


def h_cjk_method(method: Method | None) -> Callable[[re.Match[str], tuple[str, ...], Draft], bool]:
    def handle(m: re.Match[str], raw: tuple[str, ...], st: Draft) -> bool:
        if method is None:
            st.fine_tune = True
            return True
        return _set(st, "method", method)

    return handle


def h_filler(m: re.Match[str], raw: tuple[str, ...], st: Draft) -> bool:
    return True


#: Chinese words that carry no meaning for the job (pronouns, particles, "train", "use").
CJK_FILLER = lex.alt(
    """
    用 使用 训练 的 我 我们 要 想 在 上 和 跟 请 问 多少 钱 需要 吗 么 呢 吧 什么 怎么
    一下 推荐 哪个 最 便宜 模型 跑 做 个 大概 左右 内 以内 之内 完成 完 把 对 给 帮
    租 云 机器 数据 数据集 共 总共 预计 大约 约 了 啊 希望
    """.split()  # noqa: SIM905 (a word list reads better as text)
)


# ------------------------------------------------------------------ unknown quantities


def retokenize(raw: tuple[str, ...], norm: tuple[str, ...]) -> Tokens:
    """Tokens with new normalised forms (typo corrections), the raw words as typed."""
    starts, offset = [], 0
    for n in norm:
        starts.append(offset)
        offset += len(n) + 1
    return Tokens(raw, norm, " ".join(norm), tuple(starts))


#: A word that reads as a quantity: a number, an amount of money, a duration ("3.5", "100k",
#: "€5", "12hrs", "2x").
_QUANTITY = re.compile(r"[$€£¥￥~≈]?[-+]?\.?[0-9][0-9.,]*[a-z%]{0,6}[$€£¥￥]?")


#: Words that end an amount written in words ("five hundred dollars").
_HUNDREDS = frozenset({"hundred", "thousand", "million", "grand"})


def ask_back(toks: Tokens, unknown: list[int], readable: Callable[[Tokens, int], bool]) -> None:
    """A quantity no rule understood is asked about, never dropped: pricing a job without it
    could answer a different question. One that a rule reads (``readable``) but that
    contradicts an earlier value (a second model size) stays reported in ``ignored``."""
    for i in unknown:
        spelt = i > 0 and (toks.norm[i - 1] in w.NUMBER_WORDS or toks.norm[i - 1] in _HUNDREDS)
        if toks.norm[i] in money.CURRENCY_WORDS and spelt:
            # "budget five hundred dollars": an amount in words is asked about, never dropped
            raise WorkloadError(
                f"I couldn't read the amount of money around {toks.raw[i]!r}, so I won't guess.",
                not_understood=(toks.raw[i],),
                hint='Try: the amount in digits, as in "budget $500" or "500 euros".',
            )
        if not _QUANTITY.fullmatch(toks.norm[i]) or readable(toks, i):
            continue
        raw = toks.raw[i]
        raise WorkloadError(
            f"I don't know what {raw!r} stands for, so I won't guess.",
            not_understood=(raw,),
            hint='Try: "13B lora 2 days": say what the number is, as in "2 days", "$500", '
            '"on 2B tokens", "100k samples", "on 8x H100" or "seq 4k".',
        )
