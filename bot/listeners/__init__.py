"""Slack listeners, one module per surface; :func:`register` wires them onto an app.

The services and the answer size reach the listeners as the objects' own state (bound when
the app is built), not through Bolt's context: Bolt deep-copies the context for each lazy
listener, and the services (Redis pools, the price store, caches) must be the same objects.
"""

from __future__ import annotations

import re
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.context.async_context import AsyncBoltContext

from bot.listeners.actions import ACTIONS, ButtonClick
from bot.listeners.commands import COMMAND, SlashCommand
from bot.listeners.mentions import on_app_mention
from bot.services import Services

__all__ = ["EVENTS", "register"]

#: The Events API subscriptions the app handles (the manifest must list exactly these).
EVENTS = ("app_mention",)


def register(app: AsyncApp, services: Services, *, top: int) -> None:
    """``/gpufit`` and the buttons as an ack plus a lazy listener (Bolt's pattern for work
    past the ack), mentions through the reply outbox (:mod:`bot.listeners.mentions`)."""
    command = SlashCommand(services, top)
    app.command(COMMAND)(ack=command.ack, lazy=[command.work])
    click = ButtonClick(services, top)
    buttons = "|".join(re.escape(a) for a in ACTIONS)
    app.action(re.compile(f"^(?:{buttons})$"))(ack=click.ack, lazy=[click.work])

    async def mention(
        event: dict[str, Any], body: dict[str, Any], context: AsyncBoltContext
    ) -> None:
        await on_app_mention(event, body, context, services, top)

    app.event("app_mention")(mention)
