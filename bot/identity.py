"""Who the bot is in Slack: one ``auth.test`` for the whole process, asked once at start-up.

Bolt's own single-workspace authorization asks ``auth.test`` on the first request and keeps
the answer, but every request that arrives before the first answer asks again: 64 concurrent
first requests made 64 calls. And any failure, a 429 included, answers the user "Please
reinstall this app". :meth:`SlackIdentity.authorizer` is Bolt's ``authorize`` instead:

* **single flight** — concurrent callers share one ``auth.test`` in flight; the answer is
  kept for the life of the process (the bot token is fixed by ``SLACK_BOT_TOKEN``);
* **never blocks requests** — a request waits for an ``auth.test`` in flight at most
  :data:`AUTHORIZE_WAIT_S`, then gets :data:`NOT_READY_TEXT`; ``auth.test`` itself is asked
  without slack_sdk's 429 retry handler (which slept through ``Retry-After`` while every
  request waited: ~40 s, issue #34), and has :data:`AUTH_TEST_TIMEOUT_S`;
* **no retry storm** — after a failure no one asks again for :data:`RETRY_AFTER_FAILURE_S`
  (or Slack's ``Retry-After``, capped), and requests meanwhile get :data:`NOT_READY_TEXT`,
  which tells users to try again, not to reinstall;
* **readiness** — ``gpufit serve`` asks at start-up (:meth:`SlackIdentity.warm_up`), and
  ``/readyz`` reports ``slack: false`` until an answer has been had, so a load balancer sends
  no traffic to a replica that cannot answer yet.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp
from slack_bolt.authorization import AuthorizeResult
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.alerts.slack_errors import granted_scopes, is_rate_limited, retry_after

__all__ = [
    "AUTHORIZE_WAIT_S",
    "AUTH_TEST_TIMEOUT_S",
    "NOT_READY_TEXT",
    "RETRY_AFTER_FAILURE_S",
    "SlackIdentity",
]

logger = logging.getLogger(__name__)

#: What a user sees when the bot's identity is not known yet (Bolt's default says
#: "reinstall this app", which a 429 or a network blip does not call for).
NOT_READY_TEXT = (
    "gpufit is not connected to Slack right now. Please try again in a minute; "
    "if it keeps happening, tell your admin."
)
#: After a failed auth.test, how long before it is asked again (unless Slack says longer).
RETRY_AFTER_FAILURE_S = 5.0  # ours: a start-up blip clears quickly; no storm meanwhile
#: How often the start-up warm-up asks again while auth.test keeps failing.
WARM_UP_RETRY_S = 5.0  # ours
#: Longest a request waits for an auth.test in flight: Slack wants its ack within 3 s
#: (Slack docs, "Responding to slash commands"), so 1 s leaves 2 s for the answer itself.
AUTHORIZE_WAIT_S = 1.0  # ours
#: Longest one auth.test may take (slack_sdk's default is 30 s).
AUTH_TEST_TIMEOUT_S = 10.0  # ours: Slack answers auth.test in well under a second


class SlackIdentity:
    """The bot's ``auth.test`` answer, fetched once (single flight) and kept."""

    def __init__(self, client: AsyncWebClient) -> None:
        self._client = client
        # The same token and API URL, without retry handlers: a 429 comes back at once and is
        # honoured here (no request waits while slack_sdk sleeps through Retry-After).
        self._asker = AsyncWebClient(
            token=client.token,
            base_url=client.base_url,
            timeout=int(AUTH_TEST_TIMEOUT_S),
            retry_handlers=[],
        )
        self._answer: dict[str, Any] | None = None
        self._scopes: str | None = None
        self._flight: asyncio.Task[bool] | None = None
        self._not_before = 0.0
        #: Why the last auth.test failed (for ``/readyz`` and the logs); ``None`` when fine.
        self.problem: str | None = None

    @property
    def ready(self) -> bool:
        """Whether the bot's identity is known (requests can be authorized)."""
        return self._answer is not None

    async def check(self, *, wait_s: float | None = None) -> bool:
        """Know the identity: ``True`` once ``auth.test`` has answered. Concurrent callers
        share one call, each waiting for it at most ``wait_s`` (``None``: until it answers);
        after a failure, callers get ``False`` without a call until the retry time has
        passed."""
        if self._answer is not None:
            return True
        if self._flight is None or self._flight.done():
            if time.monotonic() < self._not_before:
                return False
            self._flight = asyncio.create_task(self._ask(), name="gpufit-auth-test")
        try:
            # shield: a caller that stops waiting leaves the shared call running.
            return await asyncio.wait_for(asyncio.shield(self._flight), wait_s)
        except TimeoutError:
            return False

    async def _ask(self) -> bool:
        wait = RETRY_AFTER_FAILURE_S
        try:
            resp = await self._asker.auth_test()
        except SlackApiError as exc:
            error = str(exc.response.get("error") or "")
            if is_rate_limited(exc):
                wait = max(wait, retry_after(exc))
            self.problem = f"auth.test: {error or 'failed'}"
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            self.problem = f"auth.test: {type(exc).__name__}"
        else:
            self._scopes = granted_scopes(resp)
            self._answer = dict(resp.data) if isinstance(resp.data, dict) else {}
            if self.problem is not None:
                logger.warning("auth.test answers again; the bot is ready")
            self.problem = None
            return True
        self._not_before = time.monotonic() + wait
        logger.warning("%s; requests are refused for %g s", self.problem, wait)
        return False

    def authorizer(self) -> Callable[..., Awaitable[AuthorizeResult | None]]:
        """Bolt's ``authorize`` function: the bot token and identity, or ``None`` (then Bolt
        answers the app's authorize error message, :data:`NOT_READY_TEXT`)."""

        async def authorize(user_id: str | None) -> AuthorizeResult | None:
            if not await self.check(wait_s=AUTHORIZE_WAIT_S) or self._answer is None:
                return None
            answer = self._answer
            return AuthorizeResult(
                enterprise_id=answer.get("enterprise_id"),
                team_id=answer.get("team_id"),
                team=answer.get("team"),
                url=answer.get("url"),
                bot_id=answer.get("bot_id"),
                bot_user_id=answer.get("user_id"),
                bot_token=self._client.token,
                bot_scopes=self._scopes,
                user_id=user_id,
            )

        return authorize

    async def warm_up(self, stop: asyncio.Event) -> None:
        """Ask until the identity is known (or ``stop``); run at start-up, beside serving."""
        while not stop.is_set() and not await self.check():
            try:
                await asyncio.wait_for(stop.wait(), timeout=WARM_UP_RETRY_S)
            except TimeoutError:
                continue
