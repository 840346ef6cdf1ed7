"""Price history in Redis: each offer's recorded prices, bounded in length and age.

Keys, under the store's prefix (``gpufit:feed`` by default)::

    {p}:hist:{offer key}   ZSET score=unix time, member="<time>:<price>" (bounded)

A refresh that stores a new catalog records each offer's price
(:meth:`recommender.feeds.cache.RedisSnapshots.put_snapshot`), skipping an unchanged price
seen within the hour; one that found its catalog unchanged records nothing.

**The offer key.** Earlier versions keyed history by an offer key without the GPUs
(:attr:`~recommender.pricing.offers.Offer.legacy_key`). The first time this version records an offer
with no history under its key, it carries the old key's points over (``RENAME``, in the
recording script) when the old key named that offer alone in the catalog being recorded. Where
it named several (a GCP N1 host type with T4s and with P4s: every refresh wrote both GPUs'
prices into one key, so its points cannot be told apart), nothing is carried over and the old
key is given :data:`HISTORY_MAX_AGE` to live, the age any point is kept: those offers' history
starts at the upgrade. An older replica that records during a rolling upgrade writes under the
old key again; those few points stay there, unread.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import redis.asyncio as aioredis

    from recommender.pricing.offers import Offer

__all__ = ["HISTORY_LIMIT", "HISTORY_MAX_AGE", "PriceHistory", "PricePoint"]

#: Price points kept per offer; why: hourly refreshes for three weeks (24 x 21 = 504) covers
#: "since yesterday" and "since last week" while bounding memory per offer.
HISTORY_LIMIT = 500

#: History older than this is dropped; why: week-over-week comparisons need 7 days, plus slack.
HISTORY_MAX_AGE = timedelta(days=21)

#: Lowest interval between two equal history points; why: an unchanged price needs recording
#: only often enough to answer "since yesterday" from a point near 24 h back.
_HISTORY_DEDUPE = timedelta(hours=1)

#: Offers per history script call; why: a call blocks Redis while it runs ~4 commands an offer,
#: and 2,000 offers measured 6-10 ms a call, while a 29k-offer refresh still needs only 15 calls.
_HISTORY_BATCH = 2000

# Records one batch of history points (see PriceHistory.record).
# KEYS: each offer's history ZSET, then each one's key as earlier versions named it (the
# module docstring's "The offer key"), passed as KEYS so Redis knows every key the script
# touches (a Cluster would also need them in one hash slot; this project runs one Redis, or
# Sentinel).
# ARGV: 1 the score (the stamp), 2 the member prefix "<stamp>:", 3 the dedupe window in
# seconds, 4 the age trim's exclusive bound "(<oldest>", 5 the rank trim's stop, 6 the seconds
# an old key shared by several offers is kept, then one price text per key, formatted by
# Python so members are exactly what the client used to write, then one flag per key: "m"
# the old key named this offer alone (carry its points over), "x" it named several (let it
# expire). An offer with no history yet takes its old key's points (RENAME) before its latest
# point is read, so the dedupe compares with the carried-over history.
# The score reaches ZADD as the text redis-py sent, never as a Lua number (tostring keeps only
# 14 digits). Every key's latest point is read before any point is added, as the client's read
# pipeline then write pipeline did, so a key repeated in a batch compares each occurrence with
# the point from before the call. Prices compare as numbers: tonumber is strtod, correctly
# rounded like Python's float(), and Python's str round-trips, so this is the client's
# float(stored) == price. A stored member without a parsable price (never written by gpufit)
# counts as a changed price, where the client used to raise.
_RECORD_HISTORY = """
local stamp = tonumber(ARGV[1])
local window = tonumber(ARGV[3])
local n = #KEYS / 2
local latest = {}
for i = 1, n do
  latest[i] = redis.call('ZRANGE', KEYS[i], -1, -1, 'WITHSCORES')
  local flag, old = ARGV[n + i + 6], KEYS[n + i]
  if not latest[i][1] then
    if flag == 'm' and redis.call('EXISTS', old) == 1 then
      redis.call('RENAME', old, KEYS[i])
      latest[i] = redis.call('ZRANGE', KEYS[i], -1, -1, 'WITHSCORES')
    elseif flag == 'x' and redis.call('TTL', old) == -1 then
      redis.call('EXPIRE', old, ARGV[6])
    end
  end
end
for i = 1, n do
  local key, price, last = KEYS[i], ARGV[i + 6], latest[i]
  local skip = false
  if last[1] then
    local colon = string.find(last[1], ':', 1, true)
    local stored = colon and tonumber(string.sub(last[1], colon + 1))
    skip = stored == tonumber(price) and stamp - tonumber(last[2]) < window
  end
  if not skip then
    redis.call('ZADD', key, ARGV[1], ARGV[2] .. price)
    redis.call('ZREMRANGEBYSCORE', key, '-inf', ARGV[4])
    redis.call('ZREMRANGEBYRANK', key, 0, ARGV[5])
  end
end
return 0
"""


@dataclass(frozen=True, slots=True)
class PricePoint:
    at: datetime
    price_usd_per_hour: float


class PriceHistory:
    """The price history of one Redis database. Redis errors propagate."""

    def __init__(self, client: aioredis.Redis, *, prefix: str) -> None:
        self.client = client
        self.prefix = prefix
        # EVALSHA with a fallback to loading the script when the server answers NOSCRIPT.
        self._record = client.register_script(_RECORD_HISTORY)

    def _key(self, offer_key: str) -> str:
        return f"{self.prefix}:hist:{offer_key}"

    async def record(self, offers: Iterable[Offer], *, at: datetime) -> None:
        """Append each offer's price at ``at`` (skipping unchanged prices seen within 1 h).

        The dedupe check and the writes run in Redis (:data:`_RECORD_HISTORY`), a batch of
        offers per call; Python only builds each offer's key and price text.
        """
        # The price as text Python writes into the member, so Redis stores what the old
        # client did.
        rows = [(o.key, o.legacy_key, str(round(o.price_usd_per_hour, 6))) for o in offers]
        if not rows:
            return
        # Old keys (no GPUs) that named several of these offers: their points are mixed.
        first: dict[str, str] = {}
        shared: set[str] = set()
        for key, old, _ in rows:
            if first.setdefault(old, key) != key:
                shared.add(old)
        keys = [
            (self._key(key), self._key(old), "x" if old in shared else "m") for key, old, _ in rows
        ]
        prices = [price for _, _, price in rows]
        stamp = at.timestamp()
        oldest = (at - HISTORY_MAX_AGE).timestamp()
        # Floats go through redis-py's encoder (repr), exactly as ZADD and the trims sent them.
        args: list[float | int | str] = [
            stamp,
            f"{stamp:.0f}:",
            _HISTORY_DEDUPE.total_seconds(),
            f"({oldest}",
            -(HISTORY_LIMIT + 1),
            int(HISTORY_MAX_AGE.total_seconds()),
        ]
        for batch_keys, batch_prices in _history_batches(keys, prices):
            await self._record(
                keys=[k for k, _, _ in batch_keys] + [old for _, old, _ in batch_keys],
                args=[*args, *batch_prices, *(flag for _, _, flag in batch_keys)],
            )

    async def points(self, offer_key: str) -> list[PricePoint]:
        """Every recorded price of one offer (``Offer.key``), oldest first."""
        entries = await self.client.zrange(self._key(offer_key), 0, -1, withscores=True)
        return [_point(entry) for entry in entries]

    async def price_at(self, offer_key: str, at: datetime) -> PricePoint | None:
        """The price recorded last at or before ``at``."""
        entries = await self.client.zrevrangebyscore(
            self._key(offer_key), at.timestamp(), "-inf", start=0, num=1, withscores=True
        )
        return _point(entries[0]) if entries else None


def _history_batches(
    keys: list[_HistoryKeys], prices: list[str]
) -> Iterator[tuple[list[_HistoryKeys], list[str]]]:
    """``keys`` and ``prices`` in slices of about :data:`_HISTORY_BATCH` for the script.

    A key listed more than once keeps all its entries, in order, in one slice: the script
    compares each with the point from before the call, which holds only within one call.
    """
    if len({k for k, _, _ in keys}) == len(keys):
        for start in range(0, len(keys), _HISTORY_BATCH):
            end = start + _HISTORY_BATCH
            yield keys[start:end], prices[start:end]
        return
    groups: dict[_HistoryKeys, list[str]] = {}
    for key, price in zip(keys, prices, strict=True):
        groups.setdefault(key, []).append(price)
    batch_keys: list[_HistoryKeys] = []
    batch_prices: list[str] = []
    for key, group in groups.items():
        batch_keys.extend([key] * len(group))
        batch_prices.extend(group)
        if len(batch_keys) >= _HISTORY_BATCH:
            yield batch_keys, batch_prices
            batch_keys, batch_prices = [], []
    if batch_keys:
        yield batch_keys, batch_prices


#: An offer's history key, its key as earlier versions named it, and what the script does
#: with the old one ("m" carry its points over, "x" let it expire).
_HistoryKeys = tuple[str, str, str]


def _point(entry: Any) -> PricePoint:
    member, score = entry
    return PricePoint(datetime.fromtimestamp(float(score), UTC), float(str(member).split(":")[1]))
