"""Bolt middleware: what every request passes through after Bolt's own checks.

Bolt verifies the signature (HTTP mode) and authorizes before any of these run, so a forged
request never reaches Redis or a listener.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

import redis.asyncio as aioredis
from redis.exceptions import RedisError
from slack_bolt.context.async_context import AsyncBoltContext
from slack_bolt.response import BoltResponse

from bot.logs import new_request_id, start_request_context
from bot.services import Services

__all__ = [
    "EVENT_CLAIM_TTL_S",
    "bind_log_context",
    "dedupe_events",
    "event_claim_key",
    "inject",
]

logger = logging.getLogger(__name__)

Next = Callable[[], Awaitable[None]]
Middleware = Callable[..., Awaitable[BoltResponse | None]]

#: How long an event id stays claimed. Slack retries up to 3 times within ~6 minutes
#: (immediately, +1 min, +5 min; slack.md §1.3); an hour covers them with a wide margin.
EVENT_CLAIM_TTL_S = 3600


def event_claim_key(event_id: str) -> str:
    return f"gpufit:evt:{event_id}"


def inject(services: Services, *, top: int) -> Middleware:
    """Put the services and the answer size into the context, where listeners find them."""

    async def inject_services(context: AsyncBoltContext, next: Next) -> None:
        context["services"] = services
        context["top"] = top
        await next()

    return inject_services


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


def bind_log_context() -> Middleware:
    """Bind a request id, the request kind and the team/channel/user to every log line of the
    request (``bot.logs.log_context``); the user's text is never logged."""

    async def bind(body: dict[str, Any], next: Next) -> None:
        # Bolt's next() returns before the listeners run, so the context is set for the rest
        # of this request's task rather than scoped to a with-block.
        start_request_context(request_id=new_request_id(), **_request_fields(body))
        await next()

    return bind


def dedupe_events(redis: aioredis.Redis) -> Middleware:
    """Answer each Events API event once, across retries, duplicates and replicas.

    The event id is claimed with ``SET NX EX`` before any listener runs. An event whose id is
    already claimed is acknowledged (200) and dropped, whatever its retry headers say; a retry
    whose first delivery never arrived claims the id and is processed. If Redis is down the
    event is processed anyway: a rare duplicate reply beats a silent bot.
    """

    async def dedupe(body: dict[str, Any], next: Next) -> BoltResponse | None:
        event_id = body.get("event_id")
        if body.get("type") != "event_callback" or not isinstance(event_id, str):
            await next()
            return None
        try:
            claimed = await redis.set(event_claim_key(event_id), "1", nx=True, ex=EVENT_CLAIM_TTL_S)
        except RedisError as exc:
            logger.warning("event dedupe unavailable (%s); processing %s", exc, event_id)
            claimed = True
        if not claimed:
            logger.info("duplicate event %s dropped", event_id)
            return BoltResponse(status=200, body="")
        await next()
        return None

    return dedupe
