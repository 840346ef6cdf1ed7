"""The asker's time zone, so that "by Friday" means the end of their Friday.

Slack sends no time zone with a command or an event; ``users.info`` has the user's IANA zone
(``user.tz``, scope ``users:read``). It is asked only for questions that name a calendar day
(:func:`recommender.reads_calendar`), kept in Redis for a day, and given up on quickly:
without it, deadlines are read in UTC and the answer's note names the zone it used.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import UTC, tzinfo
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from redis.exceptions import RedisError
from slack_sdk.errors import SlackClientError

from bot.services import Services
from recommender import reads_calendar

__all__ = ["ZONE_TTL_S", "user_zone", "zone_for"]

logger = logging.getLogger(__name__)

#: How long a user's zone is kept: people rarely move, and a move shows within a day (ours).
ZONE_TTL_S = 24 * 3600
#: How long a question waits for ``users.info`` before reading its deadline in UTC: well
#: inside Slack's 3 s for the reply (ours).
LOOKUP_TIMEOUT_S = 1.0


def _key(user_id: str) -> str:
    return f"gpufit:tz:{user_id}"


def _zone(name: str) -> tzinfo | None:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return None


async def user_zone(services: Services, user_id: str | None) -> tzinfo:
    """The Slack user's time zone; UTC when there is no user, or Slack does not say in time."""
    if not user_id:
        return UTC
    try:
        cached = await services.redis.get(_key(user_id))
    except RedisError:
        cached = None
    if cached:
        name = cached.decode() if isinstance(cached, bytes) else str(cached)
        return _zone(name) or UTC
    try:
        # users.info as a form POST (Slack's Web API takes every method both ways).
        call = services.client.api_call("users.info", data={"user": user_id})
        reply = await asyncio.wait_for(call, timeout=LOOKUP_TIMEOUT_S)
        name = str((reply.get("user") or {}).get("tz") or "")
    except (TimeoutError, SlackClientError) as exc:
        logger.info("no time zone for a user (%s): deadlines in UTC", type(exc).__name__)
        return UTC
    zone = _zone(name) if name else None
    if zone is None:
        return UTC
    with contextlib.suppress(RedisError):  # not kept: the next question asks Slack again
        await services.redis.set(_key(user_id), name, ex=ZONE_TTL_S)
    return zone


async def zone_for(services: Services, text: str, user_id: str | None) -> tzinfo | None:
    """The asker's zone when ``text`` names a calendar day; ``None`` (no lookup) otherwise."""
    if not reads_calendar(text):
        return None
    return await user_zone(services, user_id)
