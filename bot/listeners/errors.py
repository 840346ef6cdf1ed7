"""THE place a failure becomes Slack text (Bolt's global error handler).

``WorkloadError`` → "Didn't understand: … Try: …"; any other ``GpufitError`` → its own
message and hint; anything else is a bug: logged with an incident id, answered with a generic
apology carrying that id. Never a traceback in Slack. A request that never passed
verification (``bot.middleware.VERIFIED`` unset) is not answered at all: its
``response_url`` and channel are an attacker's to choose.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from typing import Any

from redis.exceptions import RedisError
from slack_bolt.context.respond.async_respond import AsyncRespond
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.middleware import VERIFIED
from bot.render.blocks import render_apology, render_notice, render_problem
from bot.render.limits import Message
from recommender import CatalogError, GpufitError, StoreError, WorkloadError

__all__ = [
    "UNAVAILABLE_TEXT",
    "error_message",
    "failure_message",
    "handle_error",
    "reported",
    "reporting",
]

logger = logging.getLogger(__name__)


#: What a user is told when prices or storage are unavailable: the error itself (a Redis
#: address, "Error 111 connecting to 127.0.0.1:16391", a feed URL with its credentials) stays
#: in the logs.
UNAVAILABLE_TEXT = (
    "gpufit's price data is unavailable right now. Please try again in a minute; "
    "if it keeps happening, tell your admin."
)


#: Failures of Redis or the feeds: one fixed sentence to the user, the detail to the logs.
_INFRASTRUCTURE = (StoreError, CatalogError, RedisError)


def error_message(error: Exception) -> tuple[Message, str | None]:
    """The message for ``error``, and the incident id when it is a bug.

    Errors about the user's input say what was wrong; errors of the infrastructure
    (:class:`~recommender.StoreError`, :class:`~recommender.CatalogError`: Redis, feeds; and
    a ``RedisError`` no caller translated, such as Redis out of memory refusing a write)
    get one fixed sentence, never their own text; anything else is an apology with an id.
    """
    if isinstance(error, WorkloadError):
        return render_problem(error.message, error.hint), None
    if isinstance(error, _INFRASTRUCTURE):
        return render_notice(UNAVAILABLE_TEXT), None
    if isinstance(error, GpufitError):
        return render_notice(error.user_text()), None
    incident = uuid.uuid4().hex[:12]
    return render_apology(incident), incident


def failure_message(error: Exception) -> Message:
    """The message for ``error``, logged as :func:`handle_error` logs it (a bug with its
    incident id); for failures answered where the work runs (a mention's reply), rather than
    delivered by :func:`handle_error`."""
    message, incident = error_message(error)
    if incident is not None:
        logger.error(
            "unhandled error, incident %s: %s",
            incident,
            type(error).__name__,
            exc_info=error,
            extra={"incident": incident},
        )
    elif isinstance(error, _INFRASTRUCTURE):
        logger.warning("answered %s as unavailable: %s", type(error).__name__, error)
    else:
        logger.info("answered with %s", type(error).__name__)
    return message


async def _deliver(
    body: dict[str, Any],
    respond: AsyncRespond | None,
    client: AsyncWebClient,
    message: Message,
) -> None:
    if respond is not None and body.get("response_url"):
        await respond(response_type="ephemeral", replace_original=False, **message.kwargs())
        return
    event = body.get("event")
    if isinstance(event, dict) and event.get("channel") and event.get("ts"):
        await client.chat_postMessage(
            channel=event["channel"],
            thread_ts=event.get("thread_ts") or event["ts"],
            **message.kwargs(),
        )


async def handle_error(
    error: Exception,
    body: dict[str, Any],
    respond: AsyncRespond | None,
    client: AsyncWebClient,
    context: dict[str, Any] | None = None,
) -> None:
    """Tell the user what went wrong, where they asked (ephemeral, or in the thread).

    Bolt passes ``context``; work reported after the ack passes none, having run only for a
    request a listener already took (and so verified).
    """
    if context is not None and not context.get(VERIFIED):
        logger.warning("unverified request failed (%s); not answered", type(error).__name__)
        return
    message = failure_message(error)
    try:
        await _deliver(body, respond, client, message)
    except (SlackApiError, OSError) as exc:  # Slack unreachable: nothing more to do than log
        logger.warning("could not deliver the error message: %s", exc)


@asynccontextmanager
async def reported(
    body: dict[str, Any], respond: AsyncRespond | None, client: AsyncWebClient
) -> AsyncIterator[None]:
    """Send errors raised after the ack (in work handed to ``services.background``, which
    Bolt no longer sees) to :func:`handle_error`, the same handler Bolt uses."""
    try:
        yield
    except Exception as exc:
        await handle_error(exc, body, respond, client)


async def reporting(
    work: Awaitable[None],
    body: dict[str, Any],
    respond: AsyncRespond | None,
    client: AsyncWebClient,
) -> None:
    """Await ``work`` (run after the ack) with its failures reported as :func:`reported` does."""
    async with reported(body, respond, client):
        await work
