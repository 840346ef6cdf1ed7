"""``@gpufit …`` in a channel: answered in the thread; follow-ups there refine the question."""

from __future__ import annotations

from typing import Any

import redis.asyncio as aioredis
from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.web.async_client import AsyncWebClient

from bot.listeners.answers import answer, slack_text
from bot.listeners.errors import reported
from bot.render.blocks import render_help
from bot.services import Services

__all__ = ["THREAD_TTL_S", "on_app_mention", "thread_key"]

#: How long a thread remembers its question for follow-ups.
THREAD_TTL_S = 7 * 24 * 3600  # ours: a week covers a planning discussion


def thread_key(team_id: str, channel: str, thread_ts: str) -> str:
    return f"gpufit:thread:{team_id}:{channel}:{thread_ts}"


async def _previous(redis: aioredis.Redis, key: str) -> str | None:
    value = await redis.get(key)
    if isinstance(value, bytes):
        return value.decode()
    return value if isinstance(value, str) else None


async def on_app_mention(
    event: dict[str, Any],
    body: dict[str, Any],
    context: AsyncBoltContext,
    client: AsyncWebClient,
    services: Services,
    top: int,
) -> None:
    """Reply in the mention's thread (or start one under it), reading budget and workload
    from the message; with a question already asked in the thread, refine that one.

    Events are acknowledged when this returns, so the reply is posted after the ack.
    """
    services.background.spawn(
        _reply(event, body, context.team_id, client, services, top),
        name="gpufit-mention",
    )


async def _reply(
    event: dict[str, Any],
    body: dict[str, Any],
    team_id: str | None,
    client: AsyncWebClient,
    services: Services,
    top: int,
) -> None:
    async with reported(body, None, client):
        channel = event["channel"]
        thread_ts = event.get("thread_ts") or event["ts"]
        text = slack_text(event.get("text") or "")
        if text.lower() in ("", "help"):
            await client.chat_postMessage(
                channel=channel, thread_ts=thread_ts, **render_help().kwargs()
            )
            return
        key = thread_key(body.get("team_id") or team_id or "", channel, thread_ts)
        previous = await _previous(services.redis, key)
        if previous is None:
            result = await answer(services, text, top=top, ephemeral=False)
        else:
            result = await answer(services, previous, follow_up=text, top=top, ephemeral=False)
        # Remember the question before replying: a follow-up may arrive as soon as the reply
        # shows.
        await services.redis.set(key, result.query, ex=THREAD_TTL_S)
        await client.chat_postMessage(
            channel=channel, thread_ts=thread_ts, **result.message.kwargs()
        )
