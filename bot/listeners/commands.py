"""``/gpufit``: a question, or one of the subcommands ``help``, ``gpus``, ``prices GPU`` and
the price-alert ones (routed to :mod:`bot.listeners.watches`)."""

from __future__ import annotations

from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.respond.async_respond import AsyncRespond
from slack_sdk.web.async_client import AsyncWebClient

from bot.listeners import watches
from bot.listeners.answers import answer, prices, slack_text
from bot.listeners.errors import reported
from bot.render.blocks import render_gpus, render_help, render_working
from bot.services import Services
from recommender import all_gpus

__all__ = ["COMMAND", "on_gpufit"]

COMMAND = "/gpufit"


async def on_gpufit(
    ack: AsyncAck,
    command: dict[str, Any],
    body: dict[str, Any],
    respond: AsyncRespond,
    client: AsyncWebClient,
    services: Services,
    top: int,
) -> None:
    """Ack at once (Slack allows 3 s); the answer follows through ``respond``."""
    text = slack_text(command.get("text") or "")
    sub, _, rest = text.partition(" ")
    sub = sub.lower()
    if sub in ("", "help"):
        await ack(response_type="ephemeral", **render_help().kwargs())
        return
    if sub == "gpus":
        await ack(response_type="ephemeral", **render_gpus(all_gpus()).kwargs())
        return
    await ack(response_type="ephemeral", **render_working().kwargs())
    async with reported(body, respond, client):
        if sub in watches.WATCH_SUBCOMMANDS:
            await watches.handle_watch_command(
                sub, rest, command=command, respond=respond, services=services
            )
            return
        if sub == "prices":
            message = await prices(services, rest)
        else:
            message = (await answer(services, text, top=top, ephemeral=True)).message
        await respond(response_type="ephemeral", replace_original=False, **message.kwargs())
