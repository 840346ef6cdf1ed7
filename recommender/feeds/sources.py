"""Price sources: how one is named (``[name=]location[;location…]``) and what refreshing
or inspecting it reports (:class:`SourceRefresh`, :class:`SourceStatus`)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum

from recommender.errors import CatalogError
from recommender.providers import canonical

__all__ = [
    "FeedSource",
    "RefreshOutcome",
    "RefreshReport",
    "SourceRefresh",
    "SourceStatus",
    "parse_sources",
]


@dataclass(frozen=True, slots=True)
class FeedSource:
    """A named price source: one document, or several read together (GCP hosts + GPUs)."""

    name: str
    locations: tuple[str, ...]
    #: The cloud of a CSV source when neither content nor file name tells it.
    provider: str | None = None

    @classmethod
    def parse(cls, spec: str) -> FeedSource:
        """``[name=]location[;location…]``; the name defaults to the (first) location.

        ``aws=https://host/aws/vms.csv`` names the source "aws" (and, being a provider id,
        tells the CSV adapters the provider); ``gcp=hosts.csv;gpus.csv`` reads two files as
        one GCP catalog.

        Raises:
            CatalogError: the spec names no location.
        """
        spec = spec.strip()
        name = ""
        head, sep, rest = spec.partition("=")
        if sep and re.fullmatch(r"[A-Za-z0-9_.-]+", head):
            name, spec = head, rest
        locations = tuple(part.strip() for part in spec.split(";") if part.strip())
        if not locations:
            raise CatalogError(
                f"Price source {spec!r} names no file or URL.",
                hint="Try: --catalog https://example.com/prices.json or --catalog aws=./vms.csv",
            )
        name = name or locations[0]
        # A name that is a cloud's id or catalog name tells the CSV adapters the cloud.
        provider = canonical(name)
        return cls(name=name, locations=locations, provider=provider)


def parse_sources(value: str) -> tuple[FeedSource, ...]:
    """Sources from a setting such as ``GPUFIT_FEEDS`` (specs separated by spaces or commas)."""
    return tuple(FeedSource.parse(spec) for spec in re.split(r"[\s,]+", value) if spec)


class RefreshOutcome(StrEnum):
    UPDATED = "updated"
    UNCHANGED = "unchanged"
    FAILED = "failed"


@dataclass(frozen=True, slots=True)
class SourceRefresh:
    """What one source's refresh did."""

    name: str
    outcome: RefreshOutcome
    rows: int = 0
    rejected: int = 0
    offers: int = 0
    error: str | None = None
    #: Reasons for the first few rejected rows.
    errors: tuple[str, ...] = ()
    #: Whether a last good snapshot is still being answered from (after a failure).
    kept_previous: bool = False
    #: Whether it failed because a document was over the size cap (``max_bytes``).
    too_large: bool = False


@dataclass(frozen=True, slots=True)
class RefreshReport:
    sources: tuple[SourceRefresh, ...]
    #: True when another replica held the refresh lock, so nothing was done.
    locked_out: bool = False

    @property
    def failed(self) -> tuple[SourceRefresh, ...]:
        return tuple(s for s in self.sources if s.outcome is RefreshOutcome.FAILED)


@dataclass(frozen=True, slots=True)
class SourceStatus:
    """One line of ``gpufit feed status``."""

    name: str
    locations: tuple[str, ...]
    as_of: datetime | None
    fetched_at: datetime | None
    age_hours: float | None
    rows: int
    rejected: int
    offers: int
    error: str | None
    error_at: datetime | None
    bundled: bool
    sha256: str
    errors: tuple[str, ...] = ()
