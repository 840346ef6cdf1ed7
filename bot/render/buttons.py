"""What a button carries: its value, written when the answer is rendered and read back when
the button is clicked (Slack returns the value as sent, at most 2,000 characters)."""

from __future__ import annotations

import json

__all__ = [
    "decode_launch_value",
    "decode_watch_value",
    "encode_launch_value",
    "encode_watch_value",
]


def encode_watch_value(query: str, offer_key: str) -> str:
    """The value of a "watch this price" button: the query and the offer's stable key."""
    return json.dumps({"q": query, "offer": offer_key}, separators=(",", ":"))


def decode_watch_value(value: str) -> tuple[str, str]:
    """``(query, offer_key)`` from a watch button's value; ``("", "")`` when malformed."""
    try:
        data = json.loads(value)
    except ValueError:
        return "", ""
    if not isinstance(data, dict):
        return "", ""
    return str(data.get("q", "")), str(data.get("offer", ""))


def encode_launch_value(query: str, rank: int, top: int, offer_key: str) -> str:
    """The value of a "Launch files" button: the question, the option's rank, how many options
    the answer showed (``recommend``'s ``top``) and the offer's key, to check it is the same."""
    return json.dumps({"q": query, "n": rank, "t": top, "offer": offer_key}, separators=(",", ":"))


def decode_launch_value(value: str) -> tuple[str, int, int, str]:
    """``(query, rank, top, offer_key)`` of a launch button; ``("", 0, 0, "")`` when malformed
    (a value is only a request: ``Infinity``, ``NaN``, a fraction or a string where a count
    belongs are malformed, never converted)."""
    try:
        data = json.loads(value, parse_constant=_no_constant)
        if not isinstance(data, dict):
            raise ValueError(value)
        return str(data["q"]), _count(data["n"]), _count(data["t"]), str(data["offer"])
    except (ValueError, KeyError, TypeError, RecursionError):
        return "", 0, 0, ""


def _no_constant(name: str) -> object:
    raise ValueError(name)  # Infinity, -Infinity, NaN: not JSON (RFC 8259), only Python's


def _count(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(value)
    return value
