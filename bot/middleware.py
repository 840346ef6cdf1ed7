"""Bolt middleware: what every request passes through after Bolt's own checks.

Bolt verifies the signature (HTTP mode) and authorizes before any of these run, so a forged
request never reaches Redis or a listener. The first of them marks the request verified
(:data:`VERIFIED`); the error handler answers only marked requests, so a request whose
verification raised (rather than failed) never makes gpufit post anywhere. Events are
deduplicated where they are queued (:mod:`bot.outbox`), in the same Redis script as their job.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from slack_bolt.middleware.async_middleware import AsyncMiddleware
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse

from bot.logs import new_request_id, start_request_context
from bot.services import Services

__all__ = [
    "VERIFIED",
    "bind_log_context",
    "inject",
    "mark_verified",
]

logger = logging.getLogger(__name__)

Next = Callable[[], Awaitable[BoltResponse]]

#: Context key set once Bolt's signature check (HTTP) or Socket Mode's connection vouched for
#: the request; nothing acts on a body without it.
VERIFIED = "gpufit_verified"


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
