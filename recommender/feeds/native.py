"""gpufit's own normalised JSON price feed (format ``gpufit-feed``, version 1).

The format is specified in ``docs/feed-format.md`` with a JSON Schema in
``docs/schema/feed-v1.schema.json``. This module only parses text: fetching, caching and
choosing an adapter happen elsewhere. It reads neither the environment nor the clock; the
as-of time comes from the document itself.

Reading is lenient where that is safe and strict where a wrong price would mislead:

* A document that is not JSON, not a ``gpufit-feed``, of an unknown version, without an
  ``as_of``, or without a single usable offer raises :class:`~recommender.errors.CatalogError`.
* A bad offer row is skipped, counted and explained ("row 17: unknown GPU 'H900'"); the rest
  of the feed still loads.
* Keys this version does not know are ignored, so publishers can add fields (``x_*`` by
  convention) without breaking older readers.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime
from typing import Any, TypeVar

from recommender.errors import CatalogError
from recommender.feeds.base import (
    MAX_REPORTED_ERRORS,
    MAX_USD_PER_GPU_HOUR,
    MIN_USD_PER_GPU_HOUR,
    NATIVE_FORMAT,
    ParsedFeed,
    RowError,
    resolve_gpu,
)
from recommender.feeds.json_offers import read_feed_document
from recommender.gpus import IntraNode
from recommender.pricing.offers import Fabric, Offer

__all__ = ["MAX_GPUS_PER_INSTANCE", "SUPPORTED_VERSION", "parse_native"]

#: The one document version this reader understands; why: docs/feed-format.md ("Versioning").
SUPPORTED_VERSION = 1

#: Most GPUs one rentable unit can have; why: a GB200 NVL72 rack (72 GPUs) is the largest
#: single shape any provider sells.
MAX_GPUS_PER_INSTANCE = 72

_HINT = (
    'A gpufit feed is a JSON object: {"format": "gpufit-feed", "version": 1, '
    '"as_of": "2026-11-20T00:00:00Z", "offers": [...]}. See docs/feed-format.md.'
)


_E = TypeVar("_E", IntraNode, Fabric)


def parse_native(text: str | bytes, *, source: str, max_offers: int | None = None) -> ParsedFeed:
    """Parse a gpufit feed document into offers.

    Args:
        text: the whole document, as text or as UTF-8 bytes (a byte-order mark is allowed).
        source: where the document came from (a path, URL or name); used in error messages
            and as each offer's ``source`` when neither the offer nor the document names one.
        max_offers: the feed cap: more offers than this are refused before any is parsed
            (the document is read offer by offer: ``recommender.feeds.json_offers``).

    Returns:
        The good offers, the document's as-of time, and an account of the rejected rows.
        ``as_of`` is the oldest of the document's ``as_of`` and the accepted offers' own
        ``as_of`` values, so the feed never looks fresher than its stalest price.

    Raises:
        FeedTooLargeError: more than ``max_offers`` offers.
        CatalogError: the document is not JSON, not a gpufit feed, of an unsupported version,
            has no valid ``as_of``, or has no offer that could be read.
    """
    feed = read_feed_document(_decoded(text, source), source=source, max_offers=max_offers)
    document = feed.header
    as_of = _document_header(document, source)
    if feed.count is None:
        raise CatalogError(
            f'{source}: a gpufit feed needs an "offers" list; got {_kind(document.get("offers"))}.',
            source=source,
            hint=_HINT,
        )
    if not feed.count:
        raise CatalogError(f"{source}: the feed has no offers.", source=source, hint=_HINT)

    doc_source = document.get("source")
    if isinstance(doc_source, str) and doc_source.strip():
        default_source = doc_source.strip()
    else:
        default_source = source

    offers: list[Offer] = []
    errors: list[str] = []
    rejected = 0
    seen: dict[str, int] = {}
    oldest = as_of
    for number, row in enumerate(feed.offers(), start=1):
        try:
            offer, offer_as_of = _parse_offer(row, default_source=default_source)
            first = seen.get(offer.key)
            if first is not None:
                raise RowError(
                    f"duplicate of row {first} (same provider, instance_type, gpu, gpu_count, "
                    "region, zone, spot)"
                )
        except RowError as exc:
            rejected += 1
            if len(errors) < MAX_REPORTED_ERRORS:
                errors.append(f"row {number}: {exc}")
            continue
        seen[offer.key] = number
        offers.append(offer)
        if offer_as_of is not None and offer_as_of < oldest:
            oldest = offer_as_of

    if not offers:
        shown = "; ".join(errors[:3])
        raise CatalogError(
            f"{source}: none of the {feed.count} offers could be read ({shown}).",
            source=source,
            hint="Fix the offers against docs/schema/feed-v1.schema.json.",
        )
    return ParsedFeed(
        offers=tuple(offers),
        as_of=oldest,
        rows=feed.count,
        rejected=rejected,
        errors=tuple(errors),
    )


# ------------------------------------------------------------------ document level


def _decoded(text: str | bytes, source: str) -> str:
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise CatalogError(
                f"{source}: not a gpufit feed: the bytes are not UTF-8 text "
                f"(bad byte at offset {exc.start}).",
                source=source,
                hint=_HINT,
            ) from None
    return text.removeprefix("\ufeff")


def _document_header(document: Mapping[str, Any], source: str) -> datetime:
    """Check ``format`` and ``version``; return the document's ``as_of``."""
    marker = document.get("format")
    if marker != NATIVE_FORMAT:
        found = "no format key" if marker is None else f"format {marker!r}"
        raise CatalogError(
            f"{source}: not a gpufit feed: {found}, expected format {NATIVE_FORMAT!r}.",
            source=source,
            hint=_HINT,
        )
    version = document.get("version")
    # JSON has one number type: 1.0 is the integer 1 (as JSON Schema's "integer" says too).
    if isinstance(version, float) and version.is_integer():
        version = int(version)
    if isinstance(version, bool) or not isinstance(version, int):
        raise CatalogError(
            f"{source}: the feed's version must be an integer such as 1; got {version!r}.",
            source=source,
            hint=_HINT,
        )
    if version != SUPPORTED_VERSION:
        newer = "newer than" if version > SUPPORTED_VERSION else "not"
        raise CatalogError(
            f"{source}: feed version {version} is {newer} the version this gpufit reads "
            f"({SUPPORTED_VERSION}).",
            source=source,
            hint="Upgrade gpufit, or ask the publisher for a version 1 feed.",
        )
    try:
        return _timestamp(document.get("as_of"), "as_of")
    except RowError as exc:
        raise CatalogError(f"{source}: {exc}.", source=source, hint=_HINT) from None


# ------------------------------------------------------------------ offer rows


def _parse_offer(row: object, *, default_source: str) -> tuple[Offer, datetime | None]:
    if not isinstance(row, dict):
        raise RowError(f"an offer must be an object; got {_kind(row)}")

    provider = _required_text(row, "provider").lower()
    instance_type = _required_text(row, "instance_type")
    region = _required_text(row, "region")
    zone = _optional_text(row, "zone") or ""

    gpu_count = _gpu_count(row)
    memory_gib = _optional_number(row, "gpu_memory_gib", upper=1024.0)
    gpu_id = resolve_gpu(_required_text(row, "gpu"), memory_gib=memory_gib)

    price = _required_number(row, "price_usd_per_hour")
    per_gpu = price / gpu_count
    if not MIN_USD_PER_GPU_HOUR <= per_gpu <= MAX_USD_PER_GPU_HOUR:
        raise RowError(
            f"price_usd_per_hour {price:g} is ${per_gpu:g} per GPU-hour, outside the believable "
            f"${MIN_USD_PER_GPU_HOUR:g}-${MAX_USD_PER_GPU_HOUR:g} (whole-instance USD per hour?)"
        )

    spot = row.get("spot")
    if not isinstance(spot, bool):
        raise RowError(f"spot must be true or false; got {spot!r}")

    intra_node = _optional_enum(row, "intra_node", IntraNode)
    fabric = _optional_enum(row, "fabric", Fabric) or Fabric.NONE
    fabric_gbps = _optional_number(row, "fabric_gbps", upper=100_000.0)
    if fabric_gbps is not None and fabric is Fabric.NONE:
        raise RowError("fabric_gbps is set but fabric is 'none'; name the fabric too")

    offer_as_of = _timestamp(row["as_of"], "as_of") if row.get("as_of") is not None else None
    try:
        offer = Offer(
            provider=provider,
            instance_type=instance_type,
            gpu_id=gpu_id,
            gpu_count=gpu_count,
            price_usd_per_hour=price,
            spot=spot,
            region=region,
            zone=zone,
            gpu_memory_gib=memory_gib,
            vcpus=_optional_number(row, "vcpus", upper=100_000.0),
            ram_gib=_optional_number(row, "ram_gib", upper=1_000_000.0),
            intra_node=intra_node,
            fabric=fabric,
            fabric_gbps=fabric_gbps,
            source=_optional_text(row, "source") or default_source,
        )
    except ValueError as exc:  # Offer's own invariants; the checks above should catch them first
        raise RowError(str(exc)) from None
    return offer, offer_as_of


def _gpu_count(row: Mapping[str, Any]) -> int:
    value = row.get("gpu_count")
    if value is None:
        raise RowError("gpu_count is missing")
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise RowError(f"gpu_count must be a whole number; got {value!r}")
    if isinstance(value, float) and not value.is_integer():
        raise RowError(f"gpu_count must be a whole number; got {value!r}")
    count = int(value)
    if not 1 <= count <= MAX_GPUS_PER_INSTANCE:
        raise RowError(f"gpu_count {count} is outside 1-{MAX_GPUS_PER_INSTANCE}")
    return count


def _required_text(row: Mapping[str, Any], key: str) -> str:
    value = _optional_text(row, key)
    if value is None:
        raise RowError(f"{key} is missing")
    return value


def _optional_text(row: Mapping[str, Any], key: str) -> str | None:
    value = row.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise RowError(f"{key} must be a string; got {value!r}")
    stripped = value.strip()
    if not stripped:
        return None
    return stripped


def _required_number(row: Mapping[str, Any], key: str) -> float:
    value = _optional_number(row, key, upper=math.inf)
    if value is None:
        raise RowError(f"{key} is missing")
    return value


def _optional_number(row: Mapping[str, Any], key: str, *, upper: float) -> float | None:
    value = row.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise RowError(f"{key} must be a number; got {value!r}")
    number = float(value)
    if not math.isfinite(number) or number <= 0:
        raise RowError(f"{key} must be a positive number; got {value!r}")
    if number > upper:
        raise RowError(f"{key} {value!r} is implausibly large")
    return number


def _optional_enum(row: Mapping[str, Any], key: str, kind: type[_E]) -> _E | None:
    value = row.get(key)
    if value is None:
        return None
    allowed = ", ".join(member.value for member in kind)
    if not isinstance(value, str):
        raise RowError(f"{key} must be one of {allowed}; got {value!r}")
    try:
        return kind(value.strip().lower())
    except ValueError:
        raise RowError(f"{key} {value!r} is not one of {allowed}") from None


def _timestamp(value: object, key: str) -> datetime:
    """An ISO 8601 date-time with a UTC offset ("2026-11-20T00:00:00Z")."""
    example = '"2026-11-20T00:00:00Z"'
    if value is None:
        raise RowError(f"{key} is missing; give the collection time, e.g. {example}")
    if not isinstance(value, str):
        raise RowError(f"{key} must be an ISO 8601 date-time string such as {example}")
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        raise RowError(f"{key} {value!r} is not an ISO 8601 date-time such as {example}") from None
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise RowError(f"{key} {value!r} has no UTC offset; write it as {example}")
    return moment


def _kind(value: object) -> str:
    """A JSON-flavoured name for a value's type, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
