"""Rendered answers, reused while the prices they were computed from are current.

Teams ask the same question more than once (a colleague repeats it, a thread is re-read, the
post-to-channel button re-asks it), and an answer is a pure function of the question, how it is
shown, the catalog and the clock. The catalog is the price store's in-process object, replaced
whenever a refresh changes the snapshot version, so entries are tied to that object by
identity: a new catalog empties the cache at once. The clock only moves the prices' age in the
footer and the stale-price caveat, so an entry is served for :data:`ANSWER_TTL_S` at most.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Generic, TypeVar

from bot.render.limits import Message
from recommender import Catalog

__all__ = ["ANSWER_CACHE_SIZE", "ANSWER_TTL_S", "Answer", "AnswerCache"]

#: How long one answer is reused: its footer shows the prices' age in minutes, so an answer
#: up to a minute old shows an age at most a minute short (prices refresh every 15 min).
ANSWER_TTL_S = 60.0

#: Answers kept (least recently used dropped first): a rendered answer is 5-16 KB of blocks,
#: so the cache stays under ~4 MB; a team asks far fewer distinct questions in a minute.
ANSWER_CACHE_SIZE = 256

V = TypeVar("V")


@dataclass(frozen=True, slots=True)
class Answer:
    #: The full question answered (a refinement's merged text), for storage and buttons.
    query: str
    message: Message


class AnswerCache(Generic[V]):
    """A small LRU of values computed from one catalog, each valid for ``ttl_s``.

    Not thread-safe: it is used from the event loop only.
    """

    def __init__(self, *, size: int = ANSWER_CACHE_SIZE, ttl_s: float = ANSWER_TTL_S) -> None:
        if size < 1 or ttl_s <= 0:
            raise ValueError("an answer cache holds at least one entry for a positive time")
        self._size = size
        self._ttl = timedelta(seconds=ttl_s)
        self._catalog: Catalog | None = None
        self._entries: OrderedDict[Hashable, tuple[datetime, V]] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        return len(self._entries)

    def _bind(self, catalog: Catalog) -> None:
        if catalog is not self._catalog:
            self._catalog = catalog
            self._entries.clear()

    def get(self, key: Hashable, catalog: Catalog, now: datetime) -> V | None:
        """The value stored for ``key`` from this very catalog less than ``ttl_s`` ago."""
        self._bind(catalog)
        entry = self._entries.get(key)
        if entry is None or not entry[0] <= now < entry[0] + self._ttl:
            self.misses += 1
            return None
        self._entries.move_to_end(key)
        self.hits += 1
        return entry[1]

    def put(self, key: Hashable, catalog: Catalog, now: datetime, value: V) -> None:
        """Keep ``value`` (computed from ``catalog`` at ``now``) for ``key``; dropped when a
        newer catalog was seen while it was being computed."""
        if catalog is not self._catalog:
            return
        self._entries[key] = (now, value)
        self._entries.move_to_end(key)
        while len(self._entries) > self._size:
            self._entries.popitem(last=False)
