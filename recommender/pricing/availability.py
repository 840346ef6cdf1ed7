"""Availability from the listing history: how often a shape was missing from its catalog.

A catalog lists what a provider sold when it was collected; a shape that comes and goes
between refreshes is one whose capacity is often gone (the seed: multi-GPU and multi-node
capacity must be confirmed in advance). The price store keeps, per source, one
:class:`Listing` per successful refresh (``recommender/feeds/listings.py``): when it ran,
whether the catalog changed, and the shapes the change added and removed. This module is the
pure part: from a source's listings and the shapes its current catalog lists, it tells, per
shape, in how many of the week's refreshes it was listed and when it was listed last.

A *shape* here is one provider's instance type with its GPUs in one region, on demand or spot
(a spot listing can go while the on-demand one stays): :func:`listing_key`. Zones are not part
of it: a shape listed in any zone of its region counts as listed. The GPUs are: a GCP N1 host
type lists T4s and P4s as two shapes, and one can go while the other stays.

Only refreshes count (a failed fetch tells nothing of what was listed); one that found the
catalog unchanged (HTTP 304, or the same bytes) lists what the refresh before it listed.
Before the first recorded refresh nothing is known, so the week may hold fewer refreshes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from recommender.ranking.caveats import Caveat, CaveatKind, Severity

if TYPE_CHECKING:
    from recommender.pricing.offers import Offer

__all__ = [
    "AVAILABILITY_WINDOW",
    "MIN_REFRESHES",
    "OFTEN_MISSING_FRAC",
    "Availability",
    "Listing",
    "availability",
    "availability_caveat",
    "legacy_listing_key",
    "listing_key",
]

#: The span availability is judged over; why: the issue asks for "this week".
AVAILABILITY_WINDOW = timedelta(days=7)
#: Fewer refreshes than this in the window say nothing either way (no caveat); why: one
#: refresh only repeats that the shape is listed now.
MIN_REFRESHES = 2  # ours
#: Absent from at least this share of the window's refreshes is "often missing" (a warning);
#: why: a shape gone one refresh in four is gone for hours at a time each day of the week.
OFTEN_MISSING_FRAC = 0.25  # ours


@dataclass(frozen=True, slots=True)
class Listing:
    """One successful refresh of a source, as the price store recorded it."""

    at: datetime
    #: False when the refresh found the catalog unchanged: it lists what the one before did.
    changed: bool = True
    #: Shapes (:func:`listing_key`) this refresh's catalog lists and the one before did not.
    added: frozenset[str] = frozenset()
    #: Shapes the catalog before listed and this refresh's catalog does not.
    gone: frozenset[str] = frozenset()
    #: The first refresh recorded (or the first after the store lost its data): what was
    #: listed before it is unknown.
    first: bool = False


@dataclass(frozen=True, slots=True)
class Availability:
    """How often one shape was listed in its source's refreshes over a window."""

    #: Refreshes in the window (since the window's start or the first recorded refresh).
    refreshes: int
    #: Of those, the refreshes whose catalog listed the shape.
    listed: int
    #: The latest refresh that listed the shape (``None``: none recorded).
    last_listed: datetime | None
    #: The oldest refresh counted.
    since: datetime | None

    @property
    def missing(self) -> int:
        return self.refreshes - self.listed


def listing_key(offer: Offer) -> str:
    """The shape an offer is listed as: provider, instance type, GPUs, region, on demand or
    spot (its :attr:`~recommender.pricing.offers.Offer.key` without the zone)."""
    return offer.identity(zone=False)


def legacy_listing_key(offer: Offer) -> str:
    """The shape as earlier versions logged it, without the GPUs (one GCP N1 host type then
    named every GPU model it carries); read only in the entries they wrote."""
    return offer.identity(zone=False, gpus=False)


def availability(
    key: str,
    listings: Sequence[Listing],
    *,
    listed_now: bool,
    now: datetime,
    window: timedelta = AVAILABILITY_WINDOW,
    legacy: str | None = None,
) -> Availability:
    """Shape ``key``'s listing record over ``window`` before ``now``.

    ``listings`` are one source's refreshes, oldest first; ``listed_now`` says whether the
    source's current catalog (the one its latest refresh stored) lists the shape. The walk goes
    from the latest refresh back, undoing each change: before a refresh, the shape was listed
    when it was listed after it and not added by it, or when the refresh removed it. Entries
    logged by earlier versions name shapes without their GPUs: ``legacy``
    (:func:`legacy_listing_key`) is looked for there too.
    """
    names = {key} if legacy is None else {key, legacy}
    start = now - window
    present = listed_now
    refreshes = listed = 0
    last: datetime | None = None
    since: datetime | None = None
    for listing in reversed(listings):
        if listing.at > now:
            continue
        if listing.at < start and last is not None:
            break  # the window is counted and the latest listing found
        if present and last is None:
            last = listing.at
        if listing.at >= start:
            refreshes += 1
            listed += present
            since = listing.at
        if listing.first:
            break
        if listing.changed:
            present = (present and names.isdisjoint(listing.added)) or not names.isdisjoint(
                listing.gone
            )
    return Availability(refreshes, listed, last, since)


def availability_caveat(offer: Offer, listings: Sequence[Listing], now: datetime) -> Caveat | None:
    """The answer's word on how reliably ``offer``'s shape was listed this week; ``None`` with
    too few refreshes to say (:data:`MIN_REFRESHES`)."""
    record = availability(
        listing_key(offer), listings, listed_now=True, now=now, legacy=legacy_listing_key(offer)
    )
    if record.refreshes < MIN_REFRESHES or record.since is None:
        return None
    span = "this week" if now - record.since >= AVAILABILITY_WINDOW / 2 else "so far"
    what = "spot price listed" if offer.spot else "listed"
    if record.missing == 0:
        return Caveat(
            CaveatKind.AVAILABILITY,
            Severity.INFO,
            f"{what} in every price refresh {span} ({record.refreshes} of {record.refreshes}); "
            "a listing is not a reservation, so confirm multi-GPU capacity before you rely on it",
        )
    often = record.missing >= OFTEN_MISSING_FRAC * record.refreshes
    return Caveat(
        CaveatKind.AVAILABILITY,
        Severity.WARN if often else Severity.INFO,
        f"{'often missing' if often else 'sometimes missing'}: absent from {record.missing} of "
        f"{record.refreshes} price refreshes {span}, so capacity comes and goes; "
        "confirm it before you plan on it",
    )
