"""Money in other currencies, converted to US dollars from a dated rate table shipped as data.

``recommender/data/fx_rates.csv`` holds the European Central Bank's euro foreign exchange
reference rates (units of each currency per euro) of one stated day, from
https://www.ecb.europa.eu/stats/eurofxref/eurofxref-daily.xml. A rate in currency X is
converted through the euro: ``usd = amount / per_eur[X] * per_eur[USD]``. The table is data,
not a live feed: the answer names its date and source so a reader can judge its age.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from datetime import date, datetime
from functools import cache
from importlib import resources

__all__ = ["STALE_AFTER_DAYS", "FxTable", "fx_table", "to_usd"]

#: An exchange-rate table older than this is flagged in every answer that converts with it;
#: why: rates move a few per cent a month (issue #39: the shipped table is dated 2024-06-28).
STALE_AFTER_DAYS = 30  # ours


@dataclass(frozen=True, slots=True)
class FxTable:
    per_eur: dict[str, float]
    date: str
    source: str

    def describe(self) -> str:
        return f"ECB reference rate of {self.date} ({self.source})"

    def age_days(self, now: datetime) -> int:
        """Whole days from the table's date to ``now``."""
        return (now.date() - date.fromisoformat(self.date)).days

    def stale_text(self, now: datetime) -> str | None:
        """The warning an answer converting with this table carries, or ``None`` while it is
        at most :data:`STALE_AFTER_DAYS` old."""
        days = self.age_days(now)
        if days <= STALE_AFTER_DAYS:
            return None
        return (
            f"the exchange rates are {days} days old (ECB, {self.date}; stale after "
            f"{STALE_AFTER_DAYS} days): the dollar budget may be off by today's rate"
        )


@cache
def fx_table() -> FxTable:
    text = resources.files("recommender").joinpath("data/fx_rates.csv").read_text("utf-8")
    rows = list(csv.DictReader(io.StringIO(text)))
    return FxTable(
        per_eur={r["currency"]: float(r["per_eur"]) for r in rows},
        date=rows[0]["date"],
        source=rows[0]["source"],
    )


def to_usd(amount: float, currency: str) -> float:
    """``amount`` of ``currency`` (ISO code in the table) in US dollars."""
    table = fx_table()
    return amount / table.per_eur[currency] * table.per_eur["USD"]
