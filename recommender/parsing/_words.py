"""More word tables for the workload parser: dataset sizes, durations and deadlines in words,
node counts, and Chinese (money in other currencies is in
:mod:`recommender.parsing._money_words`).

:mod:`recommender.parsing._lexicon` holds the terse forms ("2B tokens", "$3k", "36h",
model, method and GPU words); this module the words people write around them: dataset sizes
and epochs, durations and calendar deadlines in words, currencies other than the dollar,
node counts, and Chinese. The rules that use these live in :mod:`recommender.parsing._rules_lang`
and :mod:`recommender.parsing._rules_time`. Patterns run over the normalised text (see
:mod:`recommender.parsing._scan`): case-folded tokens joined by single spaces.
"""

from __future__ import annotations

from recommender.parsing._lexicon import NUM, alt

#: Numbers written as words ("two days", "three epochs", "a week").
NUMBER_WORDS: dict[str, int] = {
    "a": 1,
    "an": 1,
    "one": 1,
    "single": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
    "sixteen": 16,
    "twenty": 20,
    "thirty": 30,
    "couple": 2,
    "a couple of": 2,
    "a couple": 2,
    "a pair of": 2,
}
#: Chinese numerals (the tokenizer turns a run of them into digits in the normalised form).
CJK_DIGITS: dict[str, int] = {
    "零": 0,
    "〇": 0,
    "一": 1,
    "二": 2,
    "两": 2,
    "兩": 2,
    "三": 3,
    "四": 4,
    "五": 5,
    "六": 6,
    "七": 7,
    "八": 8,
    "九": 9,
}
CJK_UNITS: dict[str, int] = {
    "十": 10,
    "百": 100,
    "千": 1000,
    "万": 10_000,
    "萬": 10_000,
    "亿": 100_000_000,
    "億": 100_000_000,
}

#: Chinese words the tokenizer cuts a run of Chinese characters into (longest first); a
#: character in none of them becomes a token of its own.
CJK_WORDS: tuple[str, ...] = (
    "全量微调",
    "全参微调",
    "继续预训练",
    "预训练",
    "微调",
    "训练",
    "预算",
    "美元",
    "美金",
    "人民币",
    "欧元",
    "英镑",
    "日元",
    "日圆",
    "块钱",
    "小时",
    "个小时",
    "分钟",
    "星期",
    "个星期",
    "个月",
    "礼拜",
    "显卡",
    "节点",
    "机器",
    "台机器",
    "样本",
    "条数据",
    "条样本",
    "条",
    "万条",
    "轮",
    "个epoch",
    "音频",
    "语音",
    "录音",
    "偏好数据",
    "偏好",
    "越便宜越好",
    "越快越好",
    "最便宜",
    "最省钱",
    "不着急",
    "不急",
    "尽快",
    "最快",
    "希望",
    "完成",
    "明天",
    "今天",
    "今晚",
    "之前",
    "自己的",
    "自有的",
    "自有",
    "采样",
    "生成",
    "最长",
    "最多",
    "回答",
    "答案",
    "道题",
    "问题",
)

#: Chinese words read as the English word the rules know (the tokenizer gives them that
#: normalised form): on-demand and spot instances ("按需实例，不要竞价实例", "竞价实例可以"),
#: a negation, "OK".
CJK_ENGLISH: dict[str, str] = {
    "按需实例": "on-demand",
    "按需": "on-demand",
    "竞价实例": "spot",
    "竞价": "spot",
    "抢占式实例": "preemptible",
    "抢占式": "preemptible",
    "不要": "no",
    "不用": "no",
    "可以": "ok",
    "单张": "1x",  # a single card ("单张4090")
    "平均": "avg",
    "一个": "a",  # "一个3B模型": a 3B model
    "最大长度": "max-length",
    "生成长度": "generation-length",  # "生成长度512": each completion's length
    "数据": "data",
}

#: Counters between a count and a GPU name: "两张 4090", "8块 A100", "四个 H100".
CJK_CARD_COUNTERS: frozenset[str] = frozenset({"张", "块", "片", "个"})
# ------------------------------------------------------------------ dataset sizes
#: Nouns for one training example ("100k samples", "50k conversations").
EXAMPLE_NOUNS = (
    "examples",
    "example",
    "samples",
    "sample",
    "rows",
    "row",
    "conversations",
    "conversation",
    "convos",
    "dialogues",
    "dialogs",
    "chats",
    "pairs",
    "instructions",
    "prompts",
    "documents",
    "docs",
    "records",
    "sequences",
    "images",
    "clips",
    # what the examples are, as teams name them ("250k support tickets", "4k math problems")
    "tickets",
    "problems",
    "questions",
    "emails",
    "articles",
    "texts",
    "posts",
    "reviews",
    "queries",
    "tasks",
    "demonstrations",
    "trajectories",
    "transcripts",
    "sentences",
    "passages",
    "paragraphs",
    "pages",
    "messages",
    "captions",
    "summaries",
    "snippets",
    "functions",
    "files",
    "screenshots",
    "scans",
    "receipts",
    "invoices",
    "responses",
    "completions",  # "40k labeled completions" (KTO); "8 completions per prompt" is a group
    "turns",  # "1.1M chat turns"
    "answers",
    "issues",
    "commits",
    "logs",
    "outputs",
    "prefs",  # preference pairs, as teams shorten it
    "preferences",
    "comparisons",
    "样本",
    "问题",  # "5000个问题": 5,000 questions
    "道题",  # "2000道题": 2,000 problems
    "条数据",
    "条样本",
    "条",
)
_COUNT_UNITS = {"k": 1e3, "thousand": 1e3, "m": 1e6, "mn": 1e6, "million": 1e6, "b": 1e9}
COUNT_UNITS: dict[str, float] = {**_COUNT_UNITS, "万": 1e4}
#: One example, as "per" names it: "512 tokens per row", "2k tokens/row".
_ONE = r"(?:example|sample|row|conversation|doc|document|record|sequence|item)"
#: One example's length: "512 tokens", or as a sequence length ("2048 seq", "4096 ctx": each
#: example a full sequence of it).
_LEN = (
    r"(?P<ln>[0-9]+(?:\.[0-9]+)?) ?(?P<lk>k)?"
    r"(?:[- ]?tok(?:en)?s?|[- ](?:seq(?:uence)?|ctx|context)(?:[- ]?len(?:gth)?)?(?![- ]?window))"
)
#: "60k prefs at 2048", "60k prefs @ 2k": a bare length after "at" (or "@") and the examples
_LEN_AT = r" at (?P<ln3>[0-9]+) ?(?P<lk3>k)?(?![0-9a-z.])"
_LEN2 = r"(?P<ln2>[0-9]+(?:\.[0-9]+)?) ?(?P<lk2>k)?[- ]?tok(?:en)?s?"
#: Up to four words that say what the examples are ("12k instruction samples", "45k pref
#: pairs", "80k thumbs-up/down examples"), but not a preposition or a unit of their own.
ADJECTIVES = (
    r"(?: (?!(?:of|on|over|for|at|with|x|in|and|or|epochs?|steps?|days?|hours?|tok(?:en)?s"
    r"|(?:m|b|tr)il+i?[oa]?n+s?)(?: |$))[a-z][a-z0-9/&-]*){0,4}?"  # nor a (mistyped) magnitude
)
#: "100k samples", "100k samples of 512 tokens", "100k 512-token samples",
#: "100k samples x 512 tokens", "100k samples, 512 tokens each".
DATASET = (
    r"(?:(?:on|over|for|with|of|across) )?(?:a dataset of |dataset of )?"
    rf"{NUM} ?(?P<u>{alt(COUNT_UNITS)})?(?:(?<=[a-z]) of)?(?: {_LEN2})?{ADJECTIVES}"
    rf" (?P<noun>{alt(EXAMPLE_NOUNS)})"
    rf"(?:(?:(?: of| x| at| with| averaging| avg| ~| each)? {_LEN}|{_LEN_AT})"
    # "10k prompts, 512 token responses": that length is the completion's, not the prompt's
    r"(?! (?:completions?|responses?|generations?|outputs?|answers?)(?: |$))"
    rf"(?: each| per {_ONE}|/{_ONE})?)?"
)
#: "512 tokens per example", "avg 1k tokens each".
EXAMPLE_LENGTH = (
    r"(?:(?:avg|average|averaging|about|~|at) )?"
    rf"{_LEN}(?: each| per {_ONE}|/{_ONE})"
)
#: "avg length 1.5k tokens", "each about 600 tokens", "mean 900 toks": one example's length
#: with no "each" after it.
EXAMPLE_LENGTH_AVG = (
    r"(?:(?:avg|average|mean)(?:[- ](?:length|len|size))?(?: of| is)?|each(?: about| around| ~)?)"
    rf" {_LEN}"
)
_EPOCH_WORD = r"(?:epochs?|passes|pass|轮|个epoch)"
#: "3 epochs", "three epochs", "for 2 epochs", "3轮", "2个epoch" (a number with the counter 个
#: is normalised as "2x", as "两个 H100" is).
EPOCHS = (
    rf"(?:(?:for|over|with|x) )?(?P<n>[0-9]+(?:\.[0-9]+)?|{alt(NUMBER_WORDS)})x? ?{_EPOCH_WORD}"
)
#: "epochs 3", "epochs=3" ("=" splits the token).
EPOCHS_FIRST = r"epochs? (?P<n>[0-9]+(?:\.[0-9]+)?)"

# ------------------------------------------------------------------ durations in words
_HOURS_WORDS = {
    "minutes": 1 / 60,
    "hours": 1.0,
    "hour": 1.0,
    "hrs": 1.0,
    "days": 24.0,
    "day": 24.0,
    "weeks": 168.0,
    "week": 168.0,
    "months": 730.0,
    "month": 730.0,
}
WORD_HOURS: dict[str, float] = _HOURS_WORDS
#: "two days", "a couple of days", "three weeks".
DURATION_WORDS = (
    r"(?:(?:for|in|within|over|under|about|around|~|approx|roughly) )?"
    rf"(?P<w>{alt(NUMBER_WORDS)}) (?P<u>{alt(_HOURS_WORDS)})"
    rf"(?: or (?P<w2>{alt(NUMBER_WORDS)}))?"  # "a day or two": its upper end
)
#: Phrases for a stretch of time, read as fixed hours (stated in the answer):
#: overnight ≈ 12 h (evening to morning), a weekend ≈ 48 h (Saturday and Sunday).
PHRASE_HOURS: dict[str, float] = {
    "overnight": 12.0,
    "overnite": 12.0,
    "over night": 12.0,
    "over the weekend": 48.0,
    "over a weekend": 48.0,
    "the weekend": 48.0,
    "a weekend": 48.0,
    "one weekend": 48.0,
    "weekend": 48.0,
    "half a day": 12.0,
    "half day": 12.0,
    "a day and a half": 36.0,
    "一晚上": 12.0,
    "一夜": 12.0,
    "周末": 48.0,
    "一周末": 48.0,
    "半天": 12.0,
}
DURATION_PHRASE = rf"(?:(?:for|in|within) )?(?P<p>{alt(PHRASE_HOURS)})"

# ------------------------------------------------------------------ deadlines
WEEKDAYS: dict[str, int] = {
    "monday": 0,
    "mon": 0,
    "tuesday": 1,
    "tue": 1,
    "tues": 1,
    "wednesday": 2,
    "wed": 2,
    "thursday": 3,
    "thu": 3,
    "thurs": 3,
    "friday": 4,
    "fri": 4,
    "saturday": 5,
    "sat": 5,
    "sunday": 6,
    "sun": 6,
    "周一": 0,
    "周二": 1,
    "周三": 2,
    "周四": 3,
    "周五": 4,
    "周六": 5,
    "周日": 6,
    "星期一": 0,
    "星期二": 1,
    "星期三": 2,
    "星期四": 3,
    "星期五": 4,
    "星期六": 5,
    "星期日": 6,
    "星期天": 6,
}
MONTHS: dict[str, int] = {
    "january": 1,
    "jan": 1,
    "february": 2,
    "feb": 2,
    "march": 3,
    "mar": 3,
    "april": 4,
    "apr": 4,
    "may": 5,
    "june": 6,
    "jun": 6,
    "july": 7,
    "jul": 7,
    "august": 8,
    "aug": 8,
    "september": 9,
    "sep": 9,
    "sept": 9,
    "october": 10,
    "oct": 10,
    "november": 11,
    "nov": 11,
    "december": 12,
    "dec": 12,
}
_BY = r"(?:by|before|until|till|due|deadline|done by|finished by|ready by)"
_NEXT = r"(?:(?:this|next|the) )?"
_DAY = r"(?P<d>[0-9]{1,2})(?:st|nd|rd|th)?"
#: "by Friday", "by next monday", "by tomorrow", "by end of week", "by Dec 15", "by 15 Dec",
#: "by 2026-12-15".
DEADLINE = (
    rf"{_BY}(?: the)? (?:"
    rf"{_NEXT}(?P<wd>{alt(WEEKDAYS)})(?: eod| night| evening)?"
    r"|(?P<rel>(?:eod |end of (?:the )?day )?(?:tomorrow|tmrw|tmr|tomorow)(?: eod)?"
    r"|tonight|today|eod|eow|end of (?:the )?(?:day|week|month)|end of next week)"
    rf"|(?P<mon>{alt(MONTHS)})\.? {_DAY}"
    r"|(?P<d2>[0-9]{1,2})(?:st|nd|rd|th)?"
    rf"(?: of)? (?P<mon2>{alt(MONTHS)})"
    r"|(?P<iso>[0-9]{4}-[0-9]{2}-[0-9]{2})"
    r"|(?P<dom>[0-9]{1,2})(?:st|nd|rd|th)"  # "before the 15th": this month or the next
    r"|(?P<slash>[0-9]{1,2}/[0-9]{1,2})"  # "by 12/20": month/day (day/month past 12)
    r")"
)
#: "time is worth $2k/day", "our time is worth 500 usd per day": what a day of waiting costs.
TIME_VALUE = (
    r"(?:(?:our |my |the team's )?time (?:is )?)?worth "
    r"\$? ?(?P<n>[0-9]+(?:\.[0-9]+)?) ?(?P<u>k|m)?(?: ?usd| dollars?)?"
    r" ?(?:/ ?|a |an |per )(?:day|d)"
)
#: "no rush": time has no value.
#: "cheapest" and "asap" weigh time against money in words (:class:`~recommender.workload.Urgency`).
CHEAPEST = (
    r"(?:the )?cheapest(?: (?:option|way|plan|possible|setup))?"
    r"|as cheap(?:ly)? as (?:possible|we can)|lowest (?:cost|price)|least expensive"
    r"|minimi[sz]e (?:the )?(?:cost|spend)|最便宜|最省钱|越便宜越好"
)
FASTEST = (
    r"(?:the )?fastest(?: (?:option|way|plan|possible|setup))?|asap"
    r"|as (?:soon|fast|quickly) as (?:possible|we can)|urgent(?:ly)?|in a (?:rush|hurry)"
    r"|尽快|越快越好|最快"
)
NO_RUSH = r"no rush|no hurry|not in a (?:rush|hurry)|not urgent|whenever|不急|不着急"
#: "we have", "we already own", "we've got", "我们已经有" before the hardware: it is owned.
OWNED = (
    r"(?:(?:we |we've |we have |i |i've )?(?:already )?(?:have|own|owned|got)(?: got)?"
    r"|our(?: own)?(?: on-?prem(?:ises?)?| in-house| local)?"
    r"|们? ?(?:已 经 |已 )?有)"
)
#: "4x 4090 we already own", "8 A100s that we own": the hardware just named is the team's.
OWNED_AFTER = (
    r"(?:(?:that|which) )?(?:we|i) (?:already )?(?:own|have)(?: (?:them|it|those|these))?"
    r"(?: already)?"
    r"|(?:我们 )?(?:自己的|自有的?)"  # "8张4090，我们自己的": our own
)
#: Chinese deadlines: "周五前", "周五之前" (the tokenizer cuts 周五 and 前 apart).
#: "下周五前": next week's Friday; "本周五前": this week's; "明天之前": by tomorrow.
DEADLINE_CJK = (
    rf"(?:(?:(?P<next>下 )|本 )?(?P<wd>{alt(k for k in WEEKDAYS if not k.isascii())})"
    r"|(?P<rel>明天|今天|今晚)) (?:前|之前|以前)"
)

# ------------------------------------------------------------------ nodes
# a DGX or HGX system is one 8-GPU server ("a DGX H100")
_NODE = r"(?:nodes?|machines?|servers?|hosts?|boxes|box|instances?|dgxs?|hgxs?|节点|台机器|台)"
#: "2 nodes", "a node", "two nodes", "2 nodes of 8x H100" (the rule reads what follows).
NODES = rf"(?:(?:on|using|with|across) )?(?P<n>[0-9]+|{alt(NUMBER_WORDS)}) ?{_NODE}"
#: A node with no GPU count given is the common 8-GPU server (AWS p4d/p5, GCP a3, Azure
#: ND H100 v5, DGX H100 all carry 8 GPUs).
GPUS_PER_NODE = 8
