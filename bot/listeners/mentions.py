"""``@gpufit …`` in a channel: answered in the thread; follow-ups there refine the question.

Each mention becomes a job in the reply outbox (:mod:`bot.outbox`) before the event is
acknowledged, and counts as handled only once its reply is posted or has failed for good: a
reply whose post fails is tried again (a few quick tries, then later attempts with backoff,
by this replica or, if it dies, another one), not lost.

And never posted twice: each reply carries its event id in message ``metadata``
(:data:`REPLY_EVENT_TYPE`); once a post may have landed without Slack's answer arriving (a
timeout, a lost connection, a 5xx), every later try first reads the thread and stops when the
reply is there. A 429 is honoured: the reply is due again after Slack's ``Retry-After``
(capped), and no read or post is sent before it.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Any, NoReturn

import aiohttp
import redis.asyncio as aioredis
from redis.exceptions import RedisError
from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient
from tenacity import AsyncRetrying, stop_after_attempt, wait_exponential

from bot.alerts.slack_errors import is_rate_limited, is_transient, retry_after
from bot.listeners.answers import answer, slack_text
from bot.listeners.errors import failure_message
from bot.outbox import MAX_REPLY_ATTEMPTS, ReplyJob, ReplyOutbox
from bot.render.blocks import render_help
from bot.services import Services
from bot.user_zone import zone_for

__all__ = [
    "REPLY_EVENT_TYPE",
    "REPLY_LEASE_S",
    "REPLY_SWEEP_S",
    "THREAD_TTL_S",
    "deliver_reply",
    "on_app_mention",
    "run_reply_sweeper",
    "sweep_replies",
    "thread_key",
]

logger = logging.getLogger(__name__)

#: How long a thread remembers its question for follow-ups.
THREAD_TTL_S = 7 * 24 * 3600  # ours: a week covers a planning discussion
#: Quick tries of one attempt's post (then the job waits for a later attempt).
QUICK_TRIES = 3  # ours: rides out a blip without holding the reply for long
#: Longest one ``chat.postMessage`` of a reply may take before it counts as failed.
REPLY_POST_TIMEOUT_S = 10.0  # ours: a healthy Slack answers in well under a second
#: How long one replica holds a reply job: an answer plus QUICK_TRIES posts and their
#: backoff, twice over; a dead holder's lease lapses and another replica replies.
REPLY_LEASE_S = 90.0  # ours: 3 × 10 s + ~1 s backoff + an answer (seconds) < 45 s
#: Backoff between attempts: min(cap, base × 2^(attempt − 1)).
REPLY_RETRY_BASE_S = 5.0  # ours
REPLY_RETRY_CAP_S = 300.0  # ours
#: How often each bot replica looks for replies that are due again or whose replica died.
REPLY_SWEEP_S = 5.0  # ours

#: The Slack message ``metadata`` event type of a mention's reply; its payload holds the
#: event id, so a retry can tell whether the reply is already in the thread.
REPLY_EVENT_TYPE = "gpufit_reply"
#: How far before ``posting_since`` the thread is read (Slack's ts and our clock may differ).
THREAD_SKEW_S = 60.0  # ours
#: Most replies read from a thread when looking for an earlier post (one page).
THREAD_READ_LIMIT = 200  # ours: Slack allows up to 1000 per page (conversations.replies)

#: Event ids of this process's replies sent without the outbox (Redis down), oldest first.
_UNQUEUED: OrderedDict[str, None] = OrderedDict()
#: How many of them are remembered: more than the mentions a replica gets in Slack's retry
#: window (~6 minutes) while Redis is down.
UNQUEUED_REMEMBERED = 10_000  # ours: ~1 MB at most

#: This process, as the holder of a reply lease.
OWNER = f"{socket.gethostname()}:{os.getpid()}"


class _Retry(Exception):
    """The post failed in a way a later try may not (timeout, 5xx, 429)."""


class _Permanent(Exception):
    """Slack refused the post for a reason no retry changes (channel, token, message)."""


class _Throttled(_Retry):
    """Slack answered 429: nothing more is sent to it for ``wait_s``."""

    def __init__(self, wait_s: float) -> None:
        super().__init__(f"ratelimited, retry after {wait_s:g} s")
        self.wait_s = wait_s


def thread_key(team_id: str, channel: str, thread_ts: str) -> str:
    return f"gpufit:thread:{team_id}:{channel}:{thread_ts}"


async def _previous(redis: aioredis.Redis, key: str) -> str | None:
    """The thread's last question; ``None`` when there is none, or when Redis cannot say (the
    mention is then answered on its own)."""
    try:
        value = await redis.get(key)
    except RedisError as exc:
        logger.warning("thread memory unavailable (%s); the mention is answered alone", exc)
        return None
    if isinstance(value, bytes):
        return value.decode()
    return value if isinstance(value, str) else None


async def _remember(redis: aioredis.Redis, key: str, query: str) -> None:
    """Keep the thread's question for follow-ups; without Redis the reply goes out anyway."""
    try:
        await redis.set(key, query, ex=THREAD_TTL_S)
    except RedisError as exc:
        logger.warning("thread memory unavailable (%s); follow-ups start afresh", exc)


async def on_app_mention(
    event: dict[str, Any],
    body: dict[str, Any],
    context: AsyncBoltContext,
    services: Services,
    top: int,
) -> None:
    """Put the mention in the reply outbox (claiming its event id: Slack's retries of it are
    dropped), then reply after the ack. Without Redis the reply is still attempted, from
    memory only: a rare duplicate beats a silent bot."""
    job = ReplyJob.from_event(body, event, context.team_id)
    if job is None:
        logger.warning("app_mention without an event id, channel or ts; not answered")
        return
    try:
        new = await ReplyOutbox(services.redis).enqueue(job, services.now().timestamp())
    except RedisError as exc:
        logger.warning(
            "reply outbox unavailable (%s); replying to %s without it", exc, job.event_id
        )
        services.background.spawn(_reply_once(services, job, top), name="gpufit-mention")
        return
    if not new:
        logger.info("duplicate event %s dropped", job.event_id)
        return
    services.background.spawn(_deliver_now(services, job.event_id, top), name="gpufit-mention")


async def _deliver_now(services: Services, event_id: str, top: int) -> None:
    """The first attempt, right after the ack; if Redis fails under it, the sweeper retries."""
    try:
        await deliver_reply(services, event_id, top=top)
    except RedisError as exc:
        logger.warning("reply to event %s waits for the sweeper: %s", event_id, exc)


async def deliver_reply(services: Services, event_id: str, *, top: int) -> str:
    """One attempt at a queued reply: ``sent``, ``failed`` (for good), ``retry`` (due again
    later) or ``skipped`` (another replica holds it, or it is gone)."""
    outbox = ReplyOutbox(services.redis)
    if not await outbox.lease(event_id, OWNER, REPLY_LEASE_S):
        return "skipped"
    job = await outbox.load(event_id)
    if job is None:
        await outbox.forget(event_id)
        return "skipped"
    job = replace(job, attempts=job.attempts + 1)
    if job.message is None:
        job = replace(job, message=await _render(services, job, top))
    await outbox.save(job)

    async def mark(posting: ReplyJob) -> None:
        await outbox.save(posting)

    try:
        await _post(services.client, job, services.now().timestamp, mark)
    except _Permanent as exc:
        logger.warning("reply to event %s not deliverable (%s); given up", event_id, exc)
        await outbox.done(event_id)
        return "failed"
    except _Retry as exc:
        if job.attempts >= MAX_REPLY_ATTEMPTS:
            logger.error("reply to event %s given up after %d attempts: %s", event_id,
                         job.attempts, exc)  # fmt: skip
            await outbox.done(event_id)
            return "failed"
        wait = min(REPLY_RETRY_CAP_S, REPLY_RETRY_BASE_S * 2 ** (job.attempts - 1))
        if isinstance(exc, _Throttled):
            wait = exc.wait_s  # Slack said when: honoured, not guessed
        logger.warning("reply to event %s failed (%s); retrying in %g s", event_id, exc, wait)
        latest = await outbox.load(event_id) or job  # with its posting_since, if one was sent
        await outbox.retry_later(replace(latest, error=str(exc)), services.now().timestamp() + wait)
        return "retry"
    await outbox.done(event_id)
    return "sent"


async def sweep_replies(services: Services, *, top: int) -> list[str]:
    """One attempt at every reply that is due now (see :func:`deliver_reply`)."""
    outbox = ReplyOutbox(services.redis)
    return [
        await deliver_reply(services, event_id, top=top)
        for event_id in await outbox.due(services.now().timestamp())
    ]


async def run_reply_sweeper(services: Services, *, top: int, stop: asyncio.Event) -> None:
    """Sweep the outbox every :data:`REPLY_SWEEP_S` until ``stop``; a failed sweep (Redis
    down) is logged and the next one retries."""
    while not stop.is_set():
        try:
            await sweep_replies(services, top=top)
        except (RedisError, OSError) as exc:
            logger.warning("reply outbox sweep failed: %s", exc)
        try:
            await asyncio.wait_for(stop.wait(), timeout=REPLY_SWEEP_S)
        except TimeoutError:
            continue


async def _reply_once(services: Services, job: ReplyJob, top: int) -> None:
    """Render and post without the outbox (Redis is down or out of memory): the quick tries
    only, and still at most once: Slack's retry of the event reaching this replica is dropped
    here (:data:`_UNQUEUED`), one reaching another replica finds the reply in the thread
    (``posting_since`` is set, so the thread is read before the first post). The window left:
    deliveries to two replicas within the time one reply takes to post."""
    if job.event_id in _UNQUEUED:
        logger.info("duplicate event %s dropped (replying without the outbox)", job.event_id)
        return
    _UNQUEUED[job.event_id] = None
    while len(_UNQUEUED) > UNQUEUED_REMEMBERED:
        _UNQUEUED.popitem(last=False)
    job = replace(
        job,
        message=await _render(services, job, top),
        posting_since=services.now().timestamp(),
    )
    try:
        await _post(services.client, job, services.now().timestamp)
    except (_Permanent, _Retry) as exc:
        logger.warning("reply to event %s lost (Redis down, then %s)", job.event_id, exc)


async def _render(services: Services, job: ReplyJob, top: int) -> dict[str, Any]:
    """The reply: the answer (or the help, or what went wrong). The thread's question is
    stored before the reply is posted: a follow-up may arrive as soon as the reply shows."""
    text = slack_text(job.text)
    if text.lower() in ("", "help"):
        return render_help().kwargs()
    key = thread_key(job.team_id, job.channel, job.thread_ts)
    try:
        previous = await _previous(services.redis, key)
        zone = await zone_for(services, f"{previous or ''} {text}", job.user or None)
        if previous is None:
            result = await answer(services, text, top=top, ephemeral=False, zone=zone)
        else:
            result = await answer(
                services, previous, follow_up=text, top=top, ephemeral=False, zone=zone
            )
        await _remember(services.redis, key, result.query)
    except Exception as exc:  # the one error handler's words (logged there), posted in thread
        return failure_message(exc).kwargs()
    return result.message.kwargs()


async def _post(
    client: AsyncWebClient,
    job: ReplyJob,
    clock: Callable[[], float],
    mark: Callable[[ReplyJob], Awaitable[None]] | None = None,
) -> None:
    """Post the reply (quick tries), unless it is already in the thread. ``mark`` keeps the
    job once a post may land (its ``posting_since``), for later attempts and other replicas.

    Raises:
        _Throttled: Slack answered 429 (to the read or the post).
        _Retry: the post failed for now.
        _Permanent: Slack refused it for good.
    """
    retrying = AsyncRetrying(
        stop=stop_after_attempt(QUICK_TRIES),
        wait=wait_exponential(multiplier=0.25, max=2),
        retry=lambda state: _quick_retry(state.outcome.exception() if state.outcome else None),
        reraise=True,
    )
    async for attempt in retrying:
        with attempt:
            if job.posting_since is not None and await _in_thread(client, job):
                logger.info("reply to event %s is already in the thread", job.event_id)
                return
            if job.posting_since is None:
                job = replace(job, posting_since=clock())  # from here it may land unanswered
                if mark is not None:
                    await mark(job)
            await _post_once(client, job)


def _quick_retry(exc: BaseException | None) -> bool:
    # A 429 is not retried at once: the reply waits for Retry-After (deliver_reply).
    return isinstance(exc, _Retry) and not isinstance(exc, _Throttled)


async def _post_once(client: AsyncWebClient, job: ReplyJob) -> None:
    meta = {"event_type": REPLY_EVENT_TYPE, "event_payload": {"event_id": job.event_id}}
    try:
        async with asyncio.timeout(REPLY_POST_TIMEOUT_S):
            await client.chat_postMessage(
                channel=job.channel, thread_ts=job.thread_ts, metadata=meta, **(job.message or {})
            )
    except SlackApiError as exc:
        _raise_for(exc, "chat.postMessage")
    except (aiohttp.ClientError, TimeoutError) as exc:
        raise _Retry(type(exc).__name__) from exc


def _raise_for(exc: SlackApiError, method: str) -> NoReturn:
    """The reply path's reading of a Slack refusal."""
    error = str(exc.response.get("error") or exc)
    if is_rate_limited(exc):
        raise _Throttled(retry_after(exc)) from exc
    if is_transient(exc):
        raise _Retry(f"{method}: {error}") from exc
    raise _Permanent(f"{method}: {error}") from exc


async def _in_thread(client: AsyncWebClient, job: ReplyJob) -> bool:
    """Whether the thread already holds this event's reply (a post that landed unanswered).

    Raises:
        _Throttled, _Retry: the thread cannot be read now (the reply is not posted blind).
    """
    since = max(0.0, (job.posting_since or 0.0) - THREAD_SKEW_S)
    try:
        async with asyncio.timeout(REPLY_POST_TIMEOUT_S):
            resp = await client.conversations_replies(
                channel=job.channel,
                ts=job.thread_ts,
                oldest=f"{since:.6f}",
                limit=THREAD_READ_LIMIT,
                include_all_metadata=True,
            )
    except SlackApiError as exc:
        if is_rate_limited(exc) or is_transient(exc):
            _raise_for(exc, "conversations.replies")
        logger.warning(
            "reply to event %s: cannot read its thread (%s); posting again, so it may appear twice",
            job.event_id,
            exc.response.get("error"),
        )
        return False
    except (aiohttp.ClientError, TimeoutError) as exc:
        raise _Retry(f"conversations.replies: {type(exc).__name__}") from exc
    for message in resp.get("messages") or []:
        meta = message.get("metadata") or {}
        payload = meta.get("event_payload") or {}
        if meta.get("event_type") == REPLY_EVENT_TYPE and payload.get("event_id") == job.event_id:
            return True
    return False
