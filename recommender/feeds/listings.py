"""The listing log in Redis: per source, what each successful refresh listed.

:mod:`recommender.availability` judges from it how often a shape was missing this week. Keys,
under the store's prefix (``gpufit:feed`` by default)::

    {p}:shapes:{name}     SET: the shapes (``listing_key``) of the source's latest catalog
    {p}:listings:{name}   ZSET score=unix time, member=JSON of one refresh:
                          {"at": time, "changed": bool, "added": [...], "gone": [...],
                           "first": bool}

A refresh that stores a new catalog writes what it added and removed against the shape set,
then replaces the set; one that found the catalog unchanged writes a bare entry. Only changes
are kept, not each refresh's whole listing, so a week of 15-minute refreshes of a catalog that
rarely changes costs a few hundred small entries. Entries older than :data:`LISTING_MAX_AGE`
are trimmed at each write. The refresh writes the log before it stores the snapshot (which
moves the catalog's version), so a reader that sees the new version sees its entry too.

Why not the price history (``{p}:hist:…``): it skips an unchanged price seen within the hour,
and a refresh that found the catalog unchanged writes no history at all, so a shape's missing
points there do not mean it was missing.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from recommender.availability import Listing

if TYPE_CHECKING:
    import redis.asyncio as aioredis

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

    async def record_update(self, name: str, shapes: Iterable[str], *, at: datetime) -> None:
        """A refresh of ``name`` that stored a new catalog listing ``shapes``."""
        new = set(shapes)
        key = self._key("shapes", name)
        async with self.client.pipeline(transaction=False) as pipe:
            pipe.exists(key)
            pipe.smembers(key)
            exists, previous = await pipe.execute()
        old = {str(s) for s in previous}
        entry: dict[str, Any] = {"at": at.timestamp(), "changed": True}
        if exists:
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

        Nothing is written while no catalog of ``name`` was recorded (a store written by an
        older version): what it lists is not known until its next change.
        """
        if not await self.client.exists(self._key("shapes", name)):
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


def _listing(member: Any) -> Listing:
    entry = json.loads(member)
    return Listing(
        at=datetime.fromtimestamp(float(entry["at"]), UTC),
        changed=bool(entry.get("changed", True)),
        added=frozenset(entry.get("added", ())),
        gone=frozenset(entry.get("gone", ())),
        first=bool(entry.get("first", False)),
    )
