"""Word tables for money in the workload parser: currency words, codes and symbols in
English and Chinese, and the phrases a budget is written in ("€500", "3k euros", "预算 500
美元", "1.500 €"). The rules that use them live in :mod:`recommender.parsing._rules_lang`.
Patterns run over the normalised text (see :mod:`recommender.parsing._scan`).
"""

from __future__ import annotations

from recommender.parsing import _lexicon as lex
from recommender.parsing._lexicon import NUM, alt

#: ISO 4217 codes the exchange-rate table (recommender/data/fx_rates.csv) lacks: read as
#: currencies, so that a budget in them is asked about rather than read as dollars.
UNCONVERTED = (
    *("CHF", "CAD", "AUD", "NZD", "INR", "KRW", "SGD", "HKD", "SEK", "NOK", "DKK", "PLN"),
    *("CZK", "HUF", "BRL", "MXN", "ZAR", "ILS", "AED", "SAR", "TWD", "THB"),
)
#: Currency words and symbols → ISO code. "¥" alone is ambiguous (CNY or JPY): see rules.
CURRENCY_WORDS: dict[str, str] = {
    "usd": "USD",
    "us$": "USD",
    "dollars": "USD",
    "dollar": "USD",
    "bucks": "USD",
    "美元": "USD",
    "美金": "USD",
    "eur": "EUR",
    "euro": "EUR",
    "euros": "EUR",
    "欧元": "EUR",
    "gbp": "GBP",
    "pounds": "GBP",
    "pound": "GBP",
    "quid": "GBP",
    "英镑": "GBP",
    "cny": "CNY",
    "rmb": "CNY",
    "yuan": "CNY",
    "人民币": "CNY",
    "元": "CNY",
    "块钱": "CNY",
    "块": "CNY",
    "jpy": "JPY",
    "yen": "JPY",
    "日元": "JPY",
    "日圆": "JPY",
    "円": "JPY",
    **{code.lower(): code for code in UNCONVERTED},
    "francs": "CHF",
}
CURRENCY_SYMBOLS: dict[str, str] = {"€": "EUR", "£": "GBP", "¥": "?", "￥": "?"}
#: The dollar rules' multipliers up to millions: a billion before a currency word is a model
#: size ("13B sgd" is a 13B model and the SGD optimizer, not S$13 billion)
MONEY_UNITS: dict[str, float] = {u: x for u, x in lex.MONEY_UNITS.items() if x < 1e9}
_BUDGET = (
    r"(?:(?:budget|预算|have|got|spend|spending|under|below|max|maximum|up to|at most|less than"
    r"|within|cap|limit|about|around|~)(?: of| is)? )?"
)
#: "€500", "£2k", "¥3000 cny", "500 eur", "3k euros", "预算 500 美元", "3000 元".
MONEY_SYMBOL = (
    rf"{_BUDGET}(?P<sym>[€£¥￥]) ?{NUM} ?(?P<u>{alt(MONEY_UNITS)})?"
    rf"(?: (?P<cur>{alt(CURRENCY_WORDS)}))?(?: (?:budget|total|max|cap|limit))?"
    rf"(?: (?P<cur2>{alt(CURRENCY_WORDS)}))?"  # "¥20000 budget (CNY)"
)
#: ... and the sign after the amount, as Europe writes it: "1.500 €", "5 000 €", "800€".
MONEY_CURRENCY = (
    rf"{_BUDGET}{NUM} ?(?P<u>{alt(MONEY_UNITS)})? ?"
    rf"(?:(?P<cur>{alt(CURRENCY_WORDS)})|(?P<sym>[€£¥￥]))"
    r"(?: (?:budget|total|max|cap|limit))?"
)
#: A currency code first: "usd 500", "eur 3k", "cny 2万".
MONEY_CODE_FIRST = rf"{_BUDGET}(?P<cur>usd|eur|gbp|cny|rmb|jpy) ?{NUM} ?(?P<u>{alt(MONEY_UNITS)})?"
#: "预算 500" with no currency: in a Chinese message 元 is as likely as dollars, so the
#: rule asks which (:func:`recommender.parsing._rules_lang.h_money`).
MONEY_CJK_BUDGET = rf"预算 {NUM} ?(?P<u>{alt(MONEY_UNITS)})?"
