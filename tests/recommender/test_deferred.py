"""Deferred: a value computed on first read, once, equal by value."""

from __future__ import annotations

import threading
import time

from recommender.deferred import Deferred


def test_computed_once_when_first_read() -> None:
    calls: list[int] = []
    value = Deferred(lambda: calls.append(1) or (1, 2))
    assert not value.computed
    assert not calls
    assert value.get() == (1, 2)
    assert value.get() == (1, 2)
    assert value.computed
    assert calls == [1]


def test_concurrent_readers_share_one_computation() -> None:
    calls: list[int] = []
    start = threading.Barrier(8)

    def compute() -> int:
        calls.append(1)
        time.sleep(0.05)  # long enough for every reader to arrive while it runs
        return 42

    value = Deferred(compute)
    seen: list[int] = []

    def read() -> None:
        start.wait()
        seen.append(value.get())

    threads = [threading.Thread(target=read) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == [42] * 8
    assert calls == [1]


def test_equal_and_hashed_by_value_computed_or_not() -> None:
    given = Deferred(lambda: (1, "a"))
    given.get()
    later = Deferred(lambda: (1, "a"))
    other = Deferred(lambda: (2, "a"))
    assert given == later
    assert hash(given) == hash(later)
    assert given != other
    assert repr(later) == repr((1, "a"))
    assert given.__eq__((1, "a")) is NotImplemented


def test_a_none_value_is_kept() -> None:
    calls: list[int] = []
    value: Deferred[None] = Deferred(lambda: calls.append(1))
    assert value.get() is None
    assert value.get() is None
    assert calls == [1]
