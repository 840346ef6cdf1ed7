"""Choose a feed adapter from a document's content, not its name or content type."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from enum import StrEnum

from recommender.errors import CatalogError
from recommender.feeds.base import ParsedFeed, looks_like_native
from recommender.feeds.gpuhunt import looks_like_gpuhunt, parse_gpuhunt
from recommender.feeds.gpuhunt_zip import is_zip, parse_gpuhunt_zip
from recommender.feeds.json_offers import too_many_offers
from recommender.feeds.native import parse_native
from recommender.feeds.scrub import scrub_feed
from recommender.feeds.skypilot import looks_like_skypilot, parse_skypilot

__all__ = ["FeedFormat", "detect_format", "parse_any"]

#: How much of a document the sniffers look at; why: every header fits in 4 KiB with room.
_HEAD_CHARS = 4096

_HINT = (
    "gpufit reads a SkyPilot catalog vms.csv, a gpuhunt catalog <provider>.csv (or its "
    "catalog.zip), or a gpufit "
    'feed JSON ({"format": "gpufit-feed", ...}; see docs/feed-format.md).'
)


class FeedFormat(StrEnum):
    NATIVE = "gpufit-feed"
    SKYPILOT = "skypilot"
    GPUHUNT = "gpuhunt"
    GPUHUNT_ZIP = "gpuhunt-zip"


def detect_format(text: str | bytes, *, source: str) -> FeedFormat:
    """The format of a document.

    Raises:
        CatalogError: the document is empty, not text, or in no known format.
    """
    if is_zip(text):  # by its magic bytes: gpuhunt publishes its catalog as a zip
        return FeedFormat.GPUHUNT_ZIP
    if isinstance(text, bytes):
        # A cut multi-byte character at the end of the head is not an error here.
        head = text[: _HEAD_CHARS * 4].decode("utf-8", errors="replace").removeprefix("\ufeff")
    else:
        head = text
    head = head[:_HEAD_CHARS]
    if not head.strip():
        raise CatalogError(f"{source}: the price source is empty.", source=source, hint=_HINT)
    if looks_like_native(head):
        return FeedFormat.NATIVE
    if looks_like_skypilot(head):
        return FeedFormat.SKYPILOT
    if looks_like_gpuhunt(head):
        return FeedFormat.GPUHUNT
    first = head.strip().splitlines()[0][:80]
    raise CatalogError(
        f"{source}: not a price feed gpufit can read (it starts {first!r}).",
        source=source,
        hint=_HINT,
    )


def parse_any(
    text: str | bytes | Sequence[str | bytes],
    *,
    source: str,
    as_of: datetime | None = None,
    provider: str | None = None,
    max_offers: int | None = None,
    max_bytes: int | None = None,
) -> ParsedFeed:
    """Parse a document (or several documents of one SkyPilot cloud) in whichever format it is,
    with its text scrubbed of control characters and escape sequences
    (:func:`recommender.feeds.scrub.scrub_feed`).

    ``as_of`` is used for the CSV formats, which do not state it; a gpufit feed states its own.
    ``provider`` names the cloud for CSV formats when the content or file name cannot.
    ``max_offers`` is the feed cap: a gpufit feed is refused before its offers are parsed
    (counted as it is read), a CSV one (whose memory its byte cap bounds) once parsed.
    ``max_bytes`` is the feed's byte cap, which also bounds what a gpuhunt archive may
    expand to (the parsed size).

    Raises:
        FeedTooLargeError: more than ``max_offers`` offers.
        CatalogError: empty, garbage, truncated beyond use, or of an unknown format.
    """
    parsed = _parse_any(
        text,
        source=source,
        as_of=as_of,
        provider=provider,
        max_offers=max_offers,
        max_bytes=max_bytes,
    )
    if max_offers is not None and len(parsed.offers) > max_offers:
        raise too_many_offers(source, max_offers)
    return scrub_feed(parsed)


def _parse_any(
    text: str | bytes | Sequence[str | bytes],
    *,
    source: str,
    as_of: datetime | None,
    provider: str | None,
    max_offers: int | None,
    max_bytes: int | None,
) -> ParsedFeed:
    texts = [text] if isinstance(text, str | bytes) else list(text)
    if not texts:
        raise CatalogError(f"{source}: no documents given.", source=source, hint=_HINT)
    formats = {detect_format(part, source=source) for part in texts}
    if len(formats) > 1:
        raise CatalogError(
            f"{source}: one source mixes formats ({', '.join(sorted(formats))}).",
            source=source,
            hint="Only a SkyPilot GCP catalog may come as several files (hosts + accelerators).",
        )
    kind = formats.pop()
    if kind is FeedFormat.SKYPILOT:
        return parse_skypilot(texts, source=source, as_of=as_of, provider=provider)
    if len(texts) > 1:
        raise CatalogError(
            f"{source}: a {kind} source is one document; got {len(texts)}.",
            source=source,
            hint=_HINT,
        )
    if kind is FeedFormat.GPUHUNT:
        return parse_gpuhunt(texts[0], source=source, as_of=as_of, provider=provider)
    if kind is FeedFormat.GPUHUNT_ZIP:
        data = texts[0]
        assert isinstance(data, bytes)  # is_zip() holds only for bytes
        expand = {} if max_bytes is None else {"max_expanded_bytes": max_bytes}
        return parse_gpuhunt_zip(data, source=source, as_of=as_of, provider=provider, **expand)
    return parse_native(texts[0], source=source, max_offers=max_offers)
