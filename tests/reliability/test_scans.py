"""Catalog scans of a large catalog leave the event loop free.

``prices`` and ``watch`` pass over every offer (~410 ms and ~130 ms for 200k offers). On the
event loop, 40 of them in flight held a ``help`` for 1.6 s here (20 held one 7.6 s in the
issue's run); in the scan thread (``Services.scans``), ``help`` is answered while most of
their replies are still to come. Served by uvicorn on a loopback port with the fake Slack, a
real Redis, and signed requests.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import replace

import httpx
import pytest
import redis.asyncio as aioredis

from bot.app import build_app
from bot.catalog import bundled_catalog
from bot.server import build_asgi
from bot.services import Services, build_web_client, static_catalog
from recommender import Catalog
from tests.bot.slack_requests import VERIFIER, settings_for
from tests.factories import NOW
from tests.fake_slack import FakeSlack
from tests.reliability.conftest import post_command, serving

OFFERS = 200_000
SCANS = 40
#: A ``help`` ack while the scans run. Timings swing with the machine (the scan thread shares
#: the interpreter), so the test checks order: ``help`` is answered while at least this share
#: of the scans' replies (each posted to its response_url after its own ack) is still to come.
HELP_BEFORE_SHARE = 0.5


def _large_catalog() -> Catalog:
    base = bundled_catalog()
    copies = OFFERS // len(base.offers) + 1
    offers = tuple(
        replace(o, region=f"{o.region}-{i}") for i in range(copies) for o in base.offers
    )[:OFFERS]
    return Catalog.of(offers, base.sources)


@pytest.mark.slow
class TestScans:
    async def test_help_is_answered_while_20_scans_of_a_large_catalog_run(
        self, fake_slack: FakeSlack, redis_url: str
    ) -> None:
        """40 ``prices`` and ``watch`` commands on 200k offers, then ``help``: it is answered
        while most scans' replies are still to come (on the event loop it came after all of
        them), and every scan is answered."""
        catalog = _large_catalog()
        settings = settings_for(fake_slack, redis_url)
        redis = aioredis.Redis.from_url(redis_url)
        await redis.flushdb()
        services = Services(
            redis=redis,
            catalog=static_catalog(catalog),
            now=lambda: NOW,
            client=build_web_client(settings),
        )
        texts = [
            "prices H100" if i % 2 else f"watch 8xH100 below ${10 + i}/h" for i in range(SCANS)
        ]
        try:
            app = build_app(settings, services)
            async with (
                serving(build_asgi(services, app, verifier=VERIFIER)) as url,
                httpx.AsyncClient(timeout=60) as http,
            ):
                scans = [
                    asyncio.create_task(
                        post_command(http, url, text, response_url=fake_slack.hook_url(f"s{i}"))
                    )
                    for i, text in enumerate(texts)
                ]
                await asyncio.sleep(0.1)  # the scans are under way
                started = time.monotonic()
                helped = await post_command(
                    http, url, "help", response_url=fake_slack.hook_url("h")
                )
                helped_at = time.monotonic()
                help_s = helped_at - started
                acks = await asyncio.gather(*scans)
                replies = await fake_slack.wait_for("hook", SCANS, within_s=120)
                await services.background.drain(10)
        finally:
            await redis.aclose()
        assert helped.status_code == 200
        assert helped.json()["blocks"]
        still_to_come = sum(reply.at > helped_at for reply in replies)
        assert still_to_come >= HELP_BEFORE_SHARE * SCANS, (
            f"help took {help_s:.2f} s and came after {SCANS - still_to_come} of {SCANS} scans"
        )
        assert {r.method for r in replies} == {f"hook:s{i}" for i in range(SCANS)}
        assert {r.status_code for r in acks} == {200}
