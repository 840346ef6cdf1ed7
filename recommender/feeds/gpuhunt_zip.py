"""gpuhunt's published catalog archive: a zip of per-provider ``<provider>.csv`` files.

gpuhunt downloads its catalog as ``catalog.zip`` and reads the member ``<provider>.csv`` of
each provider (``src/gpuhunt/_internal/catalog.py``: ``zip_file.open(f"{provider_name}.csv")``;
catalog v3 publishes one archive per provider, ``…/<provider>/<version>/catalog.zip``). Each
member is read by :func:`recommender.feeds.gpuhunt.parse_gpuhunt`; the provider comes from the
member's name, else the caller's provider, else a path segment of the URL naming a gpuhunt
provider. A zip is told by its magic bytes (``PK\\x03\\x04``, APPNOTE.TXT 4.3.7).
"""

from __future__ import annotations

import io
import zipfile
from datetime import datetime
from pathlib import PurePosixPath
from urllib.parse import urlsplit

from recommender.errors import CatalogError, FeedTooLargeError
from recommender.feeds.base import MAX_REPORTED_ERRORS, ParsedFeed
from recommender.feeds.gpuhunt import GPUHUNT_PROVIDERS, parse_gpuhunt, provider_from_location
from recommender.pricing.offers import Offer

__all__ = ["ZIP_MAGIC", "is_zip", "parse_gpuhunt_zip"]

#: A zip's local file header signature (PKWARE APPNOTE.TXT, 4.3.7).
ZIP_MAGIC = b"PK\x03\x04"
#: Most bytes the members may expand to; why: a whole gpuhunt catalog is ~20 MB of CSV, so
#: this leaves room while refusing a zip bomb.
MAX_UNCOMPRESSED_BYTES = 256 * 2**20  # ours

_HINT = "A gpuhunt catalog archive is a zip of <provider>.csv files (aws.csv, gcp.csv, ...)."


def is_zip(data: str | bytes) -> bool:
    return isinstance(data, bytes) and data.startswith(ZIP_MAGIC)


def _provider_in_url(location: str) -> str | None:
    path = urlsplit(location).path if "://" in location else location
    for part in reversed(PurePosixPath(path).parts):
        if part.lower() in GPUHUNT_PROVIDERS:
            return provider_from_location(f"{part.lower()}.csv")
    return None


def parse_gpuhunt_zip(
    data: bytes,
    *,
    source: str,
    as_of: datetime | None = None,
    provider: str | None = None,
    max_expanded_bytes: int = MAX_UNCOMPRESSED_BYTES,
) -> ParsedFeed:
    """Parse every ``*.csv`` member of a gpuhunt catalog archive into one feed; its members
    may expand to at most ``max_expanded_bytes`` (the feed's byte cap: the text parsed from
    an archive is held to what the same feed could download as CSV).

    A member whose provider cannot be told, or that cannot be read, is reported in
    ``errors`` and skipped.

    Raises:
        FeedTooLargeError: the members expand past ``max_expanded_bytes``.
        CatalogError: not a readable zip, no CSV member, or no member with a usable row.
    """
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
        members = [m for m in archive.infolist() if m.filename.lower().endswith(".csv")]
    except (zipfile.BadZipFile, OSError) as exc:
        raise CatalogError(
            f"{source}: a broken zip archive ({exc}).", source=source, hint=_HINT
        ) from None
    if not members:
        raise CatalogError(f"{source}: the zip holds no .csv file.", source=source, hint=_HINT)
    # The sizes the archive declares; zipfile reads no member past its declared size.
    limit = min(max_expanded_bytes, MAX_UNCOMPRESSED_BYTES)
    if sum(m.file_size for m in members) > limit:
        raise FeedTooLargeError(
            f"{source}: the archive expands past {limit / 2**20:.1f} MiB (the feed cap).",
            source=source,
            hint=_HINT,
        )
    fallback = provider or _provider_in_url(source)
    offers: list[Offer] = []
    rows = rejected = 0
    errors: list[str] = []
    for member in sorted(members, key=lambda m: m.filename):
        name = member.filename
        cloud = provider_from_location(name) or fallback
        if cloud is None:
            errors.append(f"{name}: not named after a gpuhunt provider (aws.csv, ...)")
            continue
        try:
            text = archive.read(member)
            feed = parse_gpuhunt(text, source=source, as_of=as_of, provider=cloud)
        except CatalogError as exc:
            errors.append(f"{name}: {exc.message}")
            continue
        except (zipfile.BadZipFile, OSError) as exc:
            errors.append(f"{name}: unreadable ({exc})")
            continue
        offers.extend(feed.offers)
        rows += feed.rows
        rejected += feed.rejected
        errors.extend(f"{name}: {e}" for e in feed.errors)
    if not offers:
        shown = "; ".join(errors[:3]) or "no GPU rows"
        raise CatalogError(
            f"{source}: no member of the gpuhunt archive could be read ({shown}).",
            source=source,
            hint=_HINT,
        )
    return ParsedFeed(
        offers=tuple(offers),
        as_of=as_of,
        rows=rows,
        rejected=rejected,
        errors=tuple(errors[:MAX_REPORTED_ERRORS]),
    )
