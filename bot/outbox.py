"""Mention replies, at least once: the outbox in Redis that holds each until it is posted.

An ``app_mention`` event is acknowledged in milliseconds, and its reply is posted afterwards.
Before, the event id was claimed first, so a reply whose post failed was lost: Slack's own
retry of the event was dropped as a duplicate. Now the claim and the job are one Lua script
(:data:`_ENQUEUE`), and the job leaves the outbox only when its reply is posted or has failed
for good:

* **posted** — Slack answered ``ok``;
* **failed for good** — Slack refused for a reason a retry cannot change (the channel is gone,
  the bot is not in it, the token is revoked: :data:`PERMANENT`), or
  :data:`MAX_REPLY_ATTEMPTS` attempts failed;
* anything else (a timeout, a lost connection, HTTP 5xx, 429) leaves it due again after a
  backoff; a replica that dies mid-reply leaves its lease to lapse and another one replies.

Keys (under ``gpufit:``)::

    evt:{event_id}           the event's claim: Slack's retries of it are dropped (SET NX EX)
    reply:{event_id}         the job (JSON ReplyJob), with its message once rendered
    replies:due              ZSET event id → when to (re)try (epoch s)
    replylease:{event_id}    SET NX PX: the replica replying right now

At most one reply per event, too: each reply carries its event id in Slack message
``metadata``, and once a post may have landed (:attr:`ReplyJob.posting_since`: a timeout, a
lost connection, a 5xx, a replica killed mid-post) every later try first reads the thread
(``conversations.replies``) and, when the reply is there, counts it as posted
(``bot.listeners.mentions``). Only when the thread cannot be read (the app lacks the
history scopes) is the reply posted again, with a warning.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from typing import Any

import redis.asyncio as aioredis

from bot.logs import redact_known_secrets

__all__ = [
    "EVENT_CLAIM_TTL_S",
    "MAX_REPLY_ATTEMPTS",
    "REPLY_TTL_S",
    "ReplyJob",
    "ReplyOutbox",
    "event_claim_key",
]

#: How long an event id stays claimed. Slack retries up to 3 times within ~6 minutes
#: (immediately, +1 min, +5 min; slack.md §1.3); an hour covers them with a wide margin.
EVENT_CLAIM_TTL_S = 3600
#: How long a job is kept at most (it is deleted as soon as it is done): past the last retry.
REPLY_TTL_S = 24 * 3600  # ours
#: Attempts (each with its own quick tries) before a reply is given up and logged.
MAX_REPLY_ATTEMPTS = 8  # ours: with the backoff in mentions.py, about 10 minutes of Slack trouble

# KEYS: 1 the claim, 2 the job, 3 the due set. ARGV: 1 the job JSON, 2 its event id,
# 3 now (epoch s), 4 the claim TTL, 5 the job TTL. Returns 1 when new, 0 when a duplicate.
_ENQUEUE = """
if not redis.call('SET', KEYS[1], '1', 'NX', 'EX', tonumber(ARGV[4])) then return 0 end
redis.call('SET', KEYS[2], ARGV[1], 'EX', tonumber(ARGV[5]))
redis.call('ZADD', KEYS[3], tonumber(ARGV[3]), ARGV[2])
return 1
"""


def event_claim_key(event_id: str, prefix: str = "gpufit") -> str:
    return f"{prefix}:evt:{event_id}"


@dataclass(frozen=True, slots=True)
class ReplyJob:
    """One mention to answer in its thread."""

    event_id: str
    team_id: str
    channel: str
    thread_ts: str
    text: str
    attempts: int = 0
    #: Who mentioned the bot: their time zone reads a calendar deadline ("by Friday").
    user: str = ""
    #: The reply (``chat.postMessage`` keyword arguments), rendered once by the first attempt
    #: so a retry posts the same message and the thread's question is not refined twice.
    message: dict[str, Any] | None = None
    error: str | None = None
    #: When (epoch s) a post of the reply was first sent: from then on it may be in the
    #: thread even if Slack's answer never arrived, so a retry reads the thread first.
    posting_since: float | None = None

    @classmethod
    def from_event(
        cls, body: dict[str, Any], event: dict[str, Any], team_id: str | None
    ) -> ReplyJob | None:
        """The job for a mention event; ``None`` when it names no id, channel or ts."""
        event_id, channel, ts = body.get("event_id"), event.get("channel"), event.get("ts")
        if not all(isinstance(v, str) and v for v in (event_id, channel, ts)):
            return None
        thread_ts = event.get("thread_ts")
        return cls(
            event_id=str(event_id),
            team_id=str(body.get("team_id") or team_id or ""),
            channel=str(channel),
            thread_ts=str(thread_ts if isinstance(thread_ts, str) and thread_ts else ts),
            # A pasted secret is not kept in Redis for the job's life (REPLY_TTL_S).
            text=redact_known_secrets(str(event.get("text") or "")),
            user=str(event.get("user") or ""),
        )

    def dump(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def load(cls, raw: str | bytes) -> ReplyJob:
        return cls(**json.loads(raw))


class ReplyOutbox:
    """The jobs in Redis: enqueue (with the event's claim), lease, retry later, done."""

    def __init__(self, redis: aioredis.Redis, *, prefix: str = "gpufit") -> None:
        self._r = redis
        self._p = prefix
        self._due = f"{prefix}:replies:due"
        self._enqueue = redis.register_script(_ENQUEUE)

    def _job(self, event_id: str) -> str:
        return f"{self._p}:reply:{event_id}"

    def _lease(self, event_id: str) -> str:
        return f"{self._p}:replylease:{event_id}"

    async def enqueue(self, job: ReplyJob, now_s: float) -> bool:
        """Claim the event and store its job, at once; ``False``: the event was seen before.

        Raises:
            RedisError: Redis failed (nothing was claimed).
        """
        new = await self._enqueue(
            keys=[event_claim_key(job.event_id, self._p), self._job(job.event_id), self._due],
            args=[job.dump(), job.event_id, now_s, EVENT_CLAIM_TTL_S, REPLY_TTL_S],
        )
        return bool(int(new))

    async def due(self, now_s: float, *, limit: int = 100) -> list[str]:
        """Event ids whose reply is due now, oldest first."""
        ids = await self._r.zrangebyscore(self._due, "-inf", now_s, start=0, num=limit)
        return [i.decode() if isinstance(i, bytes) else str(i) for i in ids]

    async def pending(self) -> int:
        return int(await self._r.zcard(self._due))

    async def lease(self, event_id: str, owner: str, lease_s: float) -> bool:
        """Take the right to reply to ``event_id`` for ``lease_s`` (a dead holder's lapses)."""
        got = await self._r.set(
            self._lease(event_id), owner, nx=True, px=max(1, int(lease_s * 1000))
        )
        return bool(got)

    async def load(self, event_id: str) -> ReplyJob | None:
        raw = await self._r.get(self._job(event_id))
        return ReplyJob.load(raw) if raw is not None else None

    async def save(self, job: ReplyJob) -> None:
        """Keep the job's rendered message (and attempts) for later attempts."""
        await self._r.set(self._job(job.event_id), job.dump(), xx=True, keepttl=True)

    async def done(self, event_id: str) -> None:
        """Posted or failed for good: the job leaves the outbox (the claim stays until its
        TTL, so a late retry of the event from Slack is still dropped)."""
        async with self._r.pipeline(transaction=True) as pipe:
            pipe.delete(self._job(event_id), self._lease(event_id))
            pipe.zrem(self._due, event_id)
            await pipe.execute()

    async def retry_later(self, job: ReplyJob, at_s: float) -> None:
        async with self._r.pipeline(transaction=True) as pipe:
            pipe.set(self._job(job.event_id), job.dump(), xx=True, keepttl=True)
            pipe.zadd(self._due, {job.event_id: at_s})
            pipe.delete(self._lease(job.event_id))
            await pipe.execute()

    async def forget(self, event_id: str) -> None:
        """Drop a due entry whose job is gone (expired)."""
        async with self._r.pipeline(transaction=True) as pipe:
            pipe.zrem(self._due, event_id)
            pipe.delete(self._lease(event_id))
            await pipe.execute()
