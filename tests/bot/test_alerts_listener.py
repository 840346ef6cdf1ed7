"""`/gpufit watch|watches|unwatch` and the "Watch price" button, answered through a real
``respond`` to the fake Slack's response_url, with watches in a real Redis."""

from __future__ import annotations

from typing import Any

import pytest
import redis.asyncio as aioredis
from slack_bolt.context.async_context import AsyncBoltContext
from slack_bolt.context.respond.async_respond import AsyncRespond

from bot.alerts import ImpossibleWatchError, WatchNotFoundError, WatchStore, WatchSyntaxError
from bot.listeners.watches import BUTTON_DROP_FRAC, handle_watch_button, handle_watch_command
from bot.services import Services, static_catalog
from bot.worker import Worker
from recommender import Catalog, UnknownGpuError
from tests.bot.alerts_helpers import ChangingFeed, FakeSlack, h100x8, redis, redis_server, slack
from tests.factories import NOW, catalog

__all__ = ["redis", "redis_server", "slack"]  # fixtures used by name below

PRICES = catalog(h100x8(25.0))


def services(redis: aioredis.Redis, slack: FakeSlack, prices: Catalog = PRICES) -> Services:
    return Services(
        redis=redis, catalog=static_catalog(prices), now=lambda: NOW, client=slack.client()
    )


#: A click's ids, as Bolt's context carries them.
CONTEXT = AsyncBoltContext(team_id="T1", channel_id="C1", user_id="U1")


async def command(
    redis: aioredis.Redis,
    slack: FakeSlack,
    text: str,
    *,
    team: str = "T1",
    channel: str = "C1",
    prices: Catalog = PRICES,
) -> dict[str, Any]:
    """Run `/gpufit <text>` through the watches seam; returns what was posted to respond()."""
    sub, _, rest = text.partition(" ")
    # The ids as Bolt's context carries them (it reads them from the payload).
    context = AsyncBoltContext(team_id=team, channel_id=channel, user_id="U1")
    before = len(slack.hooks())
    await handle_watch_command(
        sub,
        rest,
        context=context,
        respond=AsyncRespond(response_url=slack.hook_url()),
        services=services(redis, slack, prices),
    )
    [reply] = slack.hooks()[before:]
    return reply.body


class TestWatch:
    async def test_creates_and_announces_in_channel(
        self, redis: aioredis.Redis, slack: FakeSlack
    ) -> None:
        """A new watch is stored and announced in the channel with its id and today's price."""
        reply = await command(redis, slack, "watch 8xH100 below $20/h")
        assert reply["response_type"] == "in_channel"
        [w] = await WatchStore(redis).list_channel("T1", "C1")
        assert w.id in reply["text"]
        assert "$25.00/h" in reply["text"]
        assert w.created_by == "U1"

    async def test_already_below_says_so(self, redis: aioredis.Redis, slack: FakeSlack) -> None:
        """A watch whose price is already below says so instead of alerting later for nothing."""
        reply = await command(redis, slack, "watch 8xH100 below $30/h")
        assert "already there" in reply["text"]

    @pytest.mark.parametrize(
        ("text", "error"),
        [
            ("watch", WatchSyntaxError),
            ("watch 3xH100 below $20/h", ImpossibleWatchError),
            ("watch L4 below $1/h", ImpossibleWatchError),
            ("watch H900 below $2/h", UnknownGpuError),
            ("watch 8xH100 below $0/h", ImpossibleWatchError),
        ],
    )
    async def test_never_matching_watches_are_refused(
        self, redis: aioredis.Redis, slack: FakeSlack, text: str, error: type[Exception]
    ) -> None:
        """A watch that could never fire raises a GpufitError (for the error handler), unstored."""
        with pytest.raises(error):
            await command(redis, slack, text)
        assert await WatchStore(redis).all_watches() == []


class TestListAndRemove:
    async def test_each_channel_sees_only_its_watches(
        self, redis: aioredis.Redis, slack: FakeSlack
    ) -> None:
        """`watches` lists this channel's watches only, to the asker alone."""
        await command(redis, slack, "watch 8xH100 below $20/h", channel="C1")
        await command(redis, slack, "watch H100 below $2/gpu-hour", channel="C2")
        await command(redis, slack, "watch 8xH100 below $21/h", team="T2", channel="C1")
        reply = await command(redis, slack, "watches", channel="C1")
        assert reply["response_type"] == "ephemeral"
        assert "W1" in reply["text"]
        assert "W2" not in reply["text"]
        assert "W3" not in reply["text"]

    async def test_unwatch_only_here(self, redis: aioredis.Redis, slack: FakeSlack) -> None:
        """Another channel cannot remove a watch; its own channel can."""
        await command(redis, slack, "watch 8xH100 below $20/h", channel="C1")
        with pytest.raises(WatchNotFoundError):
            await command(redis, slack, "unwatch W1", channel="C2")
        with pytest.raises(WatchNotFoundError):
            await command(redis, slack, "unwatch W1", team="T2", channel="C1")
        reply = await command(redis, slack, "unwatch w1", channel="C1")
        assert "Stopped watching" in reply["text"]
        assert await WatchStore(redis).all_watches() == []

    async def test_unwatch_needs_an_id(self, redis: aioredis.Redis, slack: FakeSlack) -> None:
        """`unwatch` alone asks for the id."""
        with pytest.raises(WatchSyntaxError, match="which watch"):
            await command(redis, slack, "unwatch")

    async def test_disabled_watch_says_why(self, redis: aioredis.Redis, slack: FakeSlack) -> None:
        """After Slack says channel_not_found, `watches` shows the watch disabled, and why."""
        await command(redis, slack, "watch 8xH100 below $20/h", channel="CGONE")
        slack.channel_errors["CGONE"] = "channel_not_found"
        feed = ChangingFeed(h100x8(19.0))
        await Worker(
            redis=redis, catalog_source=feed, client_for=lambda t: slack.client()
        ).run_once()
        reply = await command(redis, slack, "watches", channel="CGONE")
        assert "disabled: channel_not_found" in str(reply["blocks"])


class TestButton:
    async def test_watch_this_price_then_alert(
        self, redis: aioredis.Redis, slack: FakeSlack
    ) -> None:
        """The button watches that offer's exact shape 10 % below today; a drop then alerts."""
        offer = h100x8(25.0)
        await handle_watch_button(
            query="13B full finetune 2 days",
            offer_key=offer.key,
            context=CONTEXT,
            respond=AsyncRespond(response_url=slack.hook_url("button")),
            services=services(redis, slack),
        )
        [w] = await WatchStore(redis).list_channel("T1", "C1")
        assert w.threshold.usd == pytest.approx(25.0 * (1 - BUTTON_DROP_FRAC))
        assert w.spec.query is not None
        assert w.spec.query.providers == frozenset({"lambda"})
        feed = ChangingFeed(h100x8(24.0), h100x8(20.0, provider="aws"))  # other provider: no
        worker = Worker(redis=redis, catalog_source=feed, client_for=lambda t: slack.client())
        await worker.run_once()
        assert slack.posts() == []
        feed.set(h100x8(22.0))
        await worker.run_once()
        assert len(slack.posts("C1")) == 1

    async def test_offer_gone(self, redis: aioredis.Redis, slack: FakeSlack) -> None:
        """A button for an offer no longer listed says so and stores nothing."""
        await handle_watch_button(
            query="q",
            offer_key="nope/none/x//od",
            context=CONTEXT,
            respond=AsyncRespond(response_url=slack.hook_url("button")),
            services=services(redis, slack),
        )
        [reply] = slack.hooks()
        assert "no longer" in reply.body["text"]
        assert await WatchStore(redis).all_watches() == []
