"""Feed text made inert: control characters and terminal escape sequences removed.

A price feed is untrusted input, and its text (instance types, regions, the reasons a row was
rejected, which quote cells) reaches terminals (the CLI tables, the launch README), logs and
Slack. An escape sequence there can recolour or rewrite a terminal, and a bidirectional
override can make text read differently from what it is. :func:`scrub_feed` is applied to
every parsed document (``recommender.feeds.detect.parse_any``), so nothing stored from a feed
or shown from it carries them.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Any

from recommender.feeds.base import ParsedFeed
from recommender.pricing.offers import Offer

__all__ = ["scrub_feed", "strip_controls"]

# ECMA-48: CSI (ESC [ params final), OSC (ESC ] ... BEL or ESC \), and two-byte ESC sequences;
# the 8-bit CSI (0x9b) too.
_ESCAPES = re.compile(r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b.?")
# C0 controls, DEL, C1 controls, and the Unicode bidirectional embeddings, overrides and
# isolates (Unicode UAX #9: U+202A..U+202E, U+2066..U+2069).
_CONTROLS = re.compile(r"[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def strip_controls(text: str) -> str:
    """``text`` without escape sequences and control characters (a tab or newline becomes a
    space: feed fields are one line)."""
    if text.isprintable():
        return text  # the common case, without a regex pass
    text = _ESCAPES.sub("", text)
    return _CONTROLS.sub(lambda m: " " if m.group() in "\t\n\r" else "", text)


def _scrub_offer(offer: Offer) -> Offer:
    changes: dict[str, Any] = {
        f.name: strip_controls(value)
        for f in dataclasses.fields(offer)
        if isinstance(value := getattr(offer, f.name), str) and not value.isprintable()
    }
    return dataclasses.replace(offer, **changes) if changes else offer


def scrub_feed(parsed: ParsedFeed) -> ParsedFeed:
    """``parsed`` with every text field of its offers and its error reasons scrubbed."""
    return dataclasses.replace(
        parsed,
        offers=tuple(_scrub_offer(o) for o in parsed.offers),
        errors=tuple(strip_controls(e) for e in parsed.errors),
    )
