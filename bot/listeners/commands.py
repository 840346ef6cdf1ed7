"""``/gpufit``: a question, or one of the subcommands ``help``, ``gpus``, ``prices GPU`` and
the price-alert ones (routed to :mod:`bot.listeners.watches`).

The app runs in Bolt's ``process_before_response`` mode, so what this listener acks is the
HTTP response Slack shows. A question is answered in the ack itself when the answer is ready
within :data:`ACK_BUDGET_S` (milliseconds, normally); a slower one is acked as "Working on
it…" and follows through ``response_url``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Coroutine
from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.respond.async_respond import AsyncRespond
from slack_sdk.web.async_client import AsyncWebClient

from bot.answer_cache import Answer
from bot.listeners import watches
from bot.listeners.answers import answer, answer_now, prices, slack_text
from bot.listeners.errors import failure_message, reported, reporting
from bot.render.blocks import render_gpus, render_help, render_working
from bot.render.limits import Message
from bot.services import Services
from bot.user_zone import zone_for
from recommender import all_gpus

__all__ = ["ACK_BUDGET_S", "COMMAND", "on_gpufit"]

COMMAND = "/gpufit"

#: How long an answer may take to go out in the ack itself. Slack shows the user an error
#: when a command is not acknowledged within 3 s (slack.md §1.1); the other second is for the
#: network and for a busy event loop to send the "Working on it…" ack in time.
ACK_BUDGET_S = 2.0


async def on_gpufit(
    ack: AsyncAck,
    command: dict[str, Any],
    body: dict[str, Any],
    respond: AsyncRespond,
    client: AsyncWebClient,
    services: Services,
    top: int,
) -> None:
    """Answer in the ack when the answer is ready in time; otherwise ack at once and respond."""
    text = slack_text(command.get("text") or "")
    sub, _, rest = text.partition(" ")
    sub = sub.lower()
    if sub in ("", "help"):
        await ack(response_type="ephemeral", **render_help().kwargs())
        return
    if sub == "gpus":
        await ack(response_type="ephemeral", **render_gpus(all_gpus()).kwargs())
        return
    if sub in watches.WATCH_SUBCOMMANDS:
        # Watch replies may be public (in the channel), so they always go through respond.
        await ack(response_type="ephemeral", **render_working().kwargs())
        watch = watches.handle_watch_command(
            sub, rest, command=command, respond=respond, services=services
        )
        services.background.spawn(reporting(watch, body, respond, client), name="gpufit-watch")
        return
    work: Coroutine[Any, Any, Message]
    if sub == "prices":
        work = prices(services, rest)
    else:
        # A calendar deadline ("by Friday") is read in the asker's time zone, which Slack
        # tells only when asked (bot.user_zone); a question without one needs no lookup.
        zone = await zone_for(services, text, command.get("user_id"))
        # With the catalog at hand the answer is ready now: ack it without a task and a wait.
        try:
            ready = answer_now(services, text, top=top, ephemeral=True, zone=zone)
        except Exception as exc:
            await ack(failure_message(exc).response_json("ephemeral"))
            return
        if ready is not None:
            await ack(ready.message.response_json("ephemeral"))
            return
        work = _message(answer(services, text, top=top, ephemeral=True, zone=zone))
    task = asyncio.create_task(work, name="gpufit-answer")
    done, _ = await asyncio.wait({task}, timeout=ACK_BUDGET_S)
    if task in done:
        try:
            message = task.result()
        except Exception as exc:
            message = failure_message(exc)
        # Bolt sends a text ack as the response body as it is, typed JSON when it is a JSON
        # object; the message's blocks were serialized once already, to measure them.
        await ack(message.response_json("ephemeral"))
        return
    await ack(response_type="ephemeral", **render_working().kwargs())
    services.background.spawn(_respond_later(task, body, respond, client), name="gpufit-late")


async def _message(work: Awaitable[Answer]) -> Message:
    return (await work).message


async def _respond_later(
    task: asyncio.Task[Message], body: dict[str, Any], respond: AsyncRespond, client: AsyncWebClient
) -> None:
    """Deliver an answer that missed the ack budget once it is ready."""
    async with reported(body, respond, client):
        message = await task
        await respond(response_type="ephemeral", replace_original=False, **message.kwargs())
