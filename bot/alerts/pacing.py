"""Per-channel pacing of Slack posts, shared by every worker replica through Redis.

``chat.postMessage`` allows about one message per second per channel, counted by Slack for the
app, whichever replica sends. Every post first reserves a slot from a next-allowed timestamp
kept in Redis and advanced by a Lua script that reads Redis's own clock (``TIME``), so replicas
with skewed clocks still share one schedule; a ``Retry-After`` blocks the channel for all.
"""

from __future__ import annotations

import redis.asyncio as aioredis

__all__ = ["POST_INTERVAL_S", "ChannelPacer"]

#: Minimum spacing of posts to one channel, all replicas together.
POST_INTERVAL_S = (
    1.0  # chat.postMessage "special" tier: ~1 msg/s per channel (api.slack.com/docs/rate-limits)
)
_RESERVE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local nxt = tonumber(redis.call('GET', KEYS[1]) or '0')
local slot = math.max(now, nxt)
redis.call('SET', KEYS[1], slot + tonumber(ARGV[1]), 'PX', tonumber(ARGV[2]))
return slot - now
"""
_BLOCK = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local nxt = tonumber(redis.call('GET', KEYS[1]) or '0')
local blocked = now + tonumber(ARGV[1])
if blocked > nxt then
  redis.call('SET', KEYS[1], blocked, 'PX', tonumber(ARGV[1]) + tonumber(ARGV[2]))
end
return blocked - now
"""


class ChannelPacer:
    """A next-allowed time per channel in Redis, shared by every replica."""

    def __init__(
        self,
        redis: aioredis.Redis,
        *,
        interval_s: float = POST_INTERVAL_S,
        prefix: str = "gpufit",
    ) -> None:
        self._r = redis
        self._interval_ms = max(1, round(interval_s * 1000))
        self._p = prefix
        self._reserve = redis.register_script(_RESERVE)
        self._block = redis.register_script(_BLOCK)

    def _key(self, team_id: str, channel_id: str) -> str:
        return f"{self._p}:pace:{team_id}:{channel_id}"

    async def reserve(self, team_id: str, channel_id: str) -> float:
        """Reserve the channel's next slot; returns seconds to wait until it."""
        wait_ms = await self._reserve(
            keys=[self._key(team_id, channel_id)],
            args=[self._interval_ms, 60_000 + self._interval_ms],
        )
        return int(wait_ms) / 1000

    async def block(self, team_id: str, channel_id: str, seconds: float) -> None:
        """No replica posts to the channel for ``seconds`` (Slack's Retry-After)."""
        await self._block(
            keys=[self._key(team_id, channel_id)],
            args=[max(1, round(seconds * 1000)), 60_000],
        )
