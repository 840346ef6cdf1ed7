"""The listing log in Redis: per source, what each successful refresh listed.

:mod:`recommender.pricing.availability` judges from it how often a shape was missing this week.
Keys, under the store's prefix (``gpufit:feed`` by default)::

    {p}:shapes2:{name}    SET: the shapes (``listing_key``) of the source's latest catalog
    {p}:shapes:{name}     SET: the same, as earlier versions wrote it (shapes without their
                          GPUs, ``legacy_listing_key``); read once, left in place
    {p}:listings:{name}   ZSET score=unix time, member=JSON of one refresh:
                          {"at": time, "changed": bool, "added": [...], "gone": [...],
                           "first": bool}

A refresh that stores a new catalog writes what it added and removed against the shape set,
then replaces the set; one that found the catalog unchanged writes a bare entry. Only changes
are kept, not each refresh's whole listing, so a week of 15-minute refreshes of a catalog that
rarely changes costs a few hundred small entries. Entries older than :data:`LISTING_MAX_AGE`
are trimmed at each write. The refresh writes the log before it stores the snapshot (which
moves the catalog's version), so a reader that sees the new version sees its entry too.

Shapes name their GPUs from this version on (a GCP N1 host type carries several GPU models).
The first refresh on a store written by an earlier version finds only ``shapes``: it reads
that set in the new terms (each old shape is every shape of the new catalog that it names,
:func:`_carried_over`), so the change is logged as what really changed, not as every shape
gone and added, which would read as a week of absences. Entries earlier versions logged keep
their old names; :func:`recommender.pricing.availability.availability` looks those up by the old
name. ``shapes`` is left in place for older replicas still running during a rolling upgrade (they
diff against the last set they wrote); it can be deleted once none is left.

Why not the price history (``{p}:hist:…``): it skips an unchanged price seen within the hour,
and a refresh that found the catalog unchanged writes no history at all, so a shape's missing
points there do not mean it was missing.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from recommender.pricing.availability import Listing, legacy_listing_key, listing_key

if TYPE_CHECKING:
    import redis.asyncio as aioredis

    from recommender.pricing.offers import Offer

__all__ = ["LISTING_MAX_AGE", "ListingLog"]

#: How long refreshes are kept; why: the week availability is judged over, plus a day.
LISTING_MAX_AGE = timedelta(days=8)

#: Shapes per SADD when the shape set is rewritten; why: one command's argument list stays
#: small (a 29k-offer catalog is a few commands) in one transaction.
_SADD_BATCH = 5000  # ours


class ListingLog:
    """One Redis database's listing logs (see the module docstring). Redis errors propagate."""

    def __init__(self, client: aioredis.Redis, *, prefix: str) -> None:
        self.client = client
        self.prefix = prefix

    def _key(self, kind: str, name: str) -> str:
        return f"{self.prefix}:{kind}:{name}"

    async def record_update(self, name: str, offers: Iterable[Offer], *, at: datetime) -> None:
        """A refresh of ``name`` that stored a new catalog of ``offers``."""
        shapes = {listing_key(o): legacy_listing_key(o) for o in offers}
        new = set(shapes)
        key = self._key("shapes2", name)
        async with self.client.pipeline(transaction=False) as pipe:
            pipe.exists(key)
            pipe.smembers(key)
            exists, previous = await pipe.execute()
        old: set[str] | None = {str(s) for s in previous} if exists else None
        if old is None:
            earlier = self._key("shapes", name)
            async with self.client.pipeline(transaction=False) as pipe:
                pipe.exists(earlier)
                pipe.smembers(earlier)
                exists, previous = await pipe.execute()
            if exists:
                old = _carried_over({str(s) for s in previous}, shapes)
        entry: dict[str, Any] = {"at": at.timestamp(), "changed": True}
        if old is not None:
            entry["added"] = sorted(new - old)
            entry["gone"] = sorted(old - new)
        else:
            entry["first"] = True  # nothing recorded before: what was listed is unknown
        ordered = sorted(new)
        async with self.client.pipeline(transaction=True) as pipe:
            pipe.delete(key)
            for start in range(0, len(ordered), _SADD_BATCH):
                pipe.sadd(key, *ordered[start : start + _SADD_BATCH])
            self._append(pipe, name, entry, at)
            await pipe.execute()

    async def record_unchanged(self, name: str, *, at: datetime) -> None:
        """A refresh of ``name`` that found its catalog unchanged (it lists what it listed).

        Nothing is written while no catalog of ``name`` was recorded, in either shape set (a
        store written by a version before the listing log): what it lists is not known until
        its next change.
        """
        if not await self.client.exists(self._key("shapes2", name), self._key("shapes", name)):
            return
        async with self.client.pipeline(transaction=True) as pipe:
            self._append(pipe, name, {"at": at.timestamp(), "changed": False}, at)
            await pipe.execute()

    def _append(self, pipe: Any, name: str, entry: dict[str, Any], at: datetime) -> None:
        log = self._key("listings", name)
        pipe.zadd(log, {json.dumps(entry, separators=(",", ":")): entry["at"]})
        pipe.zremrangebyscore(log, "-inf", f"({(at - LISTING_MAX_AGE).timestamp()}")

    async def load(self, names: Sequence[str]) -> dict[str, tuple[Listing, ...]]:
        """Each source's refreshes, oldest first (no entry: none recorded)."""
        if not names:
            return {}
        async with self.client.pipeline(transaction=False) as pipe:
            for name in names:
                pipe.zrange(self._key("listings", name), 0, -1)
            replies = await pipe.execute()
        return {
            name: tuple(_listing(member) for member in members)
            for name, members in zip(names, replies, strict=True)
            if members
        }


def _carried_over(earlier: set[str], shapes: Mapping[str, str]) -> set[str]:
    """A shape set an earlier version wrote (shapes without GPUs), in this version's terms:
    each old shape becomes every shape of the new catalog (``shapes``: shape → its old name)
    it names; one the new catalog does not list stays as it was, and is logged gone."""
    named: dict[str, set[str]] = {}
    for shape, legacy in shapes.items():
        named.setdefault(legacy, set()).add(shape)
    carried: set[str] = set()
    for legacy in earlier:
        carried |= named.get(legacy, {legacy})
    return carried


def _listing(member: Any) -> Listing:
    entry = json.loads(member)
    return Listing(
        at=datetime.fromtimestamp(float(entry["at"]), UTC),
        changed=bool(entry.get("changed", True)),
        added=frozenset(entry.get("added", ())),
        gone=frozenset(entry.get("gone", ())),
        first=bool(entry.get("first", False)),
    )
