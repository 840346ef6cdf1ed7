"""Watches, their hysteresis state and the alert outbox, in Redis.

Keys (all under ``{prefix}:``)::

    watch:seq                         INCR → watch ids W1, W2, …
    watch:{id}                        the watch (JSON)
    watches:{team}:{channel}          ZSET of the channel's watch ids (score: creation order)
    watches:all                       SET of every watch id (the worker's work list)
    watches:user:{team}:{user}        SET of the watch ids a user created (the user's quota)
    watches:team:{team}               SET of a workspace's watch ids (the workspace's quota)
    watchstate:{id}                   WatchState (JSON); changed only inside WATCH/MULTI
    alert:{watch}:{n}:{offer}         one claimed alert (JSON AlertRecord), SET NX: the
                                      idempotency key of the n-th crossing of a watch
    alerts:due                        ZSET alert key → when to (re)try delivery (epoch s)
    alertlease:{key}                  SET NX PX: the replica delivering that alert right now
    digest:{team}:{channel}:{day}     the day's digest claim (same record shape)

Claimed exactly once: the state transition that decides "this is a crossing" and the claim of its
alert key happen in one optimistic transaction, so two replicas evaluating the same watch
cannot both decide to alert; the claim is ``SET NX`` on a key that names the watch, the
crossing number and the offer, so even a replayed transaction cannot claim it twice. (Posting
it at most once is :mod:`bot.alerts.delivery`'s part.)

Caps: a new watch is checked against the channel's cap and the user's and the workspace's
quotas and stored in one Lua script (:data:`_ADD_WATCH`), so concurrent creates cannot all
pass the check before any of them writes (200 concurrent creates stored 58 watches against
a cap of 50 when the check and the write were separate commands). The user and workspace
sets are kept from this version on: watches created by earlier versions count towards the
channel's cap only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime

import redis.asyncio as aioredis
from redis.exceptions import RedisError, WatchError

from bot.alerts.codec import (
    AlertRecord,
    dump_state,
    dump_watch,
    load_state,
    load_watch,
)
from bot.alerts.evaluate import PricePoint, Verdict, WatchState, step
from bot.alerts.model import ImpossibleWatchError, Watch, WatchNotFoundError, WatchSpec
from recommender import StoreError

__all__ = [
    "MAX_WATCHES_PER_CHANNEL",
    "MAX_WATCHES_PER_USER",
    "MAX_WATCHES_PER_WORKSPACE",
    "AlertQueue",
    "AlertRenderer",
    "Evaluation",
    "WatchStore",
]

#: A channel's listing must fit one Slack message (50 blocks, 3000 chars per section).
MAX_WATCHES_PER_CHANNEL = 50  # ours: one line per watch stays readable and within Block Kit
#: One user's watches across channels; why: one user (or a script with their token) must not
#: fill a workspace's share of the worker's evaluation pass.
MAX_WATCHES_PER_USER = 100  # ours: two full channels' worth
#: A workspace's watches; why: each watch costs an evaluation per catalog refresh, so one
#: workspace must not slow every other's alerts.
MAX_WATCHES_PER_WORKSPACE = 500  # ours: ten full channels

# Checks the caps and stores a watch, atomically (see the module's Caps paragraph).
# KEYS: 1 the channel's ZSET, 2 the user's SET, 3 the workspace's SET, 4 watch:{id},
# 5 watchstate:{id}, 6 watches:all. ARGV: 1 the id, 2 its score (the sequence number),
# 3 the watch JSON, 4 the state JSON, 5-7 the channel, user and workspace caps.
# Returns 0 when stored, else 1, 2 or 3: the cap (channel, user, workspace) that was full.
_ADD_WATCH = """
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[5]) then return 1 end
if redis.call('SCARD', KEYS[2]) >= tonumber(ARGV[6]) then return 2 end
if redis.call('SCARD', KEYS[3]) >= tonumber(ARGV[7]) then return 3 end
redis.call('SET', KEYS[4], ARGV[3])
redis.call('SET', KEYS[5], ARGV[4])
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
redis.call('SADD', KEYS[2], ARGV[1])
redis.call('SADD', KEYS[3], ARGV[1])
redis.call('SADD', KEYS[6], ARGV[1])
return 0
"""


def _full(which: int, cap: int) -> ImpossibleWatchError:
    """The error for the full cap the script named (1 channel, 2 user, 3 workspace)."""
    if which == 1:
        return ImpossibleWatchError(
            f"This channel already has {cap} watches.",
            hint="Remove some with `/gpufit unwatch ID` (see `/gpufit watches`).",
        )
    if which == 2:
        return ImpossibleWatchError(
            f"You already have {cap} watches in this workspace.",
            hint="Remove some with `/gpufit unwatch ID` in the channels that hold them.",
        )
    return ImpossibleWatchError(
        f"This workspace already has {cap} watches.",
        hint="Ask the channels that hold them to remove some with `/gpufit unwatch ID`.",
    )


#: How long a claimed alert key is kept: long after any retry, short enough to expire.
ALERT_KEY_TTL_S = 14 * 24 * 3600  # ours: two weeks of dedupe history per alert
#: How often a transaction retries when another replica changed the same watch meanwhile.
_TXN_ATTEMPTS = 8  # ours: contention is two or three replicas, so a few retries always win


def _s(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class Evaluation:
    """What applying one price observation to a watch did."""

    __slots__ = ("alert", "before", "state", "verdict")

    def __init__(
        self, verdict: Verdict, state: WatchState, before: WatchState, alert: str | None
    ) -> None:
        self.verdict = verdict
        self.state = state
        self.before = before
        #: The alert key this evaluation claimed (``None`` when it claimed nothing).
        self.alert = alert


#: Builds the record of a claimed alert, rendered once so any replica posts the same text.
AlertRenderer = Callable[[Watch, Verdict, WatchState, PricePoint, str], AlertRecord]


class WatchStore:
    """Watches per workspace and channel; only their own channel lists or removes them."""

    def __init__(
        self,
        redis: aioredis.Redis,
        *,
        prefix: str = "gpufit",
        max_per_channel: int = MAX_WATCHES_PER_CHANNEL,
        max_per_user: int = MAX_WATCHES_PER_USER,
        max_per_workspace: int = MAX_WATCHES_PER_WORKSPACE,
    ) -> None:
        self._r = redis
        self._p = prefix
        self._caps = (max_per_channel, max_per_user, max_per_workspace)
        self._add_watch = redis.register_script(_ADD_WATCH)

    def _k(self, *parts: str) -> str:
        return ":".join((self._p, *parts))

    async def add(
        self,
        *,
        team_id: str,
        channel_id: str,
        created_by: str,
        spec: WatchSpec,
        text: str,
        now: datetime,
        current: PricePoint | None,
    ) -> Watch:
        """Store a new watch. It is armed unless the price is already at or below the threshold.

        Raises:
            ImpossibleWatchError: the channel, the user or the workspace already has the
                maximum number of watches.
            StoreError: Redis failed.
        """
        channel_key = self._k("watches", team_id, channel_id)
        try:
            # The id is taken first (a rejected watch leaves a gap in the sequence): the
            # stored JSON names it, and the cap check and the write are one script.
            seq = int(await self._r.incr(self._k("watch", "seq")))
            watch = Watch(
                id=f"W{seq}",
                team_id=team_id,
                channel_id=channel_id,
                created_by=created_by,
                created_at=now,
                spec=spec,
                text=text,
            )
            price = current.price_usd if current is not None else None
            # Already below: the user sees that in the confirmation, so it counts as alerted.
            below = price is not None and price <= spec.threshold.usd
            state = WatchState(
                armed=not below,
                last_price_usd=price,
                alerted_price_usd=price if below else None,
            )
            full = await self._add_watch(
                keys=[
                    channel_key,
                    self._k("watches", "user", team_id, created_by),
                    self._k("watches", "team", team_id),
                    self._k("watch", watch.id),
                    self._k("watchstate", watch.id),
                    self._k("watches", "all"),
                ],
                args=[watch.id, seq, dump_watch(watch), dump_state(state), *self._caps],
            )
        except RedisError as exc:
            raise StoreError(f"Could not save the watch: {exc}") from exc
        if int(full):
            raise _full(int(full), self._caps[int(full) - 1])
        return watch

    async def get(self, watch_id: str) -> Watch | None:
        raw = await self._r.get(self._k("watch", watch_id))
        return load_watch(raw) if raw is not None else None

    async def list_channel(self, team_id: str, channel_id: str) -> list[Watch]:
        """The channel's watches, oldest first, disabled ones included."""
        ids = [_s(i) for i in await self._r.zrange(self._k("watches", team_id, channel_id), 0, -1)]
        return await self._load_many(ids)

    async def _load_many(self, ids: Sequence[str]) -> list[Watch]:
        if not ids:
            return []
        raws = await self._r.mget([self._k("watch", i) for i in ids])
        return [load_watch(raw) for raw in raws if raw is not None]

    async def all_watches(self) -> list[Watch]:
        ids = sorted(
            (_s(i) for i in await self._r.smembers(self._k("watches", "all"))),
            key=lambda i: (len(i), i),
        )
        return await self._load_many(ids)

    async def remove(self, team_id: str, channel_id: str, watch_id: str) -> Watch:
        """Remove a watch of this channel.

        Raises:
            WatchNotFoundError: no such watch, or it belongs to another channel or workspace
                (the two look the same, so ids of other channels are not disclosed).
        """
        watch_id = watch_id.strip().upper()
        watch = await self.get(watch_id)
        if watch is None or (watch.team_id, watch.channel_id) != (team_id, channel_id):
            raise WatchNotFoundError(watch_id)
        async with self._r.pipeline(transaction=True) as pipe:
            pipe.delete(self._k("watch", watch_id))
            pipe.delete(self._k("watchstate", watch_id))
            pipe.zrem(self._k("watches", team_id, channel_id), watch_id)
            pipe.srem(self._k("watches", "user", team_id, watch.created_by), watch_id)
            pipe.srem(self._k("watches", "team", team_id), watch_id)
            pipe.srem(self._k("watches", "all"), watch_id)
            deleted, *_ = await pipe.execute()
        if not deleted:
            # Another unwatch removed it between the read and this transaction: only the one
            # whose transaction deleted the watch reports it removed (issue #34: 20 concurrent
            # unwatches posted 20 public messages).
            raise WatchNotFoundError(watch_id)
        return watch

    async def enable(self, team_id: str, channel_id: str, watch_id: str) -> Watch:
        """Evaluate a disabled watch of this channel again (``/gpufit watch enable W3``, once
        the channel problem that disabled it is fixed). Enabling an enabled watch is a no-op.

        Raises:
            WatchNotFoundError: no such watch in this channel (as :meth:`remove`).
        """
        watch_id = watch_id.strip().upper()
        watch = await self.get(watch_id)
        if watch is None or (watch.team_id, watch.channel_id) != (team_id, channel_id):
            raise WatchNotFoundError(watch_id)
        enabled = await self._set_reason(watch_id, None)
        if enabled is None:  # removed meanwhile
            raise WatchNotFoundError(watch_id)
        return enabled

    async def disable(self, watch_id: str, reason: str) -> Watch | None:
        """Stop evaluating a watch and remember why (shown by ``watches``)."""
        return await self._set_reason(watch_id, reason)

    async def _set_reason(self, watch_id: str, reason: str | None) -> Watch | None:
        key = self._k("watch", watch_id)
        for _ in range(_TXN_ATTEMPTS):
            async with self._r.pipeline(transaction=True) as pipe:
                try:
                    await pipe.watch(key)
                    raw = await pipe.get(key)
                    if raw is None:
                        return None
                    watch = replace(load_watch(raw), disabled_reason=reason)
                    pipe.multi()  # type: ignore[no-untyped-call]
                    pipe.set(key, dump_watch(watch))
                    await pipe.execute()
                    return watch
                except WatchError:
                    continue
        raise StoreError(f"Could not change watch {watch_id}: too much contention")

    async def disable_channel(self, team_id: str, channel_id: str, reason: str) -> list[str]:
        """Disable every enabled watch of a channel; the ids come from the channel's own set,
        so no other channel's watch is read."""
        done: list[str] = []
        for w in await self.list_channel(team_id, channel_id):
            if w.enabled and await self.disable(w.id, reason) is not None:
                done.append(w.id)
        return done

    async def state(self, watch_id: str) -> WatchState | None:
        raw = await self._r.get(self._k("watchstate", watch_id))
        return load_state(raw) if raw is not None else None

    async def observe(
        self,
        watch: Watch,
        point: PricePoint | None,
        *,
        render: AlertRenderer,
    ) -> Evaluation:
        """Apply one observed price to the watch's state; claim an alert if it crossed.

        The read-decide-write runs under ``WATCH`` on the state key: when another replica
        changed the state meanwhile, the transaction is retried against the new state (which
        then says "already alerted"), so a crossing is claimed once.
        """
        state_key = self._k("watchstate", watch.id)
        for _ in range(_TXN_ATTEMPTS):
            async with self._r.pipeline(transaction=True) as pipe:
                try:
                    await pipe.watch(state_key)
                    raw = await pipe.get(state_key)
                    if raw is None:  # removed meanwhile
                        return Evaluation(Verdict.NONE, WatchState(), WatchState(), None)
                    before = load_state(raw)
                    after, verdict = step(before, point, watch.threshold)
                    alert_key: str | None = None
                    pipe.multi()  # type: ignore[no-untyped-call]
                    if after != before:
                        pipe.set(state_key, dump_state(after))
                    if verdict in (Verdict.CROSSED, Verdict.DEEPER) and point is not None:
                        alert_key = self._k("alert", watch.id, str(after.alerts), point.key)
                        record = render(watch, verdict, before, point, alert_key)
                        pipe.set(alert_key, record.dump(), nx=True, ex=ALERT_KEY_TTL_S)
                        pipe.zadd(self._k("alerts", "due"), {alert_key: 0}, nx=True)
                    results = await pipe.execute() if after != before or alert_key else []
                    if alert_key is not None and not results[-2]:
                        alert_key = None  # claimed before (a replayed crossing): not ours
                    return Evaluation(verdict, after, before, alert_key)
                except WatchError:
                    continue
        raise StoreError(f"Could not evaluate watch {watch.id}: too much contention")


class AlertQueue:
    """The outbox: claimed alerts waiting to be posted, with per-alert delivery leases."""

    def __init__(self, redis: aioredis.Redis, *, prefix: str = "gpufit") -> None:
        self._r = redis
        self._p = prefix
        self._due = f"{prefix}:alerts:due"

    async def claim_digest(self, record: AlertRecord) -> bool:
        """Claim a digest (its key names the channel and day); ``False`` if already claimed."""
        async with self._r.pipeline(transaction=True) as pipe:
            pipe.set(record.key, record.dump(), nx=True, ex=ALERT_KEY_TTL_S)
            pipe.zadd(self._due, {record.key: 0}, nx=True)
            claimed, _ = await pipe.execute()
        return bool(claimed)

    async def due(self, now_s: float, *, limit: int = 100) -> list[str]:
        """Alert keys whose delivery is due, oldest first."""
        keys = await self._r.zrangebyscore(self._due, "-inf", now_s, start=0, num=limit)
        return [_s(k) for k in keys]

    async def pending_count(self) -> int:
        return int(await self._r.zcard(self._due))

    async def lease(self, key: str, owner: str, lease_s: float) -> bool:
        """Take the right to deliver ``key`` for ``lease_s``; a crashed holder's lease expires,
        which is the retry path for claimed-but-unsent alerts."""
        got = await self._r.set(
            f"{self._p}:alertlease:{key}", owner, nx=True, px=max(1, int(lease_s * 1000))
        )
        return bool(got)

    async def release(self, key: str) -> None:
        await self._r.delete(f"{self._p}:alertlease:{key}")

    async def load(self, key: str) -> AlertRecord | None:
        raw = await self._r.get(key)
        return AlertRecord.load(raw) if raw is not None else None

    async def finish(self, record: AlertRecord) -> None:
        """Store a final status (sent, failed, dropped) and take it off the due list."""
        async with self._r.pipeline(transaction=True) as pipe:
            pipe.set(record.key, record.dump(), xx=True, keepttl=True)
            pipe.zrem(self._due, record.key)
            pipe.delete(f"{self._p}:alertlease:{record.key}")
            await pipe.execute()

    async def mark_posting(self, record: AlertRecord) -> None:
        """Store ``record`` (whose ``posting_since`` is set) before its post is sent."""
        await self._r.set(record.key, record.dump(), xx=True, keepttl=True)

    async def retry_later(self, record: AlertRecord, at_s: float) -> None:
        """Keep it pending and due again at ``at_s`` (epoch seconds)."""
        async with self._r.pipeline(transaction=True) as pipe:
            pipe.set(record.key, record.dump(), xx=True, keepttl=True)
            pipe.zadd(self._due, {record.key: at_s})
            pipe.delete(f"{self._p}:alertlease:{record.key}")
            await pipe.execute()
