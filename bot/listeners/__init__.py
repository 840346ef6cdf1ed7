"""Slack listeners, one module per surface; :func:`register` wires them onto an app."""

from __future__ import annotations

import re

from slack_bolt.async_app import AsyncApp

from bot.listeners.actions import on_post, on_refine, on_watch
from bot.listeners.commands import COMMAND, on_gpufit
from bot.listeners.mentions import on_app_mention
from bot.render.blocks import (
    ACTION_MORE,
    ACTION_ON_DEMAND_ONLY,
    ACTION_POST,
    ACTION_SPOT_ONLY,
    ACTION_WATCH,
)

__all__ = ["EVENTS", "register"]

#: The Events API subscriptions the app handles (the manifest must list exactly these).
EVENTS = ("app_mention",)


def register(app: AsyncApp) -> None:
    app.command(COMMAND)(on_gpufit)
    app.event("app_mention")(on_app_mention)
    refine = "|".join(re.escape(a) for a in (ACTION_MORE, ACTION_SPOT_ONLY, ACTION_ON_DEMAND_ONLY))
    app.action(re.compile(f"^(?:{refine})$"))(on_refine)
    app.action(ACTION_POST)(on_post)
    app.action(ACTION_WATCH)(on_watch)
