"""A value computed when first read, for parts of an answer most questions never show.

A recommendation carries the smallest layout of every GPU type the catalog sells, but a
Slack answer shows them only when nothing fits: they are found if something reads them
(the JSON output and the terminal do). Plans defer their memory breakdowns and notes the
same way, through their search (:mod:`recommender.topology`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["Deferred"]

T = TypeVar("T")


class Deferred(Generic[T]):
    """``compute()``'s value, computed on the first :meth:`get` and kept.

    ``compute`` must be a pure function of what it captured: two deferred values are equal
    (and hash alike) when their values are, whether or not either was computed yet. The first
    reader computes it under a lock, so concurrent readers (questions run in several threads)
    share one computation.
    """

    __slots__ = ("_compute", "_lock", "_value")

    def __init__(self, compute: Callable[[], T]) -> None:
        self._compute: Callable[[], T] | None = compute
        self._lock: threading.Lock | None = threading.Lock()
        self._value: T | None = None

    @property
    def computed(self) -> bool:
        """Whether the value has been computed."""
        return self._compute is None

    def get(self) -> T:
        """The value, computed now if no one read it before."""
        lock = self._lock
        if lock is not None:
            with lock:
                compute = self._compute
                if compute is not None:
                    self._value = compute()
                    self._compute = None  # drop what it captured; the value is all we need
                    self._lock = None
        return self._value  # type: ignore[return-value]  # set above (T may include None)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Deferred):
            return NotImplemented
        return self is other or self.get() == other.get()

    def __hash__(self) -> int:
        return hash(self.get())

    def __repr__(self) -> str:
        return repr(self.get())
