"""The watch store on a real Redis: channel isolation, listing, removal, disabling, and the
transaction that claims each crossing once."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator

import pytest
import redis.asyncio as aioredis

from bot.alerts import (
    ImpossibleWatchError,
    PricePoint,
    Verdict,
    WatchNotFoundError,
    WatchStore,
    current_price,
    parse_watch,
    render_watches,
)
from bot.alerts.codec import AlertRecord, dump_watch, load_watch
from bot.alerts.evaluate import WatchState
from bot.alerts.model import Watch
from bot.alerts.store import MAX_WATCHES_PER_CHANNEL
from tests.bot.alerts_helpers import h100x8, new_client, redis, redis_server
from tests.factories import NOW, catalog

__all__ = ["redis", "redis_server"]  # fixtures used by name below

TEAM, OTHER_TEAM = "T1", "T2"
CHAN, OTHER_CHAN = "C1", "C2"


async def add(
    store: WatchStore,
    text: str = "watch 8xH100 below $20/h",
    *,
    team: str = TEAM,
    channel: str = CHAN,
    price: float | None = 25.0,
    user: str = "U1",
) -> Watch:
    spec = parse_watch(text)
    point = current_price(spec, catalog(h100x8(price)), now=NOW) if price is not None else None
    return await store.add(
        team_id=team,
        channel_id=channel,
        created_by=user,
        spec=spec,
        text=text,
        now=NOW,
        current=point,
    )


@contextlib.asynccontextmanager
async def wide_client(url: str) -> AsyncIterator[aioredis.Redis]:
    """A client whose pool holds 200 commands at once (redis-py's default pool refuses the
    101st with "Too many connections"), so every create reaches Redis."""
    client = aioredis.Redis.from_url(url, decode_responses=True, max_connections=256)
    try:
        yield client
    finally:
        await client.aclose()


def record_for(
    watch: Watch, verdict: Verdict, before: WatchState, point: PricePoint, key: str
) -> AlertRecord:
    return AlertRecord(
        key=key,
        watch_ids=(watch.id,),
        team_id=watch.team_id,
        channel_id=watch.channel_id,
        kind=verdict.value,
        text=f"{point.price_usd}",
    )


class TestCodec:
    def test_round_trip(self) -> None:
        """A stored watch reads back equal, for both forms."""
        for text in ["watch 8xH100 spot on aws in europe below $20/h daily",
                     "watch 13B full finetune 2 days under $4000"]:  # fmt: skip
            w = Watch("W1", TEAM, CHAN, "U1", NOW, parse_watch(text), text=text)
            assert load_watch(dump_watch(w)) == w


class TestChannels:
    async def test_ids_are_unique_and_listed_per_channel(self, redis: aioredis.Redis) -> None:
        """Each channel lists only its own watches, oldest first."""
        store = WatchStore(redis)
        a = await add(store)
        b = await add(store, "watch H100 spot under $2/gpu-hour")
        c = await add(store, channel=OTHER_CHAN)
        d = await add(store, team=OTHER_TEAM)
        assert len({a.id, b.id, c.id, d.id}) == 4
        assert [w.id for w in await store.list_channel(TEAM, CHAN)] == [a.id, b.id]
        assert [w.id for w in await store.list_channel(TEAM, OTHER_CHAN)] == [c.id]
        assert [w.id for w in await store.list_channel(OTHER_TEAM, CHAN)] == [d.id]

    async def test_unwatch_only_from_its_own_channel(self, redis: aioredis.Redis) -> None:
        """Another channel or workspace cannot remove a watch (it looks like a missing id)."""
        store = WatchStore(redis)
        w = await add(store)
        with pytest.raises(WatchNotFoundError):
            await store.remove(TEAM, OTHER_CHAN, w.id)
        with pytest.raises(WatchNotFoundError):
            await store.remove(OTHER_TEAM, CHAN, w.id)
        assert await store.get(w.id) is not None
        removed = await store.remove(TEAM, CHAN, w.id.lower())
        assert removed.id == w.id
        assert await store.list_channel(TEAM, CHAN) == []
        assert await store.all_watches() == []

    async def test_concurrent_unwatches_remove_it_once(
        self, redis: aioredis.Redis, redis_server: str
    ) -> None:
        """Issue #34: 20 concurrent unwatches of one watch (as from 20 replicas) all reported
        it removed (20 public messages); now one does and the others find no such watch."""
        w = await add(WatchStore(redis))
        replicas = [new_client(redis_server) for _ in range(20)]
        try:
            for client in replicas:
                await client.ping()  # each connected before the race starts
            results = await asyncio.gather(
                *(WatchStore(c).remove(TEAM, CHAN, w.id) for c in replicas),
                return_exceptions=True,
            )
        finally:
            for client in replicas:
                await client.aclose()
        removed = [r for r in results if isinstance(r, Watch)]
        missing = [r for r in results if isinstance(r, WatchNotFoundError)]
        assert [r.id for r in removed] == [w.id]
        assert len(missing) == 19

    async def test_unknown_id(self, redis: aioredis.Redis) -> None:
        """Removing an id that never existed says how to list the real ones."""
        with pytest.raises(WatchNotFoundError) as info:
            await WatchStore(redis).remove(TEAM, CHAN, "W999")
        assert info.value.hint is not None
        assert "/gpufit watches" in info.value.hint

    async def test_channel_limit(self, redis: aioredis.Redis) -> None:
        """A channel holds at most MAX_WATCHES_PER_CHANNEL watches."""
        store = WatchStore(redis)
        for _ in range(MAX_WATCHES_PER_CHANNEL):
            await add(store)
        with pytest.raises(ImpossibleWatchError, match="already has"):
            await add(store)
        await add(store, channel=OTHER_CHAN)  # other channels are unaffected

    async def test_concurrent_creates_never_pass_the_channel_cap(
        self, redis: aioredis.Redis, redis_server: str
    ) -> None:
        """200 concurrent creates in one channel store exactly the cap (the check and the
        write are one script; as two commands they stored 58 against a cap of 50)."""
        async with wide_client(redis_server) as client:
            store = WatchStore(client)
            results = await asyncio.gather(
                *(add(store, user=f"U{i}") for i in range(200)), return_exceptions=True
            )
        stored = [r for r in results if isinstance(r, Watch)]
        refused = [r for r in results if isinstance(r, ImpossibleWatchError)]
        assert (len(stored), len(refused)) == (
            MAX_WATCHES_PER_CHANNEL,
            200 - MAX_WATCHES_PER_CHANNEL,
        )
        assert len(await WatchStore(redis).list_channel(TEAM, CHAN)) == MAX_WATCHES_PER_CHANNEL
        assert await redis.scard("gpufit:watches:all") == MAX_WATCHES_PER_CHANNEL

    async def test_user_and_workspace_quotas_hold_under_concurrency(
        self, redis: aioredis.Redis, redis_server: str
    ) -> None:
        """One user spread over channels stops at the user's quota, many users at the
        workspace's; other workspaces are unaffected, and a removal frees a place."""
        async with wide_client(redis_server) as client:
            await self._quotas(WatchStore(client, max_per_user=30, max_per_workspace=70))

    async def _quotas(self, store: WatchStore) -> None:
        mine = await asyncio.gather(
            *(add(store, channel=f"C{i % 8}") for i in range(200)), return_exceptions=True
        )
        assert sum(isinstance(r, Watch) for r in mine) == 30
        refused = [r for r in mine if isinstance(r, ImpossibleWatchError)]
        assert {r.message for r in refused} == {"You already have 30 watches in this workspace."}
        theirs = await asyncio.gather(
            *(add(store, channel=f"C{i % 8}", user=f"V{i % 9}") for i in range(200)),
            return_exceptions=True,
        )
        assert sum(isinstance(r, Watch) for r in theirs) == 40  # 70 in all
        assert any(
            isinstance(r, ImpossibleWatchError) and "workspace already has 70" in r.message
            for r in theirs
        )
        await add(store, team=OTHER_TEAM)  # another workspace has its own quota
        first = next(r for r in mine if isinstance(r, Watch))
        await store.remove(TEAM, first.channel_id, first.id)
        await add(store, channel=first.channel_id)  # the user's freed place

    async def test_disabled_watches_are_listed_with_why(self, redis: aioredis.Redis) -> None:
        """A disabled watch stays in the listing, with its reason."""
        store = WatchStore(redis)
        w = await add(store)
        await store.disable(w.id, "channel_not_found: the bot cannot see this channel")
        listed = await store.list_channel(TEAM, CHAN)
        assert [x.disabled_reason for x in listed] == [
            "channel_not_found: the bot cannot see this channel"
        ]
        message = render_watches([(x, await store.state(x.id)) for x in listed])
        assert w.id in message.text
        assert "channel_not_found" in str(message.blocks)

    async def test_the_listing_shows_every_watch_however_long_the_labels(
        self, redis: aioredis.Redis
    ) -> None:
        """Issue #34: 50 watches with long labels listed 12; every one is listed now."""
        store = WatchStore(redis, max_per_user=1000)
        long = "watch 70B full finetune on 10B tokens " + "with seq 4096 and bf16 " * 18
        watches = [await add(store, f"{long} under ${4000 + i}") for i in range(50)]
        message = render_watches([(w, None) for w in watches])
        shown = json.dumps(message.blocks)
        assert [w.id for w in watches if f"`{w.id}`" not in shown] == []
        assert "left out" not in shown

    async def test_disabling_a_channel_stays_in_its_channel(self, redis: aioredis.Redis) -> None:
        """Disabling a channel's watches leaves other channels and workspaces alone."""
        store = WatchStore(redis)
        mine = await add(store)
        theirs = await add(store, team=OTHER_TEAM)
        next_door = await add(store, channel="C2")
        assert await store.disable_channel(TEAM, CHAN, "not_in_channel") == [mine.id]
        assert (await store.get(theirs.id)).enabled  # type: ignore[union-attr]
        assert (await store.get(next_door.id)).enabled  # type: ignore[union-attr]

    async def test_disabling_a_channel_reads_only_its_watches(self, redis: aioredis.Redis) -> None:
        """The channel's watches come from its own set: with 300 watches elsewhere, Redis
        looks up a handful of keys, not every watch (keyspace_hits counts key reads)."""
        store = WatchStore(redis, max_per_user=1000, max_per_workspace=1000)
        for i in range(300):
            await add(store, channel=f"C{i % 6 + 10}")
        mine = [await add(store) for _ in range(2)]
        before = (await redis.info("stats"))["keyspace_hits"]
        assert await store.disable_channel(TEAM, CHAN, "is_archived") == [w.id for w in mine]
        hits = (await redis.info("stats"))["keyspace_hits"] - before
        assert hits < 20, hits


class TestInitialState:
    async def test_armed_when_above(self, redis: aioredis.Redis) -> None:
        """A watch created above its threshold is armed."""
        store = WatchStore(redis)
        w = await add(store, price=25.0)
        assert (await store.state(w.id)) == WatchState(armed=True, last_price_usd=25.0)

    async def test_already_below_counts_as_alerted(self, redis: aioredis.Redis) -> None:
        """A watch created below its threshold waits for a recovery (the reply said so)."""
        store = WatchStore(redis)
        w = await add(store, price=18.0)
        state = await store.state(w.id)
        assert state is not None
        assert not state.armed


class TestObserve:
    async def test_crossing_claims_one_alert(self, redis: aioredis.Redis) -> None:
        """A crossing claims one alert key naming the watch, crossing and offer."""
        store = WatchStore(redis)
        w = await add(store)
        point = current_price(w.spec, catalog(h100x8(19.0)), now=NOW)
        ev = await store.observe(w, point, render=record_for)
        assert ev.verdict is Verdict.CROSSED
        assert ev.alert is not None
        assert ev.alert.startswith(f"gpufit:alert:{w.id}:1:lambda/gpu_8x_h100_sxm5/")
        again = await store.observe(w, point, render=record_for)
        assert (again.verdict, again.alert) == (Verdict.NONE, None)

    async def test_concurrent_replicas_claim_once(self, redis_server: str) -> None:
        """Ten replicas (separate connections) observing the same crossing at once claim it once."""
        clients = [new_client(redis_server) for _ in range(10)]
        try:
            await clients[0].flushdb()
            w = await add(WatchStore(clients[0]))
            point = current_price(w.spec, catalog(h100x8(19.0)), now=NOW)
            results = await asyncio.gather(
                *(WatchStore(c).observe(w, point, render=record_for) for c in clients)
            )
            claimed = [r.alert for r in results if r.alert is not None]
            assert len(claimed) == 1
            assert sorted(r.verdict.value for r in results).count("crossed") == 1
            assert len(await clients[0].keys("gpufit:alert:*")) == 1
        finally:
            for c in clients:
                await c.aclose()

    async def test_removed_watch_is_not_evaluated(self, redis: aioredis.Redis) -> None:
        """A watch removed between listing and evaluation claims nothing."""
        store = WatchStore(redis)
        w = await add(store)
        await store.remove(TEAM, CHAN, w.id)
        point = current_price(w.spec, catalog(h100x8(19.0)), now=NOW)
        ev = await store.observe(w, point, render=record_for)
        assert ev.alert is None


class TestBytesClient:
    async def test_works_without_decode_responses(self, redis_server: str) -> None:
        """The store works on a client that returns bytes (as the Slack app's does)."""
        client = aioredis.Redis.from_url(redis_server)
        try:
            await client.flushdb()
            store = WatchStore(client)
            w = await add(store)
            assert [x.id for x in await store.list_channel(TEAM, CHAN)] == [w.id]
            assert [x.id for x in await store.all_watches()] == [w.id]
            assert (await store.state(w.id)) is not None
            point = current_price(w.spec, catalog(h100x8(19.0)), now=NOW)
            assert (await store.observe(w, point, render=record_for)).alert is not None
            await store.remove(TEAM, CHAN, w.id)
        finally:
            await client.aclose()
