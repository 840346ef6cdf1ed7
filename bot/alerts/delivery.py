"""Posting claimed alerts to Slack: per-channel pacing across replicas, 429s, error triage,
and at most one post per alert.

* **Pacing.** Every post first reserves the channel's next slot (:mod:`bot.alerts.pacing`).
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
* **At most once.** Each post carries the alert's key in Slack message ``metadata``. Just
  before a post is sent, the record notes when (``posting_since``): from then on the post may
  have landed even if its answer never arrives (a timeout, a lost connection, a worker killed
  mid-post whose lease then lapses). Every later try first reads the channel's newest
  messages since then (``conversations.history``) and, when one carries the key, marks the
  alert sent instead of posting it again. Each HTTP call has :data:`POST_TIMEOUT_S`, and a
  whole delivery attempt :data:`DELIVERY_DEADLINE_S`, well below the :data:`LEASE_S` that keeps
  other replicas off the alert, so a slow Slack cannot outlive the lease of the post it holds.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, stop_after_attempt

from bot.alerts.codec import AlertRecord
from bot.alerts.pacing import POST_INTERVAL_S, ChannelPacer
from bot.alerts.slack_errors import (
    CHANNEL_ERRORS,
    MAX_RETRY_AFTER_S,
    POST_SCOPE,
    TOKEN_ERRORS,
    TRANSIENT_ERRORS,
    Deferred,
    RateLimited,
    Transient,
    granted_scopes,
    is_rate_limited,
    retry_after,
)
from bot.alerts.store import AlertQueue, WatchStore
from bot.metrics import Metrics

__all__ = [
    "ALERT_EVENT_TYPE",
    "CHANNEL_ERRORS",
    "DELIVERY_DEADLINE_S",
    "HISTORY_LIMIT",
    "LEASE_S",
    "MAX_INLINE_WAIT_S",
    "MAX_RETRY_AFTER_S",
    "POST_INTERVAL_S",
    "POST_TIMEOUT_S",
    "TOKEN_ERRORS",
    "ChannelPacer",
    "Delivery",
    "Outcome",
]

log = logging.getLogger(__name__)

#: Tries per delivery attempt (first post + retries after 429 or a transient failure).
POST_TRIES = 4  # ours: rides out a short 429 burst; longer outages go back to the outbox
#: A Retry-After longer than this is not slept through inline; the alert is rescheduled.
MAX_INLINE_WAIT_S = 30.0  # ours: keeps one pass of the worker short while Slack is throttling
#: Delivery attempts (passes) before an alert that keeps failing transiently is given up.
MAX_DELIVERY_ATTEMPTS = 20  # ours: with the backoff below, about 13 hours of retrying
#: Backoff between passes for an alert that failed transiently: min(cap, base · 2^attempt).
RETRY_BASE_S = 30.0  # ours
RETRY_CAP_S = 3600.0  # ours: at least hourly while the outage lasts
#: How long one replica holds the right to post one alert; a crashed holder's lease expires
#: and another replica delivers it (claimed-but-unsent alerts are retried, not lost).
LEASE_S = 300.0  # ours: the deadline below plus two minutes for the Redis writes after it
#: Longest one Slack call of a delivery may take (chat.postMessage answers in well under a
#: second when Slack is healthy); after it the post's outcome is unknown (see "At most once").
POST_TIMEOUT_S = 10.0  # ours: a third of slack_sdk's 30 s default
#: Longest one delivery attempt may take, all tries, pacing waits and history reads included;
#: below LEASE_S, so the replica holding the lease is done before another may take it over.
DELIVERY_DEADLINE_S = (
    180.0  # ours: POST_TRIES × (MAX_INLINE_WAIT_S + POST_TIMEOUT_S) = 160 s + reads
)
#: Messages read back from the channel to find a post whose answer was lost; 15 is the
#: ``limit`` ceiling of conversations.history for non-Marketplace apps
#: (api.slack.com/changelog/2025-05-terms-rate-limit-update-and-faq).
HISTORY_LIMIT = 15
#: How far before the first uncertain post the history is read (clock skew between the
#: worker and Slack).
HISTORY_SKEW_S = 60.0  # ours
#: The Slack message metadata ``event_type`` of an alert post; its payload holds the key.
ALERT_EVENT_TYPE = "gpufit_alert"


@dataclass(frozen=True, slots=True)
class Outcome:
    """How one delivery attempt ended."""

    status: str  # sent, retry, failed, dropped, skipped, paused
    record: AlertRecord | None = None
    error: str | None = None


def _backoff(state: RetryCallState) -> float:
    """No extra wait after a 429 (the pacer holds the channel); exponential otherwise."""
    outcome = state.outcome
    if outcome is not None and isinstance(outcome.exception(), RateLimited):
        return 0.0
    return float(min(8.0, 0.25 * 2 ** (state.attempt_number - 1)))


class _Try:
    """One delivery attempt's record, updated as its tries go (``posting_since``)."""

    __slots__ = ("record",)

    def __init__(self, record: AlertRecord) -> None:
        self.record = record


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
        lease_s: float = LEASE_S,
        deadline_s: float = DELIVERY_DEADLINE_S,
        post_timeout_s: float = POST_TIMEOUT_S,
    ) -> None:
        if not post_timeout_s <= deadline_s < lease_s:
            raise ValueError("need post_timeout_s <= deadline_s < lease_s")
        self._lease_s = lease_s
        self._deadline_s = deadline_s
        self._post_timeout_s = post_timeout_s
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
            Transient: auth.test itself could not be asked (network, 5xx, 429).
        """
        client = self._client_for(team_id)
        try:
            resp = await client.auth_test()
        except SlackApiError as exc:
            error = str(exc.response.get("error") or "")
            if error in TOKEN_ERRORS:
                return error
            raise Transient(f"auth.test: {error or 'failed'}") from exc
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise Transient(f"auth.test: {type(exc).__name__}") from exc
        scopes = granted_scopes(resp)
        if scopes is not None and POST_SCOPE not in {s.strip() for s in scopes.split(",")}:
            return "missing_scope"
        return None

    async def _recheck_paused(self) -> None:
        """One auth.test per paused workspace per pass: resume the ones whose token works."""
        for team_id in list(self._paused):
            try:
                problem = await self._token_problem(team_id)
            except Transient as exc:
                log.warning("workspace %s still paused: %s", team_id, exc)
                continue
            if problem is None:
                del self._paused[team_id]
                log.warning("workspace %s: the bot token works again; posting resumed", team_id)
            else:
                self._paused[team_id] = f"{problem}: {TOKEN_ERRORS[problem]}"

    async def deliver(self, key: str) -> Outcome:
        if not await self._queue.lease(key, self._owner, self._lease_s):
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
        attempt = _Try(replace(record, attempts=record.attempts + 1))
        try:
            async with asyncio.timeout(self._deadline_s):
                ts = await self._post(attempt)
        except Deferred as exc:
            # A wait Slack (or the channel's pace) asks for is not a failed attempt: it does not
            # spend the budget MAX_DELIVERY_ATTEMPTS keeps for transient failures.
            waiting = replace(attempt.record, attempts=record.attempts)
            await self._queue.retry_later(waiting, self._clock() + exc.retry_after_s)
            return Outcome("retry", waiting, "ratelimited")
        except RateLimited as exc:
            return await self._give_back(attempt.record, str(exc), wait_s=exc.retry_after_s)
        except Transient as exc:
            return await self._give_back(attempt.record, str(exc))
        except TimeoutError:
            return await self._give_back(
                attempt.record, f"no outcome within {self._deadline_s:g} s"
            )
        except SlackApiError as exc:
            return await self._permanent(attempt.record, str(exc.response.get("error") or exc))
        done = replace(attempt.record, status="sent", ts=ts, error=None)
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
        except Transient as exc:
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
            disabled = await self._watches.disable_channel(
                record.team_id, record.channel_id, reason
            )
        else:
            disabled = []
        log.warning("alert %s not deliverable (%s); disabled %s", record.key, error, disabled)
        dropped = replace(record, status="dropped", error=error)
        await self._queue.finish(dropped)
        return Outcome("dropped", dropped, error)

    async def _post(self, attempt: _Try) -> str | None:
        client = self._client_for(attempt.record.team_id)
        retrying = AsyncRetrying(
            stop=stop_after_attempt(POST_TRIES),
            retry=retry_if_exception_type((RateLimited, Transient)),
            wait=_backoff,
            sleep=self._sleep,
            reraise=True,
        )
        async for tried in retrying:
            with tried:
                if attempt.record.posting_since is not None:
                    ts = await self._find_posted(client, attempt.record)
                    if ts is not None:
                        return ts
                return await self._post_once(client, attempt)
        return None  # pragma: no cover - reraise=True always raises or returns above

    async def _find_posted(self, client: AsyncWebClient, record: AlertRecord) -> str | None:
        """The ``ts`` of the alert's post if the channel's newest messages hold it.

        Raises:
            Deferred: Slack throttled the read (the alert waits; it is not posted blind).
            Transient: the read failed for now.
        """
        since = (record.posting_since or 0.0) - HISTORY_SKEW_S
        try:
            async with asyncio.timeout(self._post_timeout_s):
                resp = await client.conversations_history(
                    channel=record.channel_id,
                    oldest=f"{max(0.0, since):.6f}",
                    limit=HISTORY_LIMIT,
                    include_all_metadata=True,
                )
        except SlackApiError as exc:
            status = getattr(exc.response, "status_code", 200)
            error = str(exc.response.get("error") or "")
            if is_rate_limited(exc):
                raise Deferred(retry_after(exc)) from exc
            if status >= 500 or error in TRANSIENT_ERRORS:
                raise Transient(f"conversations.history: {error or status}") from exc
            # No history scope, or the channel is gone (the post will say so): post again.
            log.warning(
                "alert %s: cannot read the channel to check an earlier post (%s); "
                "posting it again, so it may appear twice",
                record.key,
                error,
            )
            return None
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise Transient(f"conversations.history: {type(exc).__name__}") from exc
        for message in resp.get("messages") or []:
            meta = message.get("metadata") or {}
            payload = meta.get("event_payload") or {}
            if meta.get("event_type") == ALERT_EVENT_TYPE and payload.get("key") == record.key:
                log.info(
                    "alert %s found in the channel (ts %s); not posted again",
                    record.key,
                    message.get("ts"),
                )
                return str(message.get("ts"))
        return None

    async def _post_once(self, client: AsyncWebClient, attempt: _Try) -> str | None:
        record = attempt.record
        wait = await self._pacer.reserve(record.team_id, record.channel_id)
        if wait > MAX_INLINE_WAIT_S:
            raise Deferred(wait)
        if wait > 0:
            await self._sleep(wait)
        if record.posting_since is None:
            # From here the post may land even if its answer never comes back.
            record = attempt.record = replace(record, posting_since=self._clock())
            await self._queue.mark_posting(record)
        try:
            async with asyncio.timeout(self._post_timeout_s):
                resp = await client.chat_postMessage(
                    channel=record.channel_id,
                    text=record.text,
                    blocks=list(record.blocks) or None,
                    unfurl_links=False,
                    unfurl_media=False,
                    metadata={"event_type": ALERT_EVENT_TYPE, "event_payload": {"key": record.key}},
                )
        except SlackApiError as exc:
            status = getattr(exc.response, "status_code", 200)
            error = str(exc.response.get("error") or "")
            if status < 500:
                # Slack answered and refused: nothing was posted, no history read is needed.
                attempt.record = replace(record, posting_since=None)
            if is_rate_limited(exc):
                if self._metrics is not None:
                    self._metrics.slack_rate_limited_once("chat.postMessage")
                wait_s = retry_after(exc)
                await self._pacer.block(record.team_id, record.channel_id, wait_s)
                if wait_s > MAX_INLINE_WAIT_S:
                    raise Deferred(wait_s) from exc
                raise RateLimited(wait_s) from exc
            if status >= 500 or error in TRANSIENT_ERRORS:
                raise Transient(error or f"HTTP {status}") from exc
            raise
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise Transient(type(exc).__name__) from exc
        ts = resp.get("ts")
        return str(ts) if ts is not None else None
