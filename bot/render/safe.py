"""What may reach a Slack user: no invisible controls, no markup in the fallback, no secrets.

* :func:`strip_controls` removes bidirectional overrides/isolates and zero-width characters
  (``U+202E`` can make ``exe.txt`` read ``txt.exe``; zero-width spaces hide words from
  moderation and make two different watch labels look the same). :func:`bot.render.limits.
  fit_message` applies it to every text object and the fallback of every message.
* :func:`escape_fallback` escapes ``<`` and ``>`` in a message's ``text`` fallback (Slack
  reads it as mrkdwn, so ``<!channel>`` there would notify a channel); it is idempotent, so
  text already escaped with :func:`bot.render.blocks.escape_mrkdwn` is unchanged.
* :func:`public_source_name` turns a price source's name (which defaults to its location: a
  URL that may carry ``user:password@``, ``?api_key=`` and an internal host) into what a user
  may see.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

__all__ = [
    "CONTROLS",
    "SOURCE_ERROR_TEXT",
    "escape_fallback",
    "public_caveat",
    "public_source_name",
    "public_text",
    "strip_controls",
]

#: The caveat of a source whose last refresh failed: the error itself (an internal host, an
#: HTTP client's message with the URL in it) is for the logs and ``gpufit feeds``.
SOURCE_ERROR_TEXT = "a price source failed its last refresh; these are its last good prices"

#: A URL with a scheme (the part a user may not see: credentials, host, query).
_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s\"'<>()]+", re.IGNORECASE)

#: Bidirectional controls (ALM, LRM, RLM, LRE…RLO, LRI…PDI) and zero-width characters (ZWSP,
#: ZWNJ, ZWJ, word joiner and the invisible operators, BOM, Mongolian vowel separator).
CONTROLS = re.compile("[\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")

#: Shown for a source whose name is a location with nothing safe to show.
_GENERIC_SOURCE = "price feed"


def public_text(text: str) -> str:
    """``text`` with every URL in it replaced by its public name (see
    :func:`public_source_name`): for library text that may name a source by its location."""
    return _URL.sub(lambda m: public_source_name(m.group(0)), text)


def public_caveat(kind: str, text: str) -> str:
    """A recommender caveat's text as users may see it: a failed refresh in fixed words,
    anything else with its URLs reduced to file names."""
    if kind == "source_error":
        return SOURCE_ERROR_TEXT
    return public_text(text)


def strip_controls(text: str) -> str:
    """``text`` without bidirectional and zero-width control characters."""
    return CONTROLS.sub("", text)


def escape_fallback(text: str) -> str:
    """A message's ``text`` fallback with ``<`` and ``>`` escaped and controls stripped."""
    return strip_controls(text).replace("<", "&lt;").replace(">", "&gt;")


def public_source_name(name: str) -> str:
    """A price source's name as users may see it.

    A plain name (``aws``, ``lambda-labs``) is kept. A location (a URL or a path, which is
    what an unnamed source is called) is reduced to its file name: no scheme, host, port,
    credentials, query or fragment (``https://u:p@10.0.0.7:8443/p/vms.csv?api_key=…`` →
    ``vms.csv``).
    """
    if "://" in name:
        path = urlsplit(name).path
    elif "/" in name or "\\" in name or "?" in name or "@" in name:
        path = name.split("?", 1)[0].split("#", 1)[0]
    else:
        return strip_controls(name)
    base = re.split(r"[/\\]", path.rstrip("/\\"))[-1]
    base = strip_controls(base)
    if not base or "@" in base or ":" in base:
        return _GENERIC_SOURCE
    return base
