"""Buttons on an answer: details, more options, spot only, on-demand only, watch price, post to
channel, launch files.

Each button's value is the question text (the watch button adds the offer key); nothing is
kept in ``action_id``. Buttons that start work (post, watch) are claimed in Redis per user,
message and value, so a double click does the work once. A click is acknowledged at once
(:meth:`ButtonClick.ack`); its work runs in Bolt's lazy listener (:meth:`ButtonClick.work`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import redis.asyncio as aioredis
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext
from slack_bolt.context.respond.async_respond import AsyncRespond
from slack_sdk.web.async_client import AsyncWebClient

from bot.listeners import watches
from bot.listeners.answers import answer
from bot.listeners.errors import reporting
from bot.listeners.launch import launch_message
from bot.render.blocks import (
    ACTION_DETAILS,
    ACTION_LAUNCH,
    ACTION_MORE,
    ACTION_ON_DEMAND_ONLY,
    ACTION_POST,
    ACTION_SPOT_ONLY,
    ACTION_WATCH,
    decode_watch_value,
)
from bot.render.limits import Message
from bot.services import Services
from bot.user_zone import zone_for

__all__ = ["ACTIONS", "CLICK_CLAIM_TTL_S", "ButtonClick", "Click", "claim_click"]

#: How long a click that started work stays claimed (double clicks come within seconds).
CLICK_CLAIM_TTL_S = 600  # ours

#: What each refine button adds to the question (the parser keeps the first value stated).
_REFINEMENTS = {
    ACTION_MORE: "",
    ACTION_SPOT_ONLY: "spot only",
    ACTION_ON_DEMAND_ONLY: "on-demand only",
}

#: How many options "More options" shows, relative to the configured answer size.
MORE_FACTOR = 2
MORE_MAX = 20  # ours: 20 options stay well inside 50 blocks


def _container(body: dict[str, Any]) -> dict[str, Any]:
    container = body.get("container")
    return container if isinstance(container, dict) else {}


async def claim_click(
    redis: aioredis.Redis, body: dict[str, Any], action: dict[str, Any], user_id: str | None
) -> bool:
    """Whether this click is the first of its kind (same user, message, button and value)."""
    container = _container(body)
    digest = hashlib.sha256(str(action.get("value", "")).encode()).hexdigest()[:16]
    parts = (
        str(action.get("action_id", "")),
        str(user_id or ""),
        str(container.get("channel_id", "")),
        str(container.get("message_ts", "")),
        digest,
    )
    return bool(
        await redis.set("gpufit:click:" + ":".join(parts), "1", nx=True, ex=CLICK_CLAIM_TTL_S)
    )


async def _deliver(
    body: dict[str, Any], respond: AsyncRespond, client: AsyncWebClient, message: Message
) -> None:
    """Replace an ephemeral answer in place; answer a public one in its thread."""
    container = _container(body)
    if container.get("is_ephemeral") or not container.get("channel_id"):
        await respond(response_type="ephemeral", replace_original=True, **message.kwargs())
        return
    posted = body.get("message") or {}
    thread_ts = posted.get("thread_ts") or container.get("message_ts")
    await client.chat_postMessage(
        channel=container["channel_id"], thread_ts=thread_ts, **message.kwargs()
    )


@dataclass(frozen=True, slots=True)
class Click:
    """One button click, with what its work needs after the ack."""

    action: dict[str, Any]
    body: dict[str, Any]
    #: Bolt's context: the ids of the clicker, team and channel, as Bolt read them.
    context: AsyncBoltContext
    respond: AsyncRespond
    client: AsyncWebClient
    services: Services
    top: int

    @property
    def value(self) -> str:
        return str(self.action.get("value") or "")

    @property
    def user(self) -> str | None:
        """The id of the user who clicked."""
        return self.context.user_id


class ButtonClick:
    """Any of gpufit's buttons: its ack and its lazy listener."""

    def __init__(self, services: Services, top: int) -> None:
        self._services = services
        self._top = top

    async def ack(self, ack: AsyncAck) -> None:
        """Acknowledged at once: the ack is the response Slack waits for."""
        await ack()

    async def work(
        self,
        action: dict[str, Any],
        body: dict[str, Any],
        context: AsyncBoltContext,
        respond: AsyncRespond,
        client: AsyncWebClient,
    ) -> None:
        """The button's work, after the ack; its failures reported where it was clicked."""
        self._services.background.adopt_current()  # drained at shutdown
        action_id = str(action.get("action_id", ""))
        click = Click(action, body, context, respond, client, self._services, self._top)
        await reporting(_WORK[action_id](click), body, respond, client)


async def _refine(click: Click) -> None:
    """More options / spot only / on-demand only: the same question, re-answered."""
    action_id = click.action["action_id"]
    more = action_id == ACTION_MORE
    result = await answer(
        click.services,
        click.value,
        follow_up=_REFINEMENTS[action_id] or None,
        top=min(click.top * MORE_FACTOR, MORE_MAX) if more else click.top,
        ephemeral=bool(_container(click.body).get("is_ephemeral")),
        zone=await zone_for(click.services, click.value, click.user),
    )
    await _deliver(click.body, click.respond, click.client, result.message)


async def _post(click: Click) -> None:
    """Post the answer to the channel for everyone (once, however often it is clicked)."""
    if not await claim_click(click.services.redis, click.body, click.action, click.user):
        return
    zone = await zone_for(click.services, click.value, click.user)
    result = await answer(click.services, click.value, top=click.top, ephemeral=False, zone=zone)
    await click.respond(
        response_type="in_channel", replace_original=False, **result.message.kwargs()
    )


async def _details(click: Click) -> None:
    """Details: the whole answer (workload, memory, every option's layout, reasons and
    caveats), added under the short one: to the clicker on an ephemeral answer, in the thread
    of a public one."""
    ephemeral = bool(_container(click.body).get("is_ephemeral"))
    result = await answer(
        click.services, click.value, top=click.top, ephemeral=ephemeral, details=True
    )
    await _add(click, result.message)


async def _watch(click: Click) -> None:
    """Watch this option's price: routed to the alerts seam (once per click burst)."""
    if not await claim_click(click.services.redis, click.body, click.action, click.user):
        return
    query, offer_key = decode_watch_value(click.value)
    await watches.handle_watch_button(
        query=query,
        offer_key=offer_key,
        context=click.context,
        respond=click.respond,
        services=click.services,
    )


async def _launch(click: Click) -> None:
    """Launch files: the option's task.yaml and framework config, shown only to the clicker on
    an ephemeral answer and in the thread of a public one (the answer itself stays)."""
    await _add(click, await launch_message(click.services, click.value))


async def _add(click: Click, message: Message) -> None:
    """A new message under the clicked one, leaving it in place: ephemeral to the clicker on
    an ephemeral answer, in the thread of a public one."""
    container = _container(click.body)
    if container.get("is_ephemeral") or not container.get("channel_id"):
        await click.respond(response_type="ephemeral", replace_original=False, **message.kwargs())
        return
    posted = click.body.get("message") or {}
    thread_ts = posted.get("thread_ts") or container.get("message_ts")
    await click.client.chat_postMessage(
        channel=container["channel_id"], thread_ts=thread_ts, **message.kwargs()
    )


#: What each button does after its ack.
_WORK: dict[str, Callable[[Click], Awaitable[None]]] = {
    ACTION_MORE: _refine,
    ACTION_SPOT_ONLY: _refine,
    ACTION_ON_DEMAND_ONLY: _refine,
    ACTION_POST: _post,
    ACTION_WATCH: _watch,
    ACTION_LAUNCH: _launch,
    ACTION_DETAILS: _details,
}

#: The action ids :func:`on_click` handles (the app routes exactly these to it).
ACTIONS = tuple(_WORK)
