"""Word tables for the workload parser (:mod:`recommender.parsing.parse`).

Everything here is data: which words carry no meaning, which spellings name a provider or a
region, and the multipliers behind unit suffixes. The rules that use them live in ``parse``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from recommender import providers

#: Words consumed silently: chat noise, pronouns, glue. Negations ("no", "not") are
#: deliberately absent, so a negation that no rule understood is always reported.
FILLER: frozenset[str] = frozenset(
    """
    a about across all also an and any approx approximately around as at be best by can
    chat cloud could cost costs data dataset did do does enough fit fits
    for from get go gpu gpus gpufit has have hello help hey hf hi how http https i i'd i'm
    if in instance instances instruct into is it it's just let's lets like llm long me
    model models much my need needs ok okay on only option options or our param params
    parameter parameters please pls price pricing recommend recommendation rent roughly
    run running runs setup should so some suggest take takes team thank thanks that the
    them then there these this those time to train trained training us use using via want
    wanna we we'd we're what what's whats which will with within would www you your
    base job jobs under of size max done must finish finished complete completed already
    ready deadline next need needed
    w
    """.split()  # noqa: SIM905 (a word list reads better as text)
)

#: Count words accepted before a GPU: "single gpu", "two H100s".
GPU_COUNT_WORDS: dict[str, int] = {
    "single": 1,
    "单": 1,  # "单卡4090": a single card
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "six": 6,
    "eight": 8,
    "sixteen": 16,
}

#: Words that stand for "a GPU" after a count: "2 gpus", "8x cards".
GPU_WORDS: frozenset[str] = frozenset(
    {"gpu", "gpus", "card", "cards", "accelerator", "accelerators"}
    | {"卡", "显卡", "张卡", "块卡"}  # Chinese: card, graphics card
)

#: Accelerator names we do not price; after "8x" they raise UnknownGpuError instead of
#: being mistaken for something else.
ACCELERATOR_WORDS: frozenset[str] = frozenset(
    {"tpu", "tpus", "trainium", "trn1", "trn2", "inferentia", "ipu", "gaudi", "wse"}
)

#: Provider spellings → canonical provider ids (the ids billing rules and offers use): each
#: cloud's ``words`` in the provider registry (recommender/providers/).
PROVIDERS: Mapping[str, tuple[str, ...]] = providers.text_words()

ALL_PROVIDERS: frozenset[str] = frozenset(providers.PROVIDERS)

# Region convention: ``Workload.regions`` holds lower-case *prefixes* of provider region ids,
# matched with ``str.startswith``. Providers spell the same area differently (AWS
# ``eu-west-1``, GCP ``europe-west4``, Azure ``westeurope``/``eastus``), so one word maps to
# every prefix that denotes it.
_US = ("us", "eastus", "westus", "centralus", "northcentralus", "southcentralus", "westcentralus")
_EU = ("eu", "europe", "northeurope", "westeurope")
_ASIA = ("ap", "asia", "eastasia", "southeastasia")
REGIONS: dict[str, tuple[str, ...]] = {
    "us east": ("us-east", "eastus"),
    "us west": ("us-west", "westus"),
    "us central": ("us-central", "centralus"),
    "east us": ("us-east", "eastus"),
    "west us": ("us-west", "westus"),
    "north america": (*_US, "ca", "northamerica"),
    "united states": _US,
    "usa": _US,
    "us": _US,
    "america": _US,
    "eu west": ("eu-west", "europe-west", "westeurope"),
    "eu central": ("eu-central", "europe-central", "germanywestcentral"),
    "eu north": ("eu-north", "europe-north", "northeurope", "swedencentral"),
    "eu": _EU,
    "europe": _EU,
    "european": _EU,
    "asia pacific": _ASIA,
    "apac": _ASIA,
    "asia": _ASIA,
    "canada": ("ca", "northamerica-northeast", "canada"),
}

#: Duration units → hours.
DURATION_HOURS: dict[str, float] = {
    "min": 1 / 60,
    "mins": 1 / 60,
    "minute": 1 / 60,
    "minutes": 1 / 60,
    "h": 1.0,
    "hr": 1.0,
    "hrs": 1.0,
    "hour": 1.0,
    "hours": 1.0,
    "d": 24.0,
    "day": 24.0,
    "days": 24.0,
    "dys": 24.0,  # a typo of "days" too short for the typo reader (recommender.parsing._fuzzy)
    "w": 168.0,
    "wk": 168.0,
    "wks": 168.0,
    "week": 168.0,
    "weeks": 168.0,
    "month": 730.0,  # 8760 h / 12
    "months": 730.0,
    # Chinese: 分钟 minutes, 小时 hours, 天 days, 周/星期 weeks, 个月 months
    "分钟": 1 / 60,
    "小时": 1.0,
    "个小时": 1.0,
    "钟头": 1.0,
    "天": 24.0,
    "周": 168.0,
    "星期": 168.0,
    "个星期": 168.0,
    "礼拜": 168.0,
    "个月": 730.0,
}

#: Parameter-count suffixes ("13b", "350m", "70 billion").
SIZE_UNITS: dict[str, float] = {
    "m": 1e6,
    "mn": 1e6,
    "mln": 1e6,
    "million": 1e6,
    "b": 1e9,
    "bn": 1e9,
    "billion": 1e9,
    "t": 1e12,
    "tn": 1e12,
    "trillion": 1e12,
}

#: Token-count suffixes ("500m tokens", "1t tokens").
TOKEN_UNITS: dict[str, float] = {"k": 1e3, "thousand": 1e3, **SIZE_UNITS}

#: Money suffixes ("$3k", "$1.2m").
MONEY_UNITS: dict[str, float] = {
    "k": 1e3,
    "thousand": 1e3,
    "grand": 1e3,  # "2 grand": $2,000
    "m": 1e6,
    "mm": 1e6,
    "mn": 1e6,
    "million": 1e6,
    "b": 1e9,
    "bn": 1e9,
    "billion": 1e9,
}


# ------------------------------------------------------------------ phrase patterns
# Regexes over the normalised text: tokens are case-folded, joined by single spaces, with
# "_" folded to "-"; so "[- ]" between words accepts "fine tune", "fine-tune", "fine_tune".
# Named groups are the contract with the handlers in ``parse``: ``n`` a number, ``u`` a
# unit, ``k`` a "k" (×1024) suffix, ``z`` a ZeRO stage, ``p`` a provider, ``neg`` a
# negation, ``r`` a region, ``pre`` a region preposition.


def _either(*alternatives: str) -> str:
    return "|".join(alternatives)


def alt(words: Iterable[str]) -> str:
    """A regex alternation of words (longest first); a space matches a space or a hyphen."""
    keys = sorted(words, key=len, reverse=True)
    return "|".join("[- ]".join(re.escape(part) for part in k.split(" ")) for k in keys)


NUM = r"(?P<n>-?(?:[0-9]+(?:\.[0-9]+)?|\.[0-9]+)(?:e[+-]?[0-9]+)?)"
_OF = r"(?: of| is)?"
_TUNE = r"fine[- ]?tun(?:e|ing|ed)"
_CKPT = (
    r"(?:(?:grad(?:ient)?|activation)[- ]?)?"
    r"(?:checkpointing|ckpt|ckpting|recompute|recomputation)"
)
_CANT = r"can'?t|cannot|can[- ]not|must[- ]not|mustn'?t|shouldn'?t|should[- ]not|won'?t|not"
_BUDGET_WORD = (
    r"(?:budget|have|got|spend|spending|under|below|max|maximum|up to|at most|less than"
    r"|within|cap|limit|about|around|~)" + _OF + " "
)
_SEQ_WORD = r"(?:seq(?:uence)?|ctx|context)(?:[- ]?len(?:gth)?)?(?:[- ]window)?"
_LORA_SUFFIX = rf"(?:[- ](?:{_TUNE}|ft|sft|training|adapters?))?"
_REGION_ID = _either(
    r"(?:us|eu|europe|asia|ap|ca|sa|me|af|il|mx|northamerica|southamerica|australia)"
    r"-[a-z]+-?[0-9]+[a-z]?",  # AWS us-east-1, GCP europe-west4
    r"(?:north|south|east|west|central)+(?:us|europe|asia)[0-9]?",  # Azure eastus2
)

MIXTRAL = r"8x7b(?:[- ]moe)?"
#: "seq 4096", "max len 2k", "input 512" (an encoder-decoder's input: its sequence).
SEQ_FIRST = (
    rf"(?:max[- ]?)?(?:{_SEQ_WORD}|len|(?:input|source)(?:[- ]len(?:gth)?)?){_OF} ?{NUM}"
    r" ?(?P<k>k)?(?: tok(?:en)?s?)?"
)
#: "4k context", "2048 max length".
SEQ_AFTER = rf"{NUM} ?(?P<k>k)?(?:[- ]tok(?:en)?s?)?[- ](?:{_SEQ_WORD}|max[- ]len(?:gth)?)"
TOKENS = (
    rf"(?:(?:on|over|for|with|of) )?{NUM}"
    rf"(?: ?(?P<u>{alt(TOKEN_UNITS)})"
    r"(?: of)?"  # "300 millions de tokens" (French, read through English words)
    # after a magnitude, one word saying what they are ("30B domain tokens"), not a method
    # or a model word (and not a mistyped magnitude: "2.5 bilion tokens" has none before it)
    r"(?:[- ](?!(?:lora|qlora|full|model|param|params|parameters|per|x)(?:[- ]|$))[a-z][a-z-]*)?"
    r")?"
    # "tokens"; "token" and "tok" ("10亿token", "100B tok") but not before a noun they
    # describe ("a 512 token context")
    r"[- ](?:tok(?:en)?s|tok(?:en)?(?![- ](?:samples?|examples?|sequences?|seqs?|context|window"
    r"|length|len|limit|completions?|responses?|prompts?|outputs?|inputs?|each|per|chunks?)\b))"
    # "2.5M tokens/epoch", "2.4M tokens per epoch": with "4 epochs" the epochs multiply them
    r"(?:/epoch|[- ](?:per|an|each|a)[- ]epoch)?"
)
#: "half a billion tokens".
TOKENS_HALF = (
    r"(?:(?:on|over|for|with|of) )?(?:half a|a half) (?P<u>million|billion|trillion)"
    r"[- ]tok(?:en)?s"
)
MONEY_DOLLAR = (
    rf"(?:{_BUDGET_WORD})?\$ ?{NUM} ?(?P<u>{alt(MONEY_UNITS)})?(?: usd| dollars?)?"
    r"(?: (?:budget|total|max|cap|limit))?"  # "$5k budget": the word after the amount
)
MONEY_WORD = rf"(?:{_BUDGET_WORD})?{NUM} ?(?P<u>{alt(MONEY_UNITS)})? ?(?:usd|dollars?|bucks|\$)"
# "budget 2k", but not "budget 13B": without a "$", a B suffix is a model size.
MONEY_BUDGET = rf"budget{_OF} {NUM}(?! ?(?:b|bn|billion)\b) ?(?P<u>{alt(MONEY_UNITS)})?"
MONEY_HAVE = rf"(?:have|got|spend|spending) {NUM} ?(?P<u>k|thousand)(?! tok| context| ctx| seq)"
DURATION = (
    rf"(?:(?:for|in|within|over|under|about|around|~|approx|roughly) )?"
    # "2-3 hours", "2 to 3 days": a range, read as its upper end
    r"(?:(?P<lo>[0-9]+(?:\.[0-9]+)?)(?:-| to | or ))?"
    rf"{NUM} ?(?P<u>{alt(DURATION_HOURS)})"
)
DURATION_ONE = r"(?:(?:for|in|within|over) )?(?:a|an|one) (?P<n>)(?P<u>hour|day|week|month)"
GLOBAL_BATCH = rf"(?:global[- ]batch(?:[- ]?size)?|gbs){_OF} ?{NUM}"
MICRO_BATCH = (
    rf"(?:micro[- ]?batch|mbs?|bs|batch)(?:[- ]?size)?(?:[- ]per[- ](?:gpu|device))?{_OF} ?{NUM}"
)
LORA_RANK = rf"(?:r|rank|lora[- ]r){_OF} ?{NUM}"
LORA_ATTENTION = _either(
    r"(?:(?:on|targets?|target[- ]modules?)(?: the)? )?(?:attention|attn)"
    r"(?:[- ](?:only|layers?|projections?|modules?|blocks?))?",
    r"qkvo|q[- ]?k[- ]?v[- ]?o(?:[- ]proj)?",
)
LORA_ALL = (
    r"(?:(?:on|targets?) )?all[- ](?:linear|layers|modules|projections)"
    r"(?:[- ](?:layers|modules))?"
)
FOUR_BIT = r"(?:4[- ]?bit|nf4|int4)(?:[- ](?:quant(?:ized|ization)?|base|weights))?"
NO_DOUBLE_QUANT = r"(?:no|without|disable)[- ]double[- ]quant(?:ization)?"
DOUBLE_QUANT = r"double[- ]quant(?:ization)?"
_MIXED = r"(?:mixed(?:[- ]precision)?|amp)"
PURE_BF16 = r"(?:pure|true|full)[- ](?:bf16|bfloat16)|(?:bf16|bfloat16)[- ](?:true|pure|only)"
BF16_MIXED = rf"(?:bf16|bfloat16)[- ](?:mixed|amp)(?:[- ]precision)?|{_MIXED}[- ](?:bf16|bfloat16)"
FP16 = _either(
    r"(?:fp16|float16|half[- ]precision)(?:[- ](?:mixed|amp)(?:[- ]precision)?)?",
    rf"{_MIXED}[- ](?:fp16|float16)",
)
BF16 = r"bf16|bfloat16"
FP8 = r"(?:fp8|float8)(?:[- ](?:mixed|training))?"
FP32 = r"fp32|float32|tf32|full[- ]precision"
MIXED = _MIXED
# "_either" adds no group, so the "paged" prefix belongs to the first alternative only.
ADAMW_8BIT = r"(?:paged[- ]?)?" + _either(
    r"adamw?[- ]?8[- ]?bit|8[- ]?bit[- ]adamw?",
    r"(?:adamw?[- ])?bnb[- ]?(?:adamw?[- ]?)?(?:8[- ]?bit)?",  # bitsandbytes
)
SGD_MOMENTUM = r"sgd(?:[- ]with)?[- ]momentum|momentum[- ]sgd|sgdm|nesterov(?:[- ]sgd)?"
SGD = r"(?:plain[- ]|vanilla[- ])?sgd"
ADAMW = r"(?:paged[- ]?|fused[- ]|torch[- ])?adam(?:[- ]?w)?(?:[- ]32[- ]?bit)?"
NO_CHECKPOINTING = rf"(?:no|without|disable|disabled|w/o|skip)[- ](?:{_CKPT}|ac)"
CHECKPOINTING = (
    r"(?:(?:with|enable|use)[- ])?"
    rf"(?:{_CKPT}|(?:grad(?:ient)?|activation)[- ]?checkpoints?|ac)"
)
NO_OFFLOAD = r"(?:no|without|disable)[- ](?:cpu[- ])?offload(?:ing)?"
_TO_CPU = r"(?:[- ]to[- ](?:the[- ])?cpu)?"
OFFLOAD_PARAMS = _either(
    rf"(?:cpu[- ])?offload(?:ing)?(?:[- ]the)?[- ](?:params?|parameters?|weights){_TO_CPU}",
    r"(?:cpu[- ])?(?:params?|parameters?|weights?)[- ]offload(?:ing)?",
    r"zero[- ]?infinity",
)
OFFLOAD_OPTIMIZER = _either(
    rf"(?:cpu[- ])?offload(?:ing)?(?:[- ]the)?(?:[- ]optimizer(?:[- ]states?)?)?{_TO_CPU}",
    r"optimizer[- ](?:states?[- ])?offload(?:ing)?",
    r"zero[- ]offload",
)
FSDP_GRAD_OP = r"(?:fsdp[- ]?)?shard[- ]?grad[- ]?op|fsdp[- ]?(?:grad[- ]?op|zero[- ]?2)"
HSDP = r"hsdp|(?:fsdp[- ])?hybrid[- ]?shard(?:ing)?"
FSDP = r"fsdp2?(?:[- ]full[- ]?shard(?:ing)?)?|full[- ]?shard(?:ing)?"
ZERO = r"(?:deepspeed[- ]|ds[- ])?zero[- ]?(?:stage[- ]?)?(?P<z>[0-3])"
DDP = r"ddp|(?:distributed[- ])?data[- ]parallel(?:ism)?"
SPOT_ONLY = r"spot[- ](?:instances[- ])?only|only[- ](?:spot|preemptible)"
NO_SPOT = _either(
    r"(?:no|without|not)[- ](?:instances[- ])?(?:spot|preemptibles?|preemptions?|interruptions?)",
    r"(?:only[- ])?on[- ]demand(?:[- ]only)?",
    r"non[- ]?(?:spot|preemptible|interruptible)|uninterruptible",
    r"(?:spot|preemptible|preemption)(?:[- ]instances?)?[- ](?:is[- ]|are[- ])?(?:not|n't)[- ]"
    r"(?:ok|okay|fine|allowed|acceptable|an[- ]option)",
    rf"(?:{_CANT})[- ]be[- ](?:interrupted|preempted)",
)
SPOT_OK = _either(
    r"(?:spot|preemptible|interruptible)(?:[- ]instances?)?"
    r"(?:[- ](?:is[- ]|are[- ])?(?:ok|okay|fine|allowed|welcome))?",
    r"ok(?:ay)?[- ](?:with[- ])?spot",
)
#: One provider's name, whole.
PROVIDER_NAME = rf"(?:{alt(PROVIDERS)})(?![a-z0-9])"
#: "aws only", "no aws", "exclude vast and runpod", "except aws/azure": a list of providers,
#: which a negation before it covers whole.
PROVIDER = (
    r"(?:only )?(?:(?P<neg>no|not|except|excluding|exclude|without|avoid) )?"
    rf"(?:(?:on|use|via|using|at|from) )?"
    rf"(?P<p>{PROVIDER_NAME}(?:(?:(?: and| or| nor| &)? |/){PROVIDER_NAME})*)(?:[- ]only)?"
)
REGION = (
    r"(?:(?P<pre>in|region|regions|within|near)(?: the)? )?"
    rf"(?P<r>{_REGION_ID}|{alt(REGIONS)})(?:[- ]only)?"
)
QLORA = rf"q[- ]?lora{_LORA_SUFFIX}"
LORA = rf"lora{_LORA_SUFFIX}"
PRETRAIN = r"(?:continued[- ])?pre[- ]?train(?:ing|ed)?|(?:train(?:ing)?[- ])?from[- ]scratch"
FULL = _either(
    rf"full[- ](?:param(?:eter)?s?[- ])?(?:{_TUNE}|ft|sft|training)",
    # "fine-tuning complet" (French, read through English words): the adjective after
    rf"(?:{_TUNE}|training)[- ]full(?![- ](?:precision|dataset|data|set|epochs?|model card))",
    r"full[- ]param(?:eter)?s?|fft",
    # "llama-3.1-8b full", "dpo qwen full 80k pairs": the method alone, but not "full
    # precision", "full shard", "full checkpointing", "full bf16", "full dataset", ...
    r"full(?![- ](?:precision|shard\w*|dataset|data|set|epochs?|model|activation\w*|ac"
    r"|checkpoint\w*|recomput\w*|bf16|bfloat16|fp16|fp32|node|run|pass)(?:[- ]|$))(?=[- ]|$)",
)
FINE_TUNE = rf"(?:supervised[- ])?{_TUNE}|ft|sft"
# "params" after it is a filler; "3B-Modell", "7b-model": the size of a model; "a 7b" and
# "一个3B模型" (read as "a 3b"): the article is part of the phrase
SIZE = (
    rf"(?:(?:a|an) )?{NUM} ?(?P<u>{alt(SIZE_UNITS)})"
    r"(?:-(?:model|modell|modells|modelo|modèle|modele))?"
)
SIZE_PARAMS = rf"{NUM}[- ](?:params?|parameters)"


# ------------------------------------------------------------------ memory savers, objectives
# (issue #20 items 3 and 4; kept together so other parser work merges cleanly)

_AC_WORD = r"(?:activation[- ]|grad(?:ient)?[- ])?(?:checkpointing|ckpt|recompute|recomputation|ac)"
SELECTIVE_CKPT = rf"(?:with[- ])?selective[- ]{_AC_WORD}|sac"
FULL_CKPT = rf"(?:with[- ])?full[- ]{_AC_WORD}"
_CE = r"(?:loss|ce|cross[- ]?entropy)(?:[- ]loss)?"
CHUNKED_LOSS = rf"chunked[- ](?:output[- ])?{_CE}"
FUSED_LOSS = _either(
    r"liger(?:[- ]kernels?)?(?:[- ](?:fused[- ])?(?:linear[- ])?(?:loss|ce|cross[- ]?entropy))?",
    rf"fused[- ](?:linear[- ])?{_CE}|flce",
)
OPTIMIZER_IN_BACKWARD = _either(
    r"(?:fused[- ])?optimi[sz]er(?:[- ]step)?[- ]in[- ](?:the[- ])?(?:backward|bwd)(?:[- ]pass)?",
    r"optimi[sz]er[- ]in[- ]bwd|lomo",
)
PAGED = r"paged(?:[- ]optimi[sz]ers?)?"
COMPILE = r"(?:with[- ])?torch[.-]?compiled?|compiled?"
#: The attention kernel: fused ("flash attention 2", "flash_attention_2", "sdpa",
#: "xformers") or not ("eager attention", "attn_implementation eager", "no flash attention").
_ATTN = r"(?:attention|attn)"
#: "flash attention 2", but not the 2 of "flash attention 2 days"
_VERSION = r"(?:[-_]?v?[123]|[ ]v?[123](?! (?:days?|d|hours?|hrs?|h|weeks?|months?|epochs?)\b))"
_FLASH = rf"flash[-_ ]?{_ATTN}{_VERSION}?|flash[-_ ]?attn{_VERSION}|fa[23]"
FLASH_ATTENTION = _either(
    rf"(?:with[- ]|using[- ])?(?:{_FLASH})",
    rf"(?:with[- ]|using[- ])?(?:sdpa|xformers|memory[- ]efficient[- ]{_ATTN})(?:[- ]{_ATTN})?",
)
EAGER_ATTENTION = _either(
    rf"(?:with[- ]|using[- ])?(?:eager|standard|vanilla|naive|unfused)[-_ ]{_ATTN}",
    rf"{_ATTN}[-_ ]?implementation[-_ =]+eager",
    rf"(?:no|without)[- ](?:{_FLASH}|flash)",
)
ACTIVATION_OFFLOAD = _either(
    r"(?:cpu[- ])?activations?[- ]offload(?:ing|ed)?(?:[- ]to[- ](?:the[- ])?cpu)?",
    r"offload(?:ing)?(?:[- ]the)?[- ]activations?(?:[- ]to[- ](?:the[- ])?cpu)?",
)
#: Post-training objective words → objective values (``rlhf`` is PPO-style RLHF).
OBJECTIVE_WORDS: dict[str, str] = {
    "dpo": "dpo",
    "ipo": "ipo",
    "kto": "kto",
    "orpo": "orpo",
    "simpo": "simpo",
    "ppo": "ppo",
    "rlhf": "ppo",
    "grpo": "grpo",
}
OBJECTIVE = (
    rf"(?P<o>{alt(OBJECTIVE_WORDS)})"
    r"(?:[- ](?:training|train|fine[- ]?tun(?:e|ing)|ft|loss|trainer|style))?"
)
GROUP_SIZE = rf"(?:group(?:[- ]size)?|num[- ]generations|generations){_OF} ?{NUM}"
GROUP_COMPLETIONS = (
    rf"{NUM}[- ](?:completions|generations|gens|samples|rollouts)(?:[- ](?:per[- ]prompt|each))?"
)


# ------------------------------------------------------------------ model-parallel degrees

# Model-parallel degrees: "tp 8", "tp8", "pp 4", "cp 2", "ep 8", "vp 5", "tensor parallel 8",
# "pipeline-parallel size 4", "8-way tensor parallelism"; bare words ask for a search.
_PAR_WORD = r"tensor|pipeline|context|expert|virtual[- ]pipeline"
PARALLEL_DEGREE = (
    r"(?P<k>tp|pp|cp|ep|vpp|vp) ?(?P<n>[0-9]+)"
    rf"|(?P<w>{_PAR_WORD})[- ]?parallel(?:ism)?(?:[- ](?:size|degree))? (?P<m>[0-9]+)"
    rf"|(?P<x>[0-9]+)[- ]?way[- ](?P<v>{_PAR_WORD})[- ]?parallel(?:ism)?"
)
PARALLEL_SEARCH = (
    r"(?:[34]d|three[- ]d)[- ]?parallel(?:ism)?"
    r"|(?:tensor|pipeline|context|expert|model)[- ]?parallel(?:ism)?"
)
#: Which Draft field each spelling of a parallel dimension sets.
PARALLEL_FIELDS: dict[str, str] = {
    "tp": "tp",
    "tensor": "tp",
    "pp": "pp",
    "pipeline": "pp",
    "cp": "cp",
    "context": "cp",
    "ep": "ep",
    "expert": "ep",
    "vp": "vp",
    "vpp": "vp",
    "virtual pipeline": "vp",
}
