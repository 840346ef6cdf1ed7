"""Bolt middleware: what every request passes through after Bolt's own checks.

Bolt verifies the signature (HTTP mode) and authorizes before any of these run, so a forged
request never reaches Redis or a listener. The first of them marks the request verified
(:data:`VERIFIED`); the error handler answers only marked requests, so a request whose
verification raised (rather than failed) never makes gpufit post anywhere.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import RedisError
from slack_bolt.middleware.async_middleware import AsyncMiddleware
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse

from bot.logs import new_request_id, start_request_context
from bot.services import Services

__all__ = [
    "EVENT_CLAIM_TTL_S",
    "VERIFIED",
    "bind_log_context",
    "dedupe_events",
    "event_claim_key",
    "inject",
    "mark_verified",
]

logger = logging.getLogger(__name__)

Next = Callable[[], Awaitable[BoltResponse]]

#: How long an event id stays claimed. Slack retries up to 3 times within ~6 minutes
#: (immediately, +1 min, +5 min; slack.md §1.3); an hour covers them with a wide margin.
EVENT_CLAIM_TTL_S = 3600


#: Context key set once Bolt's signature check (HTTP) or Socket Mode's connection vouched for
#: the request; nothing acts on a body without it.
VERIFIED = "gpufit_verified"


def event_claim_key(event_id: str) -> str:
    return f"gpufit:evt:{event_id}"


class _MarkVerified(AsyncMiddleware):
    async def async_process(
        self, *, req: AsyncBoltRequest, resp: BoltResponse, next: Next
    ) -> BoltResponse | None:
        req.context[VERIFIED] = True
        await next()
        return None


def mark_verified() -> AsyncMiddleware:
    """Mark the request verified; registered first, so it runs right after Bolt's checks."""
    return _MarkVerified()


class _Inject(AsyncMiddleware):
    def __init__(self, services: Services, top: int) -> None:
        self._services = services
        self._top = top

    async def async_process(
        self, *, req: AsyncBoltRequest, resp: BoltResponse, next: Next
    ) -> BoltResponse | None:
        req.context["services"] = self._services
        req.context["top"] = self._top
        await next()
        return None


def inject(services: Services, *, top: int) -> AsyncMiddleware:
    """Put the services and the answer size into the context, where listeners find them."""
    return _Inject(services, top)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _request_fields(body: dict[str, Any]) -> dict[str, str | None]:
    """Who and what a request is about, from any Slack payload shape (never its text)."""
    event, user, team, channel = (_dict(body.get(k)) for k in ("event", "user", "team", "channel"))
    if "command" in body:
        kind, command = "command", str(body.get("command"))
    elif body.get("type") == "event_callback":
        kind, command = "event", str(event.get("type", ""))
    else:
        kind, command = "action", str(body.get("type", ""))

    def first(*values: Any) -> str | None:
        return next((str(v) for v in values if isinstance(v, str) and v), None)

    return {
        "kind": kind,
        "command": command or None,
        "team_id": first(body.get("team_id"), team.get("id")),
        "channel_id": first(body.get("channel_id"), event.get("channel"), channel.get("id")),
        "user_id": first(body.get("user_id"), event.get("user"), user.get("id")),
    }


class _BindLogContext(AsyncMiddleware):
    async def async_process(
        self, *, req: AsyncBoltRequest, resp: BoltResponse, next: Next
    ) -> BoltResponse | None:
        # Bolt's next() returns before the listeners run, so the context is set for the rest
        # of this request's task rather than scoped to a with-block.
        start_request_context(request_id=new_request_id(), **_request_fields(req.body))
        await next()
        return None


def bind_log_context() -> AsyncMiddleware:
    """Bind a request id, the request kind and the team/channel/user to every log line of the
    request (``bot.logs.log_context``); the user's text is never logged."""
    return _BindLogContext()


class _DedupeEvents(AsyncMiddleware):
    def __init__(self, redis: aioredis.Redis) -> None:
        self._redis = redis

    async def async_process(
        self, *, req: AsyncBoltRequest, resp: BoltResponse, next: Next
    ) -> BoltResponse | None:
        body = req.body
        event_id = body.get("event_id")
        if body.get("type") != "event_callback" or not isinstance(event_id, str):
            await next()
            return None
        try:
            claimed = await self._redis.set(
                event_claim_key(event_id), "1", nx=True, ex=EVENT_CLAIM_TTL_S
            )
        except RedisError as exc:
            logger.warning("event dedupe unavailable (%s); processing %s", exc, event_id)
            claimed = True
        if not claimed:
            logger.info("duplicate event %s dropped", event_id)
            return BoltResponse(status=200, body="")
        await next()
        return None


def dedupe_events(redis: aioredis.Redis) -> AsyncMiddleware:
    """Answer each Events API event once, across retries, duplicates and replicas.

    The event id is claimed with ``SET NX EX`` before any listener runs. An event whose id is
    already claimed is acknowledged (200) and dropped, whatever its retry headers say; a retry
    whose first delivery never arrived claims the id and is processed. If Redis is down the
    event is processed anyway: a rare duplicate reply beats a silent bot.
    """
    return _DedupeEvents(redis)
