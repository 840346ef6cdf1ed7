"""Compact JSON text, written by pydantic-core's serializer (Rust), a dependency already.

The standard library's encoder spends ~90 µs on a ~6 KB answer (21 Block Kit blocks, ~330
values) and ~20 ms on a 29k-offer price snapshot; pydantic-core's ~25 µs and ~3 ms
(``docs/benchmarks.md``). The text is the standard library's for the documents gpufit writes:
strings, ints, bools, ``None``, lists, tuples and dicts with string keys. Floats keep their
value but may be spelled otherwise (``1e-7`` for ``1e-07``); values the standard library
refuses but pydantic-core writes (sets, bytes, datetimes) are written its way. What
pydantic-core refuses (a lone surrogate from a ``\\ud800`` escape in a feed, nesting deeper
than its limit, a list that contains itself) goes to the standard library, as before.
"""

from __future__ import annotations

import json

from pydantic_core import PydanticSerializationError, to_json

__all__ = ["compact_json"]

#: ``json.dumps(value, ensure_ascii=False, separators=(",", ":"))``, built once.
_STDLIB = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def compact_json(value: object) -> str:
    """``value`` as compact JSON text (``","`` and ``":"`` without spaces), non-ASCII
    characters written as themselves: ``json.dumps(value, ensure_ascii=False,
    separators=(",", ":"))`` for gpufit's documents (see the module's note on floats and
    keys).

    Raises:
        TypeError: ``value`` holds something neither can write (as ``json.dumps``).
        ValueError: ``value`` contains itself (as ``json.dumps``).
    """
    try:
        return to_json(value).decode()
    except PydanticSerializationError:
        return _STDLIB.encode(value)
