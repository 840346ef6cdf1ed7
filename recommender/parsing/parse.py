"""Free text → :class:`~recommender.workload.Workload`.

The text is split into tokens (:mod:`recommender.parsing._scan`). An ordered table of
small named rules is then tried at each token; the first rule that matches consumes a span
of tokens and records what it understood in a :class:`~recommender.parsing._draft.Draft`. A token no
rule takes is either a filler word (consumed silently) or reported in ``Workload.ignored``.
Word lists and phrase patterns live in :mod:`recommender.parsing._lexicon`; defaults and validation
in :mod:`recommender.parsing._draft`; the rules for the model in
:mod:`recommender.parsing._rules_model`.

Conventions:

* A known model name sets the real architecture; a bare size (``13B``) infers a typical one.
* The first value stated for a field wins; a later, different value for the same field is
  reported as ignored rather than silently overriding it.
* Where the job runs (GPUs, counts, providers, regions) is read by
  :mod:`recommender.parsing._rules_where`.
"""

from __future__ import annotations

import re
from datetime import datetime

from recommender.errors import WorkloadError
from recommender.models import Architecture
from recommender.parsing import _fuzzy
from recommender.parsing import _lexicon as lex
from recommender.parsing import _money_words as money
from recommender.parsing import _rules_lang as lang
from recommender.parsing import _rules_model as model
from recommender.parsing import _rules_post as post
from recommender.parsing import _rules_time as timing
from recommender.parsing import _rules_work as work
from recommender.parsing import _words as words
from recommender.parsing._draft import Draft, finish
from recommender.parsing._rulekit import (
    Handler,
    _bad,
    _number,
    _Rule,
    _rx,
    _set,
    _sets,
    _whole,
    read_phrase,
    snapshot,
)
from recommender.parsing._rules_framework import FRAMEWORK_RULES
from recommender.parsing._rules_model import ask_back as ask_back_model
from recommender.parsing._rules_where import hardware as _hardware
from recommender.parsing._rules_where import provider as _provider
from recommender.parsing._rules_where import region as _region
from recommender.parsing._scan import Tokens, tokenize
from recommender.workload import (
    MAX_BUDGET_USD,
    MIN_BUDGET_USD,
    Framework,
    LossKernel,
    Method,
    Objective,
    Offload,
    Optimizer,
    Sharding,
    SpotPolicy,
    Urgency,
    Workload,
)

__all__ = ["parse_workload", "reads_calendar"]

#: Longest accepted message: a workload fits in a sentence; beyond this it is not one.
MAX_CHARS = 2000

# ------------------------------------------------------------------ handlers


def _seq(m: re.Match[str], raw: tuple[str, ...], st: Draft) -> bool:
    value = _number(m["n"], raw) * (1024 if m["k"] else 1)
    seq = _whole(value, 1, 10_000_000, raw, "Sequence length")
    return _set(st, "seq_len", seq)


def _tokens(m: re.Match[str], raw: tuple[str, ...], st: Draft) -> bool:
    amount = _number(m["n"], raw) if m.groupdict().get("n") else 0.5  # "half a billion"
    value = amount * lex.TOKEN_UNITS.get(m["u"] or "", 1.0)
    if not 0 < value <= 1e15:
        raise _bad(raw, "A token budget must be positive and below 1e15")
    return _set(st, "tokens", value)


def _budget(m: re.Match[str], raw: tuple[str, ...], st: Draft) -> bool:
    value = _number(m["n"], raw) * lex.MONEY_UNITS.get(m["u"] or "", 1.0)
    if not MIN_BUDGET_USD <= value <= MAX_BUDGET_USD:
        raise _bad(raw, "A budget must be between a cent and $1B")
    return _set(st, "budget_usd", value)


def _budget_no_currency(m: re.Match[str], raw: tuple[str, ...], st: Draft) -> bool:
    """ "budget 5k", "we have 3k": no currency named, read as dollars and said so (never a
    silent guess about money)."""
    if not _budget(m, raw, st):
        return False
    st.notes.append(f"read {' '.join(raw)!r} as US dollars (say `€5k` or `5k EUR` otherwise)")
    return True


def _duration(m: re.Match[str], raw: tuple[str, ...], st: Draft) -> bool:
    amount = _number(m["n"], raw) if m["n"] else 1.0
    hours = amount * lex.DURATION_HOURS[m["u"]]
    if not 0 < hours <= 24 * 366:
        raise _bad(raw, "A duration must be positive and at most a year")
    if m.groupdict().get("lo"):
        st.notes.append(f"read {' '.join(raw)!r} as its upper end, {hours:g} h")
    return _set(st, "duration_hours", hours)


def _micro_batch(m: re.Match[str], raw: tuple[str, ...], st: Draft) -> bool:
    value = _whole(_number(m["n"], raw), 1, 65_536, raw, "Micro-batch")
    if not _set(st, "micro_batch", value):
        return False
    # "batch 64" (not "micro-batch", not "per GPU"): with a step count it is the global
    # batch (recommender.parsing._rules_work.settle)
    st.bare_batch = m.group(0).startswith(("batch", "bs")) and "per" not in m.group(0)
    return True


def _lora_rank(m: re.Match[str], raw: tuple[str, ...], st: Draft) -> bool:
    value = _whole(_number(m["n"], raw), 1, 4096, raw, "LoRA rank")
    if not _set(st, "lora_rank", value):
        return False
    if m.group(0).startswith("lora") and st.method is None:  # "lora r=16" says LoRA too
        st.method = Method.LORA
    return True


def _optimizer(value: Optimizer) -> Handler:
    """An optimizer phrase; a ``paged`` prefix also states the paged (unified memory) saver."""

    def handle(m: re.Match[str], raw: tuple[str, ...], st: Draft) -> bool:
        if not _set(st, "optimizer", value):
            return False
        if m.group(0).startswith("paged"):
            st.paged_optimizer = True
        return True

    return handle


def _selective(m: re.Match[str], raw: tuple[str, ...], st: Draft) -> bool:
    if not _set(st, "checkpointing", True):
        return False
    st.selective_checkpointing = True
    return True


def _objective(m: re.Match[str], raw: tuple[str, ...], st: Draft) -> bool:
    return _set(st, "objective", Objective(lex.OBJECTIVE_WORDS[m["o"]]))


def _group_size(m: re.Match[str], raw: tuple[str, ...], st: Draft) -> bool:
    value = _whole(_number(m["n"], raw), 1, 1024, raw, "A GRPO group size")
    return _set(st, "group_size", value)


def _unsupported(m: re.Match[str], raw: tuple[str, ...], st: Draft) -> bool:
    st.ignored.extend(raw)
    return True


def _fine_tune(m: re.Match[str], raw: tuple[str, ...], st: Draft) -> bool:
    st.fine_tune = True
    return True


def _zero(m: re.Match[str], raw: tuple[str, ...], st: Draft) -> bool:
    stages = (Sharding.DDP, Sharding.ZERO1, Sharding.ZERO2, Sharding.ZERO3)
    if not _set(st, "sharding", stages[int(m["z"])]):
        return False
    if m.group(0).startswith(("deepspeed", "ds")) and st.framework is None:
        st.framework = Framework.DEEPSPEED
    return True


def _parallel_degree(m: re.Match[str], raw: tuple[str, ...], st: Draft) -> bool:
    word = m["k"] or m["w"] or m["v"]
    value = _whole(_number(m["n"] or m["m"] or m["x"], raw), 1, 1024, raw, "A parallel degree")
    return _set(st, lex.PARALLEL_FIELDS[word.replace("-", " ")], value)


def _parallel_search(m: re.Match[str], raw: tuple[str, ...], st: Draft) -> bool:
    st.model_parallel = True
    return True


# ------------------------------------------------------------------ the rule table
# Tried in order at each token; the first that matches consumes its span. Model names come
# first ("8x7B" is Mixtral, not hardware), and sequence, token, money and duration phrases
# come before bare sizes ("4k context", "2B tokens", "$3k" are not model sizes).

_RULES: tuple[_Rule, ...] = (
    _Rule("model name", model.model_name),
    _Rule("mixtral 8x7b", _rx(lex.MIXTRAL, model.mixtral)),
    _Rule("tp N", _rx(lex.PARALLEL_DEGREE, _parallel_degree)),
    _Rule("3d parallel", _rx(lex.PARALLEL_SEARCH, _parallel_search)),  # "3d" is not 3 days
    _Rule("family + new size", lang.family_shape),
    *work.RULES,  # work units: audio hours, images, steps at a batch, named datasets (#35)
    *post.RULES,  # practitioners' post-training and fine-tuning settings (issue #32)
    _Rule("N samples", _rx(words.DATASET, lang.h_dataset)),
    _Rule("N tokens each", _rx(words.EXAMPLE_LENGTH, lang.h_example_length)),
    _Rule("avg N tokens", _rx(words.EXAMPLE_LENGTH_AVG, lang.h_example_length)),
    _Rule("N epochs", _rx(words.EPOCHS, lang.h_epochs)),
    _Rule("epochs N", _rx(words.EPOCHS_FIRST, lang.h_epochs)),
    _Rule("by friday", _rx(words.DEADLINE, timing.h_deadline)),
    _Rule("time is worth $N/day", _rx(words.TIME_VALUE, timing.h_time_value)),
    _Rule("no rush", _rx(words.NO_RUSH, _sets("time_value", 0.0))),
    _Rule("cheapest", _rx(words.CHEAPEST, _sets("urgency", Urgency.CHEAPEST))),
    _Rule("asap", _rx(words.FASTEST, _sets("urgency", Urgency.FASTEST))),
    _Rule("we already have", lang.owned(_hardware, lang.nodes(_hardware))),
    _Rule("... we already own", _rx(words.OWNED_AFTER, lang.h_owned_after)),
    _Rule("周五前", _rx(words.DEADLINE_CJK, timing.h_deadline)),
    _Rule("€N", _rx(money.MONEY_SYMBOL, lang.h_money)),
    _Rule("N eur", _rx(money.MONEY_CURRENCY, lang.h_money)),
    _Rule("eur N", _rx(money.MONEY_CODE_FIRST, lang.h_money)),
    _Rule("预算 N", _rx(money.MONEY_CJK_BUDGET, lang.h_money)),
    _Rule("seq N", _rx(lex.SEQ_FIRST, _seq)),
    _Rule("N context", _rx(lex.SEQ_AFTER, _seq)),
    _Rule("N tokens", _rx(lex.TOKENS, _tokens)),
    _Rule("half a billion tokens", _rx(lex.TOKENS_HALF, _tokens)),
    _Rule("$N", _rx(lex.MONEY_DOLLAR, _budget)),
    _Rule("N usd", _rx(lex.MONEY_WORD, _budget)),
    _Rule("budget N", _rx(lex.MONEY_BUDGET, _budget_no_currency)),
    _Rule("have Nk", _rx(lex.MONEY_HAVE, _budget_no_currency)),
    _Rule("N hours", _rx(lex.DURATION, _duration)),
    _Rule("two days", _rx(words.DURATION_WORDS, timing.h_duration_words)),  # "a day or two"
    _Rule("a day", _rx(lex.DURATION_ONE, _duration)),
    _Rule("overnight", _rx(words.DURATION_PHRASE, timing.h_duration_phrase)),
    _Rule("global batch", _rx(lex.GLOBAL_BATCH, _unsupported)),
    _Rule("micro-batch", _rx(lex.MICRO_BATCH, _micro_batch)),
    _Rule("lora rank", _rx(lex.LORA_RANK, _lora_rank)),
    _Rule("lora on attention", _rx(lex.LORA_ATTENTION, _sets("lora_targets", "attention"))),
    _Rule("lora all linear", _rx(lex.LORA_ALL, _sets("lora_targets", "all"))),
    _Rule("4-bit", _rx(lex.FOUR_BIT, _sets("four_bit", True))),
    _Rule("no double quant", _rx(lex.NO_DOUBLE_QUANT, _sets("double_quant", False))),
    _Rule("double quant", _rx(lex.DOUBLE_QUANT, _sets("double_quant", True))),
    _Rule("pure bf16", _rx(lex.PURE_BF16, _sets("precision", "bf16-true"))),
    _Rule("bf16 mixed", _rx(lex.BF16_MIXED, _sets("precision", "bf16-mixed"))),
    _Rule("fp16", _rx(lex.FP16, _sets("precision", "fp16"))),
    _Rule("bf16", _rx(lex.BF16, _sets("precision", "bf16"))),
    _Rule("fp8", _rx(lex.FP8, _sets("precision", "fp8"))),
    _Rule("fp32", _rx(lex.FP32, _sets("precision", "fp32"))),
    _Rule("mixed", _rx(lex.MIXED, _sets("precision", "mixed"))),
    _Rule("selective ckpt", _rx(lex.SELECTIVE_CKPT, _selective)),
    _Rule("full ckpt", _rx(lex.FULL_CKPT, _sets("checkpointing", True))),
    _Rule("chunked loss", _rx(lex.CHUNKED_LOSS, _sets("loss", LossKernel.CHUNKED))),
    _Rule("fused loss", _rx(lex.FUSED_LOSS, _sets("loss", LossKernel.FUSED))),
    _Rule("optimizer in bwd", _rx(lex.OPTIMIZER_IN_BACKWARD, _sets("optimizer_in_backward", True))),
    _Rule("compile", _rx(lex.COMPILE, _sets("compile", True))),
    _Rule("eager attention", _rx(lex.EAGER_ATTENTION, _sets("flash_attention", False))),
    _Rule("flash attention", _rx(lex.FLASH_ATTENTION, _sets("flash_attention", True))),
    _Rule("activation offload", _rx(lex.ACTIVATION_OFFLOAD, _sets("activation_offload", True))),
    _Rule("objective", _rx(lex.OBJECTIVE, _objective)),
    *FRAMEWORK_RULES,
    _Rule("group size", _rx(lex.GROUP_SIZE, _group_size)),
    _Rule("N completions", _rx(lex.GROUP_COMPLETIONS, _group_size)),
    _Rule("adamw 8bit", _rx(lex.ADAMW_8BIT, _optimizer(Optimizer.ADAMW_8BIT))),
    _Rule("sgd momentum", _rx(lex.SGD_MOMENTUM, _sets("optimizer", Optimizer.SGD_MOMENTUM))),
    _Rule("sgd", _rx(lex.SGD, _sets("optimizer", Optimizer.SGD))),
    _Rule("adafactor", _rx("adafactor", _sets("optimizer", Optimizer.ADAFACTOR))),
    _Rule("lion", _rx("lion", _sets("optimizer", Optimizer.LION))),
    _Rule("adamw", _rx(lex.ADAMW, _optimizer(Optimizer.ADAMW))),
    _Rule("paged optimizer", _rx(lex.PAGED, _sets("paged_optimizer", True))),
    _Rule("no checkpointing", _rx(lex.NO_CHECKPOINTING, _sets("checkpointing", False))),
    _Rule("checkpointing", _rx(lex.CHECKPOINTING, _sets("checkpointing", True))),
    _Rule("no offload", _rx(lex.NO_OFFLOAD, _sets("offload", Offload.NONE))),
    _Rule("offload params", _rx(lex.OFFLOAD_PARAMS, _sets("offload", Offload.PARAMS))),
    _Rule("offload optimizer", _rx(lex.OFFLOAD_OPTIMIZER, _sets("offload", Offload.OPTIMIZER))),
    _Rule("fsdp grad op", _rx(lex.FSDP_GRAD_OP, _sets("sharding", Sharding.FSDP_GRAD_OP))),
    _Rule("hsdp", _rx(lex.HSDP, _sets("sharding", Sharding.HSDP))),
    _Rule("fsdp", _rx(lex.FSDP, _sets("sharding", Sharding.FSDP))),
    _Rule("zero N", _rx(lex.ZERO, _zero)),
    _Rule("ddp", _rx(lex.DDP, _sets("sharding", Sharding.DDP))),
    _Rule("spot only", _rx(lex.SPOT_ONLY, _sets("spot", SpotPolicy.ONLY))),
    _Rule("no spot", _rx(lex.NO_SPOT, _sets("spot", SpotPolicy.NEVER))),
    _Rule("spot ok", _rx(lex.SPOT_OK, _sets("spot", SpotPolicy.ALLOW))),
    _Rule("provider", _rx(lex.PROVIDER, _provider)),
    _Rule("region", _rx(lex.REGION, _region)),
    _Rule("N nodes", lang.nodes(_hardware)),
    _Rule("hardware", _hardware),
    _Rule("4090", lang.bare_gpu),
    _Rule("全量微调", _rx("全量微调|全参微调|全参数微调", lang.h_cjk_method(Method.FULL))),
    _Rule("预训练", _rx("继续预训练|预训练", lang.h_cjk_method(Method.PRETRAIN))),
    _Rule("微调", _rx("微调", lang.h_cjk_method(None))),
    _Rule("chinese filler", _rx(lang.CJK_FILLER, lang.h_filler)),
    _Rule("qlora", _rx(lex.QLORA, _sets("method", Method.QLORA))),
    _Rule("lora", _rx(lex.LORA, _sets("method", Method.LORA))),
    _Rule("pretrain", _rx(lex.PRETRAIN, _sets("method", Method.PRETRAIN))),
    _Rule("full fine-tune", _rx(lex.FULL, _sets("method", Method.FULL))),
    _Rule("fine-tune", _rx(lex.FINE_TUNE, _fine_tune)),
    _Rule("size", _rx(lex.SIZE, model.bare_size)),
    _Rule("N params", _rx(lex.SIZE_PARAMS, model.bare_size)),
)


def parse_workload(
    text: str, now: datetime | None = None, model: Architecture | None = None
) -> Workload:
    """Turn a free-text job description into a validated :class:`Workload`.

    ``"13B full finetune 2 days"``, ``"llama-3-70b qlora on 2B tokens under $3k"``,
    ``"meta-llama/Llama-2-7b-hf qlora seq 4k batch 4 on 1x A100-40GB spot ok aws only"``.
    ``now`` is the time deadlines ("by Friday") count from; without it they are refused.
    The parser never reads the clock: the bot and the CLI pass it. ``model`` is an
    architecture read from the user's ``config.json`` (:func:`recommender.hf_config.
    architecture_from_config`): it is the model, and a name in the text does not replace it.

    Raises:
        WorkloadError: the text names no model, is empty or too long, states a value out
            of range, or has a number we cannot place (``UnknownGpuError`` when it names an
            accelerator we do not know).
    """
    if len(text) > MAX_CHARS:
        raise WorkloadError(
            f"That message is {len(text):,} characters long; describe the job in under "
            f"{MAX_CHARS:,}."
        )
    toks = tokenize(text)
    if not toks.raw:
        raise WorkloadError("The message is empty: describe the training job.")
    st, unknown = _read(toks, now, model)
    fixes = {i: fix for i in unknown if (fix := _fuzzy.correct(toks.norm[i])) is not None}
    if fixes:
        norm = tuple(fixes[i][0] if i in fixes else n for i, n in enumerate(toks.norm))
        fixed = lang.retokenize(toks.raw, norm)
        st, unknown = _read(fixed, now, model)
        read = [f"read {toks.raw[i]!r} as {name}" for i, (_, name) in fixes.items()]
        st.notes[:0] = [note for i, note in zip(fixes, read, strict=True) if i not in unknown]
        toks = fixed
    ask_back_model(toks, unknown, st)
    lang.ask_back(toks, unknown, lambda t, i: _readable(t, i, now))
    work.settle(st)
    post.settle(st)
    lang.settle(st)
    return finish(st, text)


_CALENDAR = tuple(
    re.compile(rf"(?:^| )(?:{pattern})(?= |$)") for pattern in (words.DEADLINE, words.DEADLINE_CJK)
)


def reads_calendar(text: str) -> bool:
    """Whether ``text`` names a calendar deadline ("by Friday", "before the 15th", "周五前"),
    which depends on the asker's time zone; a span of time ("in 3 weeks") does not."""
    norm = tokenize(text[:MAX_CHARS]).text
    return any(pattern.search(norm) for pattern in _CALENDAR)


def _read(
    toks: Tokens, now: datetime | None, model: Architecture | None = None
) -> tuple[Draft, list[int]]:
    """Apply the rules along the tokens: the draft, and the indices no rule took."""
    st = Draft(now=now, cjk=any("\u4e00" <= c <= "\u9fff" for c in toks.text))
    st.model = model
    unknown: list[int] = []
    i = 0
    while i < len(toks.raw):
        before = snapshot(st)
        for rule in _RULES:
            if used := rule.match(toks, i, st):
                read_phrase(st, before, " ".join(toks.raw[i : i + used]))
                i += used
                break
        else:
            if toks.norm[i] not in lex.FILLER:
                st.ignored.append(toks.raw[i])
                unknown.append(i)
            i += 1
    return st, unknown


def _readable(toks: Tokens, i: int, now: datetime | None) -> bool:
    """Whether some rule reads the word at ``i`` when nothing was stated before it."""
    for rule in _RULES:
        try:
            if rule.match(toks, i, Draft(now=now)):
                return True
        except WorkloadError:
            return True
    return False
