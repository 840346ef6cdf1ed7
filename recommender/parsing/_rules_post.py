"""Parser rules for fine-tunes and post-training as practitioners write them (issue #32).

LoRA alpha and target modules, 8-bit bases, per-device batch, gradient accumulation and
global batch, max length and packing, steps, reward-model sizes, completion lengths, GPUs set
aside for a vLLM engine, the framework's name. A number that is understood but does not
change the estimate (alpha, learning rate, beta, warmup) is shown as read, never refused.

:data:`RULES` go into :mod:`recommender.parsing.parse`'s table ahead of the general phrases;
:func:`settle` turns steps, prompts × samples per prompt and preference pairs into the
sequences the policy trains, before :func:`recommender.parsing._rules_lang.settle` makes tokens.
"""

from __future__ import annotations

import re

from recommender.estimation.rollout import DEFAULT_PROMPT_TOKENS
from recommender.models import infer_architecture
from recommender.parsing._draft import Draft
from recommender.parsing._rulekit import Handler, _bad, _number, _Rule, _rx, _set, _sets, _whole
from recommender.parsing._rules_framework import RL_FRAMEWORK_RULE
from recommender.workload import Method, Objective

__all__ = ["RULES", "settle"]

_N = r"(?P<n>[0-9]+(?:\.[0-9]+)?(?:e[+-]?[0-9]+)?) ?(?P<k>k)?"
_OF = r"(?: of| is| to)?"
_S = r"[-_ ]"
_GPUS = r"(?:gpus?|cards?|devices?)"
#: A config key's dotted prefix: verl's ``data.max_response_length``, ``actor_rollout_ref.…``.
_KEY = r"(?:[a-z0-9-]+\.)*"
_GEN = r"(?:vllm|generation|generator|inference|rollout|sampling|sampler)"

#: Settings practitioners state that do not change time or memory: read and shown.
_READ_ONLY = (
    rf"(?P<what>{_KEY}(?:(?:lora{_S})?alpha|(?:lora{_S})?dropout|lr|learning{_S}rate|beta|"
    rf"warm{_S}?up(?:{_S}(?:ratio|steps))?|weight{_S}decay|kl(?:{_S}coef(?:ficient)?)?|"
    rf"gamma|temperature|clip(?:{_S}range)?|seed|eval{_S}steps|save{_S}steps|"
    rf"logging{_S}steps|(?:un)?desirable{_S}weight|rpo{_S}alpha|label{_S}smoothing|"
    rf"max{_S}grad{_S}norm|n{_S}gpus{_S}per{_S}node|nnodes|save{_S}total{_S}limit|"
    rf"top{_S}p|top{_S}k|rollout{_S}micro{_S}batch{_S}size|micro{_S}rollout{_S}batch{_S}size|"
    rf"ppo{_S}(?:mini|micro){_S}batch{_S}size(?:{_S}per{_S}gpu)?|tensor{_S}model{_S}"
    rf"parallel{_S}size|gpu{_S}memory{_S}utili[sz]ation|"
    # an encoder-decoder's target length ("input 512 target 128"): the input is the sequence
    rf"(?:max{_S})?target(?:{_S}(?:seq{_S})?len(?:gth)?)?))"
    rf"{_OF} ?(?P<v>-?[0-9.]+(?:e[+-]?[0-9]+)?)"
)


def _int(
    m: re.Match[str], raw: tuple[str, ...], what: str, high: float = 1e9, kilo: int = 1024
) -> int:
    """A whole number; ``k`` is 1,024 for a length ("4k tokens") and 1,000 for a count."""
    value = _number(m["n"], raw) * (kilo if m.groupdict().get("k") else 1)
    return _whole(value, 1, high, raw, what)


def _count(attr: str, what: str, high: float = 1e9, kilo: int = 1024) -> Handler:
    return lambda m, raw, st: _set(st, attr, _int(m, raw, what, high, kilo))


def _read_only(m: re.Match[str], raw: tuple[str, ...], st: Draft) -> bool:
    st.notes.append(f"read {' '.join(raw)!r}: understood, it does not change the estimate")
    return True


def _split_gpus(m: re.Match[str], raw: tuple[str, ...], st: Draft) -> bool:
    """``6 training GPUs + 2 vLLM GPUs``: 8 GPUs, 2 of them generating."""
    train = _whole(_number(m["t"], raw), 1, 4096, raw, "The GPU count")
    gen = _whole(_number(m["g"], raw), 1, 4096, raw, "The GPU count")
    if not (_set(st, "gpu_count", train + gen) and _set(st, "generation_gpus", gen)):
        return False
    st.notes.append(f"{train + gen} GPUs: {train} train, {gen} generate (vLLM)")
    return True


def _gen_gpus(m: re.Match[str], raw: tuple[str, ...], st: Draft) -> bool:
    gen = _whole(_number(m["g"] or m["g2"], raw), 1, 4096, raw, "The GPU count")
    return _set(st, "generation_gpus", gen)


def _eval_set(m: re.Match[str], raw: tuple[str, ...], st: Draft) -> bool:
    """``2k eval examples``: a count of examples, so k is a thousand."""
    count = _number(m["n"], raw) * (1000 if m.groupdict().get("k") else 1)
    return _set(st, "eval_examples", float(_whole(count, 1, 1e9, raw, "An eval set")))


def _reward(m: re.Match[str], raw: tuple[str, ...], st: Draft) -> bool:
    size = m["sz"] or m["sz2"]
    params = _number(size[:-1], raw) * (1e9 if size[-1] == "b" else 1e6)
    if not 1e6 <= params <= 1e13:
        raise _bad(raw, "A reward model must have between 1M and 10T parameters")
    return _set(st, "reward_params", params)


def _eight_bit(m: re.Match[str], raw: tuple[str, ...], st: Draft) -> bool:
    st.notes.append(
        f"read {' '.join(raw)!r}: an 8-bit base is priced as LoRA on a 16-bit base "
        "(say `4-bit` for QLoRA)"
    )
    return _set(st, "method", Method.LORA) if st.method is None else True


def _targets(m: re.Match[str], raw: tuple[str, ...], st: Draft) -> bool:
    mlp = any(p in m["mods"] for p in ("gate", "up", "down"))
    return _set(st, "lora_targets", "all" if mlp else "attention")


def _epochs(m: re.Match[str], raw: tuple[str, ...], st: Draft) -> bool:
    epochs = _number(m["n"], raw)
    if not 0 < epochs <= 1000:
        raise _bad(raw, "Epochs must be more than 0 and at most 1,000")
    return _set(st, "epochs", epochs)


def _pairs(m: re.Match[str], raw: tuple[str, ...], st: Draft) -> bool:
    count = _number(m["n"], raw) * {"k": 1e3, "m": 1e6}.get(m["u"] or "", 1.0)
    if not 1 <= count <= 1e12:
        raise _bad(raw, "A dataset must have from 1 to 1T examples")
    if m["ln"] is not None:  # "30k preference pairs at 2048 tokens": each sequence's length
        length = _number(m["ln"], raw) * (1024 if m["lk"] else 1)
        if not _set(st, "example_len", _whole(length, 1, 10_000_000, raw, "A pair's length")):
            return False
    return _set(st, "examples", count)


def _engines(m: re.Match[str], raw: tuple[str, ...], st: Draft) -> bool:
    st.notes.append(f"read {' '.join(raw)!r}: say `N vLLM GPUs` to set GPUs aside for generation")
    return _set(st, "engine", "vllm")


def _recipe(m: re.Match[str], raw: tuple[str, ...], st: Draft) -> bool:
    """torchtune's recipe names say the method: ``lora_finetune_single_device``."""
    method = {"lora": Method.LORA, "qlora": Method.QLORA, "full": Method.FULL}[m["r"]]
    return _set(st, "method", method)


def _actor(m: re.Match[str], raw: tuple[str, ...], st: Draft) -> bool:
    """``OPT-1.3b actor``: an unlisted family's size names the policy, as a bare size does."""
    size = m["sz"]
    params = _number(size[:-1], raw) * (1e9 if size[-1] == "b" else 1e6)
    if not 1e6 <= params <= 1e13:
        raise _bad(raw, "A model size must be between 1M and 10T parameters")
    return _set(st, "model", infer_architecture(params))


def _ds_step(m: re.Match[str], raw: tuple[str, ...], st: Draft) -> bool:
    """DeepSpeed-Chat's stages: step 3 is the PPO stage; steps 1 and 2 train as SFT."""
    if m["s"] == "3":
        return _set(st, "objective", Objective.PPO)
    return _read_only(m, raw, st)


def _rlvr(m: re.Match[str], raw: tuple[str, ...], st: Draft) -> bool:
    if not _set(st, "objective", Objective.GRPO):
        return False
    st.notes.append("RLVR: priced as GRPO (sampled groups, a verifiable reward, no critic)")
    return True


_MODS = r"(?:q|k|v|o|gate|up|down)[-_]proj"


def _each(name: str, patterns: tuple[str, ...], handle: Handler) -> tuple[_Rule, ...]:
    """One rule per pattern (a regex may not name a group twice)."""
    return tuple(_Rule(name, _rx(p, handle)) for p in patterns)


RULES: tuple[_Rule, ...] = (
    _Rule(
        "N train + M vllm gpus",
        _rx(
            rf"(?P<t>[0-9]+) (?:training|train|trainer|learner|actor|policy) {_GPUS}"
            rf"(?: (?:and|plus|with))? (?P<g>[0-9]+) {_GEN}(?: engine)? {_GPUS}",
            _split_gpus,
        ),
    ),
    _Rule(
        "M vllm gpus",
        _rx(
            rf"(?P<g>[0-9]+) {_GEN} {_GPUS}|(?P<g2>[0-9]+) {_GPUS} for {_GEN}(?: engine)?",
            _gen_gpus,
        ),
    ),
    *_each(
        "N samples per prompt",
        (
            rf"{_N} (?:samples|completions|generations|gens|rollouts|responses|answers)"
            r"(?: per |/)prompt",
            # "每个prompt采样8次", "每个问题生成8个回答": 8 samples for each prompt
            rf"每 ?个? ?(?:prompt|问题|题|提示词?) ?(?:采样|生成) ?{_N}(?: ?(?:次|个))?"
            r"(?: ?(?:回答|答案|样本))?",
            # "每个问题8个回答": 8 answers for each question
            rf"每 ?个? ?(?:prompt|问题|题|提示词?) ?{_N} ?个? ?(?:回答|答案|样本)",
        ),
        _count("group_size", "A GRPO group size", 1024),
    ),
    _Rule(
        "rollout.n",
        _rx(
            rf"{_KEY}(?:rollout[-_. ]n|g|n{_S}samples{_S}per{_S}prompt|num{_S}generations|"
            rf"n{_S}generations|group{_S}size){_OF} ?{_N}",
            _count("group_size", "A GRPO group size", 1024),
        ),
    ),
    _Rule(
        "num_train_epochs",
        _rx(rf"{_KEY}(?:num{_S})?(?:train{_S})?(?:total{_S})?epochs{_OF} ?{_N}", _epochs),
    ),
    _Rule(
        "N preference pairs",
        _rx(
            r"(?:(?:on|over|with|of) )?"
            r"(?P<n>[0-9]+(?:\.[0-9]+)?) ?(?P<u>k|m)? (?:preference|comparison|chosen[-/]rejected|"
            r"dpo|paired) (?:pairs|examples|samples|comparisons)"
            r"(?:(?: of| at| x| with| averaging| each)? (?P<ln>[0-9]+(?:\.[0-9]+)?) ?(?P<lk>k)?"
            r"[- ]?tok(?:en)?s?(?: each)?)?",
            _pairs,
        ),
    ),
    _Rule("vllm engines", _rx(r"[0-9]+ vllm engines?", _engines)),
    _Rule("colocate", _rx(r"(?:vllm )?colocated?(?: mode)?", _sets("engine", "vllm"))),
    _Rule(
        "load_in_4bit",
        _rx(rf"load{_S}in{_S}4{_S}?bit(?: true)?|bnb{_S}4bit", _sets("four_bit", True)),
    ),
    _Rule("ds-chat step", _rx(r"(?:rlhf )?step ?(?P<s>[123])(?: rlhf)?", _ds_step)),
    RL_FRAMEWORK_RULE,
    _Rule("vllm", _rx(r"vllm(?: engine| generation| rollouts?)?", _sets("engine", "vllm"))),
    _Rule(
        "hf generate",
        _rx(r"(?:hf|transformers|huggingface)[- ]generate|model\.generate", _sets("engine", "hf")),
    ),
    *_each(
        "completion length",
        (
            rf"{_KEY}(?:max{_S})?(?:completion|response|generation|generate|output|answer)"
            rf"(?:{_S}max)?(?:{_S}len(?:gth)?)?(?:{_S}tokens)?{_OF} ?{_N}(?: tokens)?",
            rf"{_N}{_S}?tok(?:en)?s? (?:completions?|responses?|generations?)",
            rf"{_N} (?:completion|response|generation|generated) (?:tok(?:en)?s|len(?:gth)?)",
            rf"(?:completions?|responses?|generations?) (?:of|at|up to) {_N}[- ]?tok(?:en)?s",
            rf"generate{_S}max{_S}len ?{_N}",
            rf"{_KEY}max{_S}new{_S}tok(?:en)?s{_OF} ?{_N}",  # HF generate's max_new_tokens
            rf"{_N} max{_S}new{_S}tok(?:en)?s",
            rf"{_N} max{_S}(?:completion|response|generation){_S}tok(?:en)?s",
            rf"{_N} (?:completion|response)",  # "1k completion" (plural "8 completions": a group)
            rf"max {_N} new{_S}tok(?:en)?s",  # "max 1024 new tokens"
            rf"{_N} max (?:completion|response|generation)(?:{_S}len(?:gth)?)?",
            rf"(?:最长|最多) ?生成 ?{_N} ?(?:个 ?)?tok(?:en)?s?",  # "最长生成1024 tokens"
        ),
        _count("completion_len", "A completion length", 10_000_000),
    ),
    _Rule(
        "max length",
        _rx(
            rf"{_KEY}(?:max{_S}(?:seq(?:uence)?{_S})?length|max{_S}seq{_S}len|cutoff{_S}len(?:gth)?|"
            rf"model{_S}max{_S}length|block{_S}size|max{_S}len|sequence{_S}len(?:gth)?"
            rf"|seq{_S}length){_OF} ?{_N}",
            _count("seq_len", "A sequence length", 10_000_000),
        ),
    ),
    *_each(
        "prompt length",
        (
            rf"{_KEY}(?:max{_S})?prompt{_S}(?:max{_S})?len(?:gth)?{_OF} ?{_N}",
            rf"max{_S}prompt{_OF} ?{_N}",
        ),
        _count("prompt_len", "A prompt length", 10_000_000),
    ),
    _Rule(
        "per-device batch",
        _rx(
            rf"(?:per{_S}device{_S}(?:train{_S})?batch(?:{_S}size)?|"
            rf"(?:micro{_S})?batch{_S}size{_S}per{_S}(?:gpu|device)|per{_S}gpu{_S}batch"
            rf"(?:{_S}size)?|micro{_S}batch{_S}size|train{_S}micro{_S}batch{_S}size"
            rf"(?:{_S}per{_S}gpu)?){_OF} ?{_N}",
            _count("micro_batch", "Micro-batch", 65_536),
        ),
    ),
    _Rule(
        "grad accum",
        _rx(
            rf"(?:grad(?:ient)?{_S}?acc(?:um(?:ulation)?)?(?:{_S}steps)?|gas){_OF} ?{_N}",
            _count("grad_accum", "Gradient accumulation", 1e6),
        ),
    ),
    _Rule(
        "N grad accum",
        _rx(
            rf"{_N} (?:gradient|grad) accumulation(?: steps)?",
            _count("grad_accum", "Gradient accumulation", 1e6),
        ),
    ),
    _Rule(
        "global batch",
        _rx(
            rf"{_KEY}(?:(?:global|effective|total|train|rollout)(?:{_S}train)?{_S}batch(?:{_S}size)?"
            rf"|gbs){_OF} ?{_N}",
            _count("global_batch", "A global batch", 1e9, kilo=1000),
        ),
    ),
    *_each(
        "steps",
        (
            rf"{_N} (?:training |train |optimizer |gradient )?(?:steps|iterations|iters|updates)",
            rf"(?:max{_S})?(?:steps|iterations|iters){_OF} ?{_N}",
        ),
        _count("steps", "A step count", 1e9, kilo=1000),  # "10k steps": 10,000
    ),
    *_each(
        "eval set",
        (
            rf"{_N} (?:eval(?:uation)?|validation|test|held[- ]out) (?:examples|samples|prompts|"
            r"pairs|rows)",
            rf"(?:eval(?:uation)?|validation|test)(?: set| split| dataset)? of {_N} (?:examples|"
            r"samples|prompts|pairs|rows)",
        ),
        _eval_set,
    ),
    _Rule(
        "packed to N",
        _rx(
            rf"packed (?:to|into) (?:sequences of )?{_N}(?: tokens)?",
            lambda m, raw, st: (
                _set(st, "packing", True)
                and _set(st, "seq_len", _int(m, raw, "A sequence length", 10_000_000))
            ),
        ),
    ),
    _Rule(
        "no packing", _rx(r"(?:no|without) (?:sample )?packing|padding", _sets("packing", False))
    ),
    _Rule(
        "packing",
        _rx(
            r"(?:sample[- ]|sequence[- ])?packing(?: true)?|packed(?: sequences)?",
            _sets("packing", True),
        ),
    ),
    _Rule(
        "reward model size",
        _rx(
            r"(?:[a-z0-9.]+-)?(?P<sz>[0-9.]+[mb]) (?:reward|critic|rm)(?: model)?"
            r"|(?:reward|critic)(?: model)?(?: of)? (?:[a-z0-9.]+-)?(?P<sz2>[0-9.]+[mb])",
            _reward,
        ),
    ),
    _Rule(
        "async",
        _rx(r"async(?:hronous)?(?: rollouts?| generation| rl)?", _sets("async_rollouts", True)),
    ),
    _Rule("rlvr", _rx(r"rlvr", _rlvr)),
    _Rule(
        "8-bit base",
        _rx(
            r"(?:8[- ]?bit|int8|load[-_ ]in[-_ ]8[-_ ]?bit)(?: base| quantized)?"
            r"(?! (?:adam|optim|paged|lion))",
            _eight_bit,
        ),
    ),
    _Rule(
        "target modules", _rx(rf"(?:target{_S}modules? )?(?P<mods>{_MODS}(?: {_MODS})*)", _targets)
    ),
    _Rule(
        "target all-linear",
        _rx(rf"target{_S}modules? all{_S}linear", _sets("lora_targets", "all")),
    ),
    _Rule(
        "torchtune recipe",
        _rx(
            rf"(?P<r>q?lora|full){_S}finetune{_S}(?:single{_S}device|distributed)",
            _recipe,
        ),
    ),
    _Rule(
        "X-1.3b actor",
        _rx(r"(?:[a-z][a-z0-9]*[-/])+(?P<sz>[0-9]+(?:\.[0-9]+)?[mb]) (?:actor|policy)", _actor),
    ),
    _Rule("read only", _rx(_READ_ONLY, _read_only)),
    _Rule("a × b", _rx(r"x", lambda m, raw, st: True)),  # "1000 prompts x 8 samples"
)


def settle(st: Draft) -> None:
    """Steps, prompts × samples and pairs → the sequences the policy trains (``examples``),
    each step stated; runs before :func:`recommender.parsing._rules_lang.settle` makes tokens."""
    objective = st.objective or Objective.SFT
    rollouts = objective in (Objective.GRPO, Objective.PPO)
    if st.completion_len is not None and st.seq_len is None and rollouts:
        prompt, said = st.prompt_len, "stated"
        if prompt is None:
            prompt, said = DEFAULT_PROMPT_TOKENS, "assumed; say `max prompt length 512`"
        st.seq_len = st.completion_len + prompt
        st.notes.append(
            f"seq {st.seq_len}: {st.completion_len} completion + {prompt} prompt tokens ({said})"
        )
    elif st.prompt_len is not None:
        st.notes.append(f"read prompt length {st.prompt_len}: within the sequence length")
    if st.steps is not None and st.examples is None:
        per_step, said = _per_step(st)
        st.examples = float(st.steps * per_step)
        st.notes.append(f"{st.steps:,} steps × {per_step:,} {said} per step")
        if st.epochs is not None:
            st.notes.append("the steps already count every epoch: epochs not applied again")
            st.epochs = None
    for what, value in (
        ("global batch", st.global_batch),
        ("gradient accumulation", st.grad_accum),
    ):
        if value is not None and st.steps is None:
            st.notes.append(f"read {what} {value}: understood, it does not change the estimate")
    if st.packing and st.examples is not None and st.example_len is None:
        st.notes.append(
            "packing: read; packed work counts each example at its mean length, so say it "
            "(`of 300 tokens each`), else the padded length is counted"
        )
    if st.examples is None:
        return
    if rollouts:
        if st.example_len is None:
            st.example_len = st.seq_len or 2048
        group = (st.group_size or 8) if objective is Objective.GRPO else 1
        if group > 1:
            st.examples *= group
            st.notes.append(f"× {group} samples per prompt = {st.examples:,.0f} rollouts")
    elif objective in (Objective.DPO, Objective.IPO, Objective.ORPO, Objective.SIMPO):
        st.examples *= 2
        st.notes.append(f"each pair trains chosen + rejected: {st.examples:,.0f} sequences")
        if st.eval_examples is not None:
            st.eval_examples *= 2  # an eval pair scores chosen and rejected


def _per_step(st: Draft) -> tuple[int, str]:
    """Examples (prompts, for rollouts) one optimizer step takes."""
    if st.global_batch is not None:
        return st.global_batch, "(the global batch)"
    gpus = max((st.gpu_count or 1) - (st.generation_gpus or 0), 1)
    micro, accum = st.micro_batch or 1, st.grad_accum or 1
    return micro * accum * gpus, f"({micro} per device × {accum} accumulated × {gpus} GPUs)"
