"""Buttons on an answer: more options, spot only, on-demand only, watch price, post to channel.

Each button's value is the question text (the watch button adds the offer key); nothing is
kept in ``action_id``. Buttons that start work (post, watch) are claimed in Redis per user,
message and value, so a double click does the work once.
"""

from __future__ import annotations

import hashlib
from typing import Any

import redis.asyncio as aioredis
from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.respond.async_respond import AsyncRespond
from slack_sdk.web.async_client import AsyncWebClient

from bot.listeners import watches
from bot.listeners.answers import answer
from bot.listeners.errors import reported
from bot.render.blocks import (
    ACTION_MORE,
    ACTION_ON_DEMAND_ONLY,
    ACTION_SPOT_ONLY,
    decode_watch_value,
)
from bot.render.limits import Message
from bot.services import Services

__all__ = ["CLICK_CLAIM_TTL_S", "claim_click", "on_post", "on_refine", "on_watch"]

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


async def claim_click(redis: aioredis.Redis, body: dict[str, Any], action: dict[str, Any]) -> bool:
    """Whether this click is the first of its kind (same user, message, button and value)."""
    container = _container(body)
    digest = hashlib.sha256(str(action.get("value", "")).encode()).hexdigest()[:16]
    parts = (
        str(action.get("action_id", "")),
        str((body.get("user") or {}).get("id", "")),
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


async def on_refine(
    ack: AsyncAck,
    action: dict[str, Any],
    body: dict[str, Any],
    respond: AsyncRespond,
    client: AsyncWebClient,
    services: Services,
    top: int,
) -> None:
    """More options / spot only / on-demand only: the same question, re-answered."""
    await ack()
    services.background.spawn(
        _refine(action, body, respond, client, services, top), name="gpufit-refine"
    )


async def _refine(
    action: dict[str, Any],
    body: dict[str, Any],
    respond: AsyncRespond,
    client: AsyncWebClient,
    services: Services,
    top: int,
) -> None:
    action_id = action["action_id"]
    more = action_id == ACTION_MORE
    ephemeral = bool(_container(body).get("is_ephemeral"))
    async with reported(body, respond, client):
        result = await answer(
            services,
            action.get("value") or "",
            follow_up=_REFINEMENTS[action_id] or None,
            top=min(top * MORE_FACTOR, MORE_MAX) if more else top,
            ephemeral=ephemeral,
        )
        await _deliver(body, respond, client, result.message)


async def on_post(
    ack: AsyncAck,
    action: dict[str, Any],
    body: dict[str, Any],
    respond: AsyncRespond,
    client: AsyncWebClient,
    services: Services,
    top: int,
) -> None:
    """Post the answer to the channel for everyone (once, however often it is clicked)."""
    await ack()
    services.background.spawn(
        _post(action, body, respond, client, services, top), name="gpufit-post"
    )


async def _post(
    action: dict[str, Any],
    body: dict[str, Any],
    respond: AsyncRespond,
    client: AsyncWebClient,
    services: Services,
    top: int,
) -> None:
    async with reported(body, respond, client):
        if not await claim_click(services.redis, body, action):
            return
        result = await answer(services, action.get("value") or "", top=top, ephemeral=False)
        await respond(response_type="in_channel", replace_original=False, **result.message.kwargs())


async def on_watch(
    ack: AsyncAck,
    action: dict[str, Any],
    body: dict[str, Any],
    respond: AsyncRespond,
    client: AsyncWebClient,
    services: Services,
) -> None:
    """Watch this option's price: routed to the alerts seam (once per click burst)."""
    await ack()
    services.background.spawn(_watch(action, body, respond, client, services), name="gpufit-watch")


async def _watch(
    action: dict[str, Any],
    body: dict[str, Any],
    respond: AsyncRespond,
    client: AsyncWebClient,
    services: Services,
) -> None:
    async with reported(body, respond, client):
        if not await claim_click(services.redis, body, action):
            return
        query, offer_key = decode_watch_value(action.get("value") or "")
        await watches.handle_watch_button(
            query=query, offer_key=offer_key, body=body, respond=respond, services=services
        )
