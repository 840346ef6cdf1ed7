"""Slack listeners, one module per surface; :func:`register` wires them onto an app."""

from __future__ import annotations

import re

from slack_bolt.async_app import AsyncApp

from bot.listeners.actions import ACTIONS, on_click
from bot.listeners.commands import COMMAND, on_gpufit
from bot.listeners.mentions import on_app_mention

__all__ = ["EVENTS", "register"]

#: The Events API subscriptions the app handles (the manifest must list exactly these).
EVENTS = ("app_mention",)


def register(app: AsyncApp) -> None:
    app.command(COMMAND)(on_gpufit)
    app.event("app_mention")(on_app_mention)
    buttons = "|".join(re.escape(a) for a in ACTIONS)
    app.action(re.compile(f"^(?:{buttons})$"))(on_click)
