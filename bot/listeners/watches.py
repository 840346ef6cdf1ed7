"""Price alerts: ``/gpufit watch``, ``watches``, ``unwatch`` and the "Watch price" button.

THE SEAM for alerts. Commands and buttons are routed here already; until alerts land these
answer "coming soon". Replace the bodies of :func:`handle_watch_command` and
:func:`handle_watch_button`, keeping their signatures, and the routing stays as it is.
"""

from __future__ import annotations

from typing import Any

from slack_bolt.context.respond.async_respond import AsyncRespond

from bot.render.blocks import render_notice
from bot.services import Services

__all__ = ["COMING_SOON", "WATCH_SUBCOMMANDS", "handle_watch_button", "handle_watch_command"]

WATCH_SUBCOMMANDS = frozenset({"watch", "watches", "unwatch"})

COMING_SOON = (
    "Price alerts are coming soon: gpufit will tell you when a GPU price drops. "
    "For now, `/gpufit prices H100` shows today's cheapest offers."
)


async def handle_watch_command(
    subcommand: str,
    args: str,
    *,
    command: dict[str, Any],
    respond: AsyncRespond,
    services: Services,
) -> None:
    """``/gpufit watch|watches|unwatch ARGS`` (already acknowledged)."""
    await respond(
        response_type="ephemeral", replace_original=False, **render_notice(COMING_SOON).kwargs()
    )


async def handle_watch_button(
    *,
    query: str,
    offer_key: str,
    body: dict[str, Any],
    respond: AsyncRespond,
    services: Services,
) -> None:
    """A click on "Watch price" for ``offer_key`` in the answer to ``query`` (acknowledged,
    and claimed once per user and message, so a double click arrives here once)."""
    await respond(
        response_type="ephemeral", replace_original=False, **render_notice(COMING_SOON).kwargs()
    )
