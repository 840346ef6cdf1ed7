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

from slack_bolt.middleware.async_middleware import AsyncMiddleware
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.request.payload_utils import is_event, is_slash_command
from slack_bolt.response import BoltResponse

from bot.logs import new_request_id, start_request_context

__all__ = [
    "VERIFIED",
    "bind_log_context",
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


def _request_fields(req: AsyncBoltRequest) -> dict[str, str | None]:
    """Who and what a request is about (never its text): the ids Bolt's context already read
    from the payload, and the kind of request."""
    body, context = req.body, req.context
    if is_slash_command(body):
        kind, command = "command", str(body.get("command"))
    elif is_event(body):
        kind, command = "event", str((body.get("event") or {}).get("type", ""))
    else:
        kind, command = "action", str(body.get("type", ""))
    return {
        "kind": kind,
        "command": command or None,
        "team_id": context.team_id,
        "channel_id": context.channel_id,
        "user_id": context.user_id,
    }


class _BindLogContext(AsyncMiddleware):
    async def async_process(
        self, *, req: AsyncBoltRequest, resp: BoltResponse, next: Next
    ) -> BoltResponse | None:
        # Bolt's next() returns before the listeners run, so the context is set for the rest
        # of this request's task rather than scoped to a with-block.
        start_request_context(request_id=new_request_id(), **_request_fields(req))
        await next()
        return None


def bind_log_context() -> AsyncMiddleware:
    """Bind a request id, the request kind and the team/channel/user to every log line of the
    request (``bot.logs.log_context``); the user's text is never logged."""
    return _BindLogContext()
