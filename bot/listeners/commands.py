"""``/gpufit``: a question, or one of the subcommands ``help``, ``gpus``, ``prices GPU`` and
the price-alert ones (routed to :mod:`bot.listeners.watches`).

Bolt's pattern for work longer than an ack (its lazy listeners, bolt docs
``lazy-listeners.md``): :meth:`SlashCommand.ack` answers ``help`` and ``gpus`` in the ack
itself and acknowledges anything else at once as "Working on it…"; :meth:`SlashCommand.work`,
a lazy listener Bolt starts after the ack, answers it through ``response_url``. The app runs
in ``process_before_response`` mode, so the ack is the HTTP response Slack shows.
"""

from __future__ import annotations

from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext
from slack_bolt.context.respond.async_respond import AsyncRespond
from slack_sdk.web.async_client import AsyncWebClient

from bot.listeners import watches
from bot.listeners.answers import answer, prices, slack_text
from bot.listeners.errors import reported
from bot.render.blocks import render_gpus, render_help, render_working
from bot.services import Services
from bot.user_zone import zone_for
from recommender import all_gpus

__all__ = ["COMMAND", "SlashCommand"]

COMMAND = "/gpufit"

#: Subcommands answered in the ack itself: static text, no catalog.
_IN_ACK = frozenset({"", "help", "gpus"})


def _split(command: dict[str, Any]) -> tuple[str, str, str]:
    """(the words typed, the subcommand in lower case, the rest)."""
    text = slack_text(command.get("text") or "")
    sub, _, rest = text.partition(" ")
    return text, sub.lower(), rest


class SlashCommand:
    """``/gpufit``'s ack and its lazy listener, with the services they answer from."""

    def __init__(self, services: Services, top: int) -> None:
        self._services = services
        self._top = top

    async def ack(self, ack: AsyncAck, command: dict[str, Any]) -> None:
        """Within Slack's 3 s: ``help`` and ``gpus`` themselves, anything else "Working on
        it…" (the lazy listener follows with the answer)."""
        _, sub, _ = _split(command)
        if sub in ("", "help"):
            await ack(response_type="ephemeral", **render_help().kwargs())
        elif sub == "gpus":
            await ack(response_type="ephemeral", **render_gpus(all_gpus()).kwargs())
        else:
            await ack(response_type="ephemeral", **render_working().kwargs())

    async def work(
        self,
        command: dict[str, Any],
        body: dict[str, Any],
        context: AsyncBoltContext,
        respond: AsyncRespond,
        client: AsyncWebClient,
    ) -> None:
        """After the ack: the answer, the prices or the watch reply, through ``respond``;
        a failure is reported there too (:func:`bot.listeners.errors.reported`)."""
        text, sub, rest = _split(command)
        if sub in _IN_ACK:
            return
        services = self._services
        services.background.adopt_current()  # drained at shutdown like all work after acks
        async with reported(body, respond, client):
            if sub in watches.WATCH_SUBCOMMANDS:
                await watches.handle_watch_command(
                    sub, rest, context=context, respond=respond, services=services
                )
                return
            if sub == "prices":
                message = await prices(services, rest)
            else:
                # A calendar deadline ("by Friday") is read in the asker's time zone, which
                # Slack tells only when asked (bot.user_zone); most questions need no lookup.
                zone = await zone_for(services, text, context.user_id)
                result = await answer(services, text, top=self._top, ephemeral=True, zone=zone)
                message = result.message
            await respond(response_type="ephemeral", replace_original=False, **message.kwargs())
