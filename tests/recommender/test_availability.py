"""Availability from a source's listings: the walk back through changes, and the caveat the
answer carries (recommender.pricing.availability)."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

from recommender.pricing.availability import (
    AVAILABILITY_WINDOW,
    Listing,
    availability,
    availability_caveat,
    legacy_listing_key,
    listing_key,
)
from recommender.ranking.caveats import CaveatKind, Severity
from recommender.ranking.recommend import recommend
from tests.factories import NOW, catalog, offer, workload

KEY = "aws/p5.48xlarge/8xH100-SXM-80GB/us-east-1/od"
#: The same shape as versions before GPUs were part of shapes logged it.
LEGACY = "aws/p5.48xlarge/us-east-1/od"
HOUR = timedelta(hours=1)


def _hourly(
    count: int,
    *,
    gone_at: set[int] = frozenset(),
    back_at: set[int] = frozenset(),
    key: str = KEY,
):
    """``count`` hourly refreshes ending an hour before NOW; the shape leaves at the refreshes
    in ``gone_at`` and returns at those in ``back_at``; the rest are unchanged."""
    out = [Listing(NOW - count * HOUR, first=True)]
    for i in range(1, count):
        at = NOW - (count - i) * HOUR
        if i in gone_at:
            out.append(Listing(at, gone=frozenset({key})))
        elif i in back_at:
            out.append(Listing(at, added=frozenset({key})))
        else:
            out.append(Listing(at, changed=False))
    return tuple(out)


def test_listed_throughout() -> None:
    record = availability(KEY, _hourly(12), listed_now=True, now=NOW)
    assert (record.refreshes, record.listed, record.missing) == (12, 12, 0)
    assert record.last_listed == NOW - HOUR
    assert record.since == NOW - 12 * HOUR


def test_gone_for_three_refreshes_then_back() -> None:
    """Gone at refresh 4, back at 7: absent from refreshes 4, 5 and 6."""
    listings = _hourly(12, gone_at={4}, back_at={7})
    record = availability(KEY, listings, listed_now=True, now=NOW)
    assert (record.refreshes, record.missing) == (12, 3)


def test_gone_now() -> None:
    """Not in the current catalog: last listed at the refresh before it left."""
    listings = _hourly(6, gone_at={4})
    record = availability(KEY, listings, listed_now=False, now=NOW)
    assert (record.refreshes, record.listed) == (6, 4)
    assert record.last_listed == NOW - 3 * HOUR


def test_only_the_window_counts_and_the_first_refresh_bounds_it() -> None:
    """Refreshes before the window are walked for changes but not counted; nothing before the
    first recorded refresh is known."""
    weekly = AVAILABILITY_WINDOW // HOUR
    listings = _hourly(int(weekly) + 24, gone_at={2}, back_at={5})
    record = availability(KEY, listings, listed_now=True, now=NOW)
    assert (record.refreshes, record.missing) == (weekly, 0)
    record = availability(KEY, listings, listed_now=True, now=NOW, window=10_000 * HOUR)
    assert (record.refreshes, record.missing) == (weekly + 24, 3)


def test_refreshes_after_now_are_ignored() -> None:
    listings = (*_hourly(3), Listing(NOW + HOUR, gone=frozenset({KEY})))
    assert availability(KEY, listings, listed_now=True, now=NOW).refreshes == 3


def test_entries_an_earlier_version_logged_count_by_the_old_name() -> None:
    """Refreshes logged before shapes named their GPUs name the shape the old way: the walk
    undoes their changes too, as the caveat does with the offer's own old name."""
    earlier = _hourly(8, gone_at={2}, back_at={4}, key=LEGACY)
    later = tuple(Listing(NOW + i * HOUR, changed=False) for i in range(4))
    listings = (*earlier, *later)
    now = NOW + 4 * HOUR
    assert availability(KEY, listings, listed_now=True, now=now).missing == 0
    record = availability(KEY, listings, listed_now=True, now=now, legacy=LEGACY)
    assert (record.refreshes, record.missing) == (12, 2)
    caveat = availability_caveat(offer(), listings, now)
    assert caveat is not None
    assert "absent from 2 of 12" in caveat.text


def test_two_gpu_models_on_one_host_type_are_two_shapes() -> None:
    """GCP's n1-highmem-8 with a T4 and with a P4: a T4 listing gone while the P4 one stays
    is a missing T4 shape."""
    t4 = offer(provider="gcp", instance_type="n1-highmem-8", gpu_id="T4", gpu_count=1)
    p4 = replace(t4, gpu_id="P4")
    assert listing_key(t4) != listing_key(p4)
    assert legacy_listing_key(t4) == legacy_listing_key(p4)
    listings = _hourly(8, gone_at={2}, back_at={4}, key=listing_key(t4))
    assert availability(listing_key(t4), listings, listed_now=True, now=NOW).missing == 2
    assert availability(listing_key(p4), listings, listed_now=True, now=NOW).missing == 0


def test_caveat_words() -> None:
    o = offer()
    assert listing_key(o) == KEY
    assert legacy_listing_key(o) == LEGACY
    steady = availability_caveat(o, _hourly(168), NOW)
    assert steady is not None
    assert (steady.kind, steady.severity) == (CaveatKind.AVAILABILITY, Severity.INFO)
    assert steady.text.startswith("listed in every price refresh this week (168 of 168)")
    rare = availability_caveat(o, _hourly(12, gone_at={4}, back_at={5}), NOW)
    assert rare is not None
    assert rare.severity is Severity.INFO
    assert rare.text.startswith("sometimes missing: absent from 1 of 12 price refreshes so far")
    often = availability_caveat(o, _hourly(12, gone_at={4}, back_at={7}), NOW)
    assert often is not None
    assert often.severity is Severity.WARN
    assert often.text.startswith("often missing: absent from 3 of 12 price refreshes so far")
    assert availability_caveat(o, _hourly(1), NOW) is None  # one refresh says nothing


def test_the_answer_carries_it() -> None:
    """recommend() adds the caveat to each option from its source's listings; a source
    without listings adds none."""
    plain = catalog(offer())
    rec = recommend(workload(), plain, now=NOW)
    assert rec.options
    assert not any(c.kind is CaveatKind.AVAILABILITY for c in rec.options[0].caveats)
    logged = replace(
        plain,
        sources=tuple(
            replace(s, listings=_hourly(12, gone_at={4}, back_at={7})) for s in plain.sources
        ),
    )
    rec = recommend(workload(), logged, now=NOW)
    found = [c for c in rec.options[0].caveats if c.kind is CaveatKind.AVAILABILITY]
    assert [c.severity for c in found] == [Severity.WARN]
