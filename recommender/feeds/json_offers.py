"""A gpufit feed document read offer by offer, so its size in memory is its offers' and the cap
on offers holds before any is parsed.

``json.loads`` of a whole feed builds every offer's dict at once: a 28 MB document of 215k
compact offers took the worker to 437 MB (issue #34), whatever the cap on bytes. Here the top
level object is walked with :meth:`json.JSONDecoder.raw_decode` one key and value at a time;
the ``offers`` array is first counted element by element (each decoded and dropped: at most
one offer's dict is alive), and refused with :class:`FeedTooLargeError` past the cap; only
then are its elements decoded again, one at a time, for the parser.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from recommender.errors import CatalogError, FeedTooLargeError

__all__ = ["FeedDocument", "read_feed_document", "too_many_offers"]

_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()
#: What a JSON value is, by its first character (for "the document is …, not an object").
_KINDS = {"[": "a list", '"': "a string", "t": "a boolean", "f": "a boolean", "n": "null"}
_KINDS.update(dict.fromkeys("-0123456789", "a number"))


@dataclass(frozen=True, slots=True)
class FeedDocument:
    """A feed's top-level keys (all but ``offers``), and its offers, read lazily."""

    header: dict[str, Any]
    #: Elements of the ``offers`` array (``None``: the key is absent or not an array).
    count: int | None
    _text: str
    _start: int

    def offers(self) -> Iterator[object]:
        """The ``offers`` array's elements, decoded one at a time."""
        if self.count is None:
            return
        i = _ws(self._text, self._start + 1)
        for n in range(self.count):
            value, i = _DECODER.raw_decode(self._text, i)
            yield value
            i = _ws(self._text, i)
            if n + 1 < self.count:
                i = _ws(self._text, i + 1)  # the ',' checked by the first pass


def too_many_offers(source: str, max_offers: int) -> FeedTooLargeError:
    """The error of a feed over its cap on offers (every format)."""
    return FeedTooLargeError(
        f"{source}: the feed holds more than {max_offers} offers (the feed cap).",
        source=source,
        hint="Split the feed, or raise GPUFIT_FEED_MAX_OFFERS with the pods' memory limits "
        "(docs/operations.md, Feed cap).",
    )


def _ws(text: str, i: int) -> int:
    match = _WS.match(text, i)
    return match.end() if match else i


def _expect(text: str, i: int, chars: str, what: str) -> str:
    char = text[i : i + 1]
    if not char or char not in chars:
        raise json.JSONDecodeError(f"Expecting {what}", text, i)
    return char


def _count_array(text: str, i: int, max_offers: int | None, source: str) -> tuple[int, int]:
    """The index after the array at ``i`` and its element count (each decoded and dropped)."""
    i = _ws(text, i + 1)
    if text[i : i + 1] == "]":
        return i + 1, 0
    count = 0
    while True:
        _, i = _DECODER.raw_decode(text, i)
        count += 1
        if max_offers is not None and count > max_offers:
            raise too_many_offers(source, max_offers)
        i = _ws(text, i)
        if _expect(text, i, ",]", "',' delimiter") == "]":
            return i + 1, count
        i = _ws(text, i + 1)


def read_feed_document(text: str, *, source: str, max_offers: int | None) -> FeedDocument:
    """The document's header and its offers (lazily).

    Raises:
        FeedTooLargeError: more than ``max_offers`` offers.
        CatalogError: not JSON, not an object, or nested too deeply.
    """
    try:
        return _read(text, source, max_offers)
    except json.JSONDecodeError as exc:
        raise CatalogError(
            f"{source}: not a gpufit feed: invalid JSON at line {exc.lineno} column {exc.colno} "
            f"({exc.msg}).",
            source=source,
            hint="Check the document against docs/schema/feed-v1.schema.json.",
        ) from None
    except RecursionError:
        raise CatalogError(
            f"{source}: not a gpufit feed: the JSON is nested too deeply.",
            source=source,
            hint="A feed is an object with an offers list of flat objects.",
        ) from None


def _read(text: str, source: str, max_offers: int | None) -> FeedDocument:
    i = _ws(text, 0)
    if text[i : i + 1] != "{":
        # Named by its first character: decoding a large array just to name it would build it.
        kind = _KINDS.get(text[i : i + 1], "")
        if not kind:
            _DECODER.raw_decode(text, i)  # not JSON: raises with the position
        raise CatalogError(
            f"{source}: not a gpufit feed: the document is {kind}, not an object.",
            source=source,
            hint='A feed is {"format": "gpufit-feed", ...} (docs/feed-format.md).',
        )
    header: dict[str, Any] = {}
    count: int | None = None
    start = 0
    i = _ws(text, i + 1)
    if text[i : i + 1] == "}":
        return FeedDocument(header, None, text, 0)
    while True:
        _expect(text, i, '"', "property name enclosed in double quotes")
        key, i = _DECODER.raw_decode(text, i)
        i = _ws(text, i)
        _expect(text, i, ":", "':' delimiter")
        i = _ws(text, i + 1)
        if key == "offers" and text[i : i + 1] == "[":
            start = i
            i, count = _count_array(text, i, max_offers, source)
            header.pop("offers", None)
        else:
            header[key], i = _DECODER.raw_decode(text, i)
            if key == "offers":
                count = None
        i = _ws(text, i)
        if _expect(text, i, ",}", "',' delimiter") == "}":
            break
        i = _ws(text, i + 1)
    if _ws(text, i + 1) != len(text):
        raise json.JSONDecodeError("Extra data", text, _ws(text, i + 1))
    return FeedDocument(header, count, text, start)
