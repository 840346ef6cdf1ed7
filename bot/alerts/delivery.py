"""Posting claimed alerts to Slack: per-channel pacing across replicas, 429s, error triage.

* **Pacing.** ``chat.postMessage`` allows about one message per second per channel, counted
  by Slack for the app, whichever replica sends. Every post first reserves a slot from a
  next-allowed timestamp kept in Redis and advanced by a Lua script that reads Redis's own
  clock (``TIME``), so replicas with skewed clocks still share one schedule.
* **429.** A ``Retry-After`` pushes the channel's next-allowed time out for every replica,
  then the post is retried (tenacity, bounded). A wait longer than :data:`MAX_INLINE_WAIT_S`
  is not slept through: the alert goes back to the outbox, due after the wait.
* **Transient** failures (network, 5xx, ``internal_error``…) retry with backoff, then return
  the alert to the outbox; it is never dropped while attempts remain.
* **Channel** errors (``channel_not_found``, ``not_in_channel``, ``is_archived``) disable
  that channel's watches, with the reason shown in ``/gpufit watches``; ``/gpufit watch
  enable W3`` turns one back on once the channel is fixed.
* **Token** errors (``invalid_auth``, ``token_revoked``…) disable nothing: the error is first
  confirmed with ``auth.test`` (one wrong answer must not silence a workspace); a confirmed
  one pauses posting to that workspace (the alert stays in the outbox, later alerts of the
  pass are not tried), is logged and reported on the worker's ``/readyz``, and each later
  pass asks ``auth.test`` once: when the token works again, posting resumes where it stopped.
  An unconfirmed one is retried like a transient failure.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import aiohttp
import redis.asyncio as aioredis
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, stop_after_attempt

from bot.alerts.codec import AlertRecord
from bot.alerts.store import AlertQueue, WatchStore
from bot.metrics import Metrics

__all__ = [
    "CHANNEL_ERRORS",
    "MAX_INLINE_WAIT_S",
    "POST_INTERVAL_S",
    "TOKEN_ERRORS",
    "ChannelPacer",
    "Delivery",
    "Outcome",
]

log = logging.getLogger(__name__)

#: Minimum spacing of posts to one channel, all replicas together.
POST_INTERVAL_S = (
    1.0  # chat.postMessage "special" tier: ~1 msg/s per channel (api.slack.com/docs/rate-limits)
)
#: Tries per delivery attempt (first post + retries after 429 or a transient failure).
POST_TRIES = 4  # ours: rides out a short 429 burst; longer outages go back to the outbox
#: A Retry-After longer than this is not slept through inline; the alert is rescheduled.
MAX_INLINE_WAIT_S = 30.0  # ours: keeps one pass of the worker short while Slack is throttling
#: Delivery attempts (passes) before an alert that keeps failing transiently is given up.
MAX_DELIVERY_ATTEMPTS = 20  # ours: with the backoff below, about a day of retrying
#: Backoff between passes for an alert that failed transiently: min(cap, base · 2^attempt).
RETRY_BASE_S = 30.0  # ours
RETRY_CAP_S = 3600.0  # ours: at least hourly while the outage lasts
#: How long one replica holds the right to post one alert; a crashed holder's lease expires
#: and another replica delivers it (claimed-but-unsent alerts are retried, not lost).
LEASE_S = 300.0  # ours: > POST_TRIES × (MAX_INLINE_WAIT_S + slack_sdk's 30 s HTTP timeout)

#: Errors about the channel: the bot cannot post there until a person fixes it.
CHANNEL_ERRORS = {
    "channel_not_found": "the bot cannot see this channel (deleted, or private without the bot)",
    "not_in_channel": "the bot is not a member of this channel; invite it and re-enable",
    "is_archived": "the channel is archived",
}
#: Errors about the workspace's token: nothing can be posted anywhere in that workspace.
TOKEN_ERRORS = {
    "invalid_auth": "the workspace's bot token is invalid",
    "token_revoked": "the app was uninstalled or its token revoked",
    "account_inactive": "the bot user was deactivated",
    "missing_scope": "the app lacks the chat:write scope; reinstall it",
}
#: Longest ``Retry-After`` honoured: a larger (or absurd) value is capped and logged, so one
#: bad header cannot stall a channel for hours.
MAX_RETRY_AFTER_S = 60.0  # ours: Slack's own values are seconds to a minute
#: The scope posting needs; ``missing_scope`` is confirmed by its absence from auth.test.
POST_SCOPE = "chat:write"
_TRANSIENT_ERRORS = {"internal_error", "fatal_error", "service_unavailable", "request_timeout"}

_RESERVE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local nxt = tonumber(redis.call('GET', KEYS[1]) or '0')
local slot = math.max(now, nxt)
redis.call('SET', KEYS[1], slot + tonumber(ARGV[1]), 'PX', tonumber(ARGV[2]))
return slot - now
"""
_BLOCK = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local nxt = tonumber(redis.call('GET', KEYS[1]) or '0')
local blocked = now + tonumber(ARGV[1])
if blocked > nxt then
  redis.call('SET', KEYS[1], blocked, 'PX', tonumber(ARGV[1]) + tonumber(ARGV[2]))
end
return blocked - now
"""


class ChannelPacer:
    """A next-allowed time per channel in Redis, shared by every replica."""

    def __init__(
        self,
        redis: aioredis.Redis,
        *,
        interval_s: float = POST_INTERVAL_S,
        prefix: str = "gpufit",
    ) -> None:
        self._r = redis
        self._interval_ms = max(1, round(interval_s * 1000))
        self._p = prefix
        self._reserve = redis.register_script(_RESERVE)
        self._block = redis.register_script(_BLOCK)

    def _key(self, team_id: str, channel_id: str) -> str:
        return f"{self._p}:pace:{team_id}:{channel_id}"

    async def reserve(self, team_id: str, channel_id: str) -> float:
        """Reserve the channel's next slot; returns seconds to wait until it."""
        wait_ms = await self._reserve(
            keys=[self._key(team_id, channel_id)],
            args=[self._interval_ms, 60_000 + self._interval_ms],
        )
        return int(wait_ms) / 1000

    async def block(self, team_id: str, channel_id: str, seconds: float) -> None:
        """No replica posts to the channel for ``seconds`` (Slack's Retry-After)."""
        await self._block(
            keys=[self._key(team_id, channel_id)],
            args=[max(1, round(seconds * 1000)), 60_000],
        )


@dataclass(frozen=True, slots=True)
class Outcome:
    """How one delivery attempt ended."""

    status: str  # sent, retry, failed, dropped, skipped, paused
    record: AlertRecord | None = None
    error: str | None = None


class _RateLimited(Exception):
    def __init__(self, retry_after_s: float) -> None:
        super().__init__(f"ratelimited, retry after {retry_after_s:g} s")
        self.retry_after_s = retry_after_s


class _Transient(Exception):
    pass


class _Deferred(Exception):
    def __init__(self, retry_after_s: float) -> None:
        super().__init__(f"retry after {retry_after_s:g} s")
        self.retry_after_s = retry_after_s


def _retry_after(exc: SlackApiError) -> float:
    headers: Any = getattr(exc.response, "headers", {}) or {}
    value = None
    for name, v in dict(headers).items():
        if str(name).lower() == "retry-after":
            value = v[0] if isinstance(v, list) else v
    try:
        seconds = max(0.0, float(value)) if value is not None else 1.0
    except ValueError:
        log.warning("unreadable Retry-After %r from Slack; waiting 1 s", value)
        return 1.0
    if not seconds <= MAX_RETRY_AFTER_S:  # NaN too
        log.warning("Retry-After %r s from Slack capped at %g s", value, MAX_RETRY_AFTER_S)
        return MAX_RETRY_AFTER_S
    return seconds


def _backoff(state: RetryCallState) -> float:
    """No extra wait after a 429 (the pacer holds the channel); exponential otherwise."""
    outcome = state.outcome
    if outcome is not None and isinstance(outcome.exception(), _RateLimited):
        return 0.0
    return float(min(8.0, 0.25 * 2 ** (state.attempt_number - 1)))


class Delivery:
    """Posts the outbox's due alerts, once each."""

    def __init__(
        self,
        *,
        queue: AlertQueue,
        watches: WatchStore,
        pacer: ChannelPacer,
        client_for: Callable[[str], AsyncWebClient],
        owner: str,
        clock: Callable[[], float],
        sleep: Callable[[float], Any] = asyncio.sleep,
        metrics: Metrics | None = None,
    ) -> None:
        self._metrics = metrics
        self._queue = queue
        self._watches = watches
        self._pacer = pacer
        self._client_for = client_for
        self._owner = owner
        self._clock = clock
        self._sleep = sleep
        #: Workspaces whose token Slack refused (confirmed by auth.test) → why.
        self._paused: dict[str, str] = {}

    @property
    def paused(self) -> dict[str, str]:
        """Workspaces this worker does not post to now, because their token failed: why."""
        return dict(self._paused)

    async def deliver_due(self) -> list[Outcome]:
        """Deliver every alert that is due now (those another replica is posting are skipped)."""
        await self._recheck_paused()
        outcomes: list[Outcome] = []
        for key in await self._queue.due(self._clock()):
            outcomes.append(await self.deliver(key))
        return outcomes

    async def _token_problem(self, team_id: str) -> str | None:
        """What ``auth.test`` says is wrong with the workspace's token (``None``: it works).

        Raises:
            _Transient: auth.test itself could not be asked (network, 5xx, 429).
        """
        client = self._client_for(team_id)
        try:
            resp = await client.auth_test()
        except SlackApiError as exc:
            error = str(exc.response.get("error") or "")
            if error in TOKEN_ERRORS:
                return error
            raise _Transient(f"auth.test: {error or 'failed'}") from exc
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise _Transient(f"auth.test: {type(exc).__name__}") from exc
        headers: Any = getattr(resp, "headers", {}) or {}
        scopes = next(
            (str(v) for k, v in dict(headers).items() if str(k).lower() == "x-oauth-scopes"), None
        )
        if scopes is not None and POST_SCOPE not in {s.strip() for s in scopes.split(",")}:
            return "missing_scope"
        return None

    async def _recheck_paused(self) -> None:
        """One auth.test per paused workspace per pass: resume the ones whose token works."""
        for team_id in list(self._paused):
            try:
                problem = await self._token_problem(team_id)
            except _Transient as exc:
                log.warning("workspace %s still paused: %s", team_id, exc)
                continue
            if problem is None:
                del self._paused[team_id]
                log.warning("workspace %s: the bot token works again; posting resumed", team_id)
            else:
                self._paused[team_id] = f"{problem}: {TOKEN_ERRORS[problem]}"

    async def deliver(self, key: str) -> Outcome:
        if not await self._queue.lease(key, self._owner, LEASE_S):
            return Outcome("skipped")
        record = await self._queue.load(key)
        if record is not None and record.team_id in self._paused:
            await self._queue.release(key)
            return Outcome("paused", record, self._paused[record.team_id])
        if record is None or record.status != "pending":
            if record is not None:
                await self._queue.finish(record)
            else:
                await self._queue.release(key)
            return Outcome("skipped", record)
        record = replace(record, attempts=record.attempts + 1)
        try:
            ts = await self._post(record)
        except _Deferred as exc:
            await self._queue.retry_later(record, self._clock() + exc.retry_after_s)
            return Outcome("retry", record, "ratelimited")
        except _RateLimited as exc:
            return await self._give_back(record, str(exc), wait_s=exc.retry_after_s)
        except _Transient as exc:
            return await self._give_back(record, str(exc))
        except SlackApiError as exc:
            return await self._permanent(record, str(exc.response.get("error") or exc))
        done = replace(record, status="sent", ts=ts, error=None)
        await self._queue.finish(done)
        if self._metrics is not None:
            self._metrics.alert_sent()
        return Outcome("sent", done)

    async def _give_back(
        self, record: AlertRecord, error: str, *, wait_s: float | None = None
    ) -> Outcome:
        if record.attempts >= MAX_DELIVERY_ATTEMPTS:
            failed = replace(record, status="failed", error=error)
            await self._queue.finish(failed)
            log.error("alert %s given up after %d attempts: %s", record.key, record.attempts, error)
            return Outcome("failed", failed, error)
        wait = wait_s if wait_s is not None else RETRY_BASE_S * 2 ** (record.attempts - 1)
        wait = min(RETRY_CAP_S, wait)
        await self._queue.retry_later(replace(record, error=error), self._clock() + wait)
        return Outcome("retry", record, error)

    async def _token_error(self, record: AlertRecord, error: str) -> Outcome:
        """A token error from chat.postMessage: pause the workspace if auth.test confirms it;
        the alert stays pending either way (nothing is disabled, nothing dropped)."""
        try:
            problem = await self._token_problem(record.team_id)
        except _Transient as exc:
            return await self._give_back(record, f"{error} (unconfirmed: {exc})")
        if problem is None:
            log.warning(
                "Slack said %s for alert %s but auth.test passes; retrying", error, record.key
            )
            return await self._give_back(record, f"{error} (auth.test passes)")
        reason = f"{problem}: {TOKEN_ERRORS[problem]}"
        self._paused[record.team_id] = reason
        log.error(
            "workspace %s: %s (confirmed by auth.test); posting paused until the token works",
            record.team_id,
            reason,
        )
        await self._queue.retry_later(
            replace(record, attempts=record.attempts - 1, error=problem), self._clock()
        )
        return Outcome("paused", record, problem)

    async def _permanent(self, record: AlertRecord, error: str) -> Outcome:
        if error in TOKEN_ERRORS:
            return await self._token_error(record, error)
        if error in CHANNEL_ERRORS:
            reason = f"{error}: {CHANNEL_ERRORS[error]}"
            disabled = await self._watches.disable_scope(record.team_id, record.channel_id, reason)
        else:
            disabled = []
        log.warning("alert %s not deliverable (%s); disabled %s", record.key, error, disabled)
        dropped = replace(record, status="dropped", error=error)
        await self._queue.finish(dropped)
        return Outcome("dropped", dropped, error)

    async def _post(self, record: AlertRecord) -> str | None:
        client = self._client_for(record.team_id)
        retrying = AsyncRetrying(
            stop=stop_after_attempt(POST_TRIES),
            retry=retry_if_exception_type((_RateLimited, _Transient)),
            wait=_backoff,
            sleep=self._sleep,
            reraise=True,
        )
        async for attempt in retrying:
            with attempt:
                return await self._post_once(client, record)
        return None  # pragma: no cover - reraise=True always raises or returns above

    async def _post_once(self, client: AsyncWebClient, record: AlertRecord) -> str | None:
        wait = await self._pacer.reserve(record.team_id, record.channel_id)
        if wait > MAX_INLINE_WAIT_S:
            raise _Deferred(wait)
        if wait > 0:
            await self._sleep(wait)
        try:
            resp = await client.chat_postMessage(
                channel=record.channel_id,
                text=record.text,
                blocks=list(record.blocks) or None,
                unfurl_links=False,
                unfurl_media=False,
            )
        except SlackApiError as exc:
            status = getattr(exc.response, "status_code", 200)
            error = str(exc.response.get("error") or "")
            if status == 429 or error == "ratelimited":
                if self._metrics is not None:
                    self._metrics.slack_rate_limited_once("chat.postMessage")
                retry_after = _retry_after(exc)
                await self._pacer.block(record.team_id, record.channel_id, retry_after)
                if retry_after > MAX_INLINE_WAIT_S:
                    raise _Deferred(retry_after) from exc
                raise _RateLimited(retry_after) from exc
            if status >= 500 or error in _TRANSIENT_ERRORS:
                raise _Transient(error or f"HTTP {status}") from exc
            raise
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise _Transient(type(exc).__name__) from exc
        ts = resp.get("ts")
        return str(ts) if ts is not None else None
