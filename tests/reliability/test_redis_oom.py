"""Redis out of memory (issue #34): every write refused with ``OOM command not allowed``
(``maxmemory`` 1 byte, ``noeviction``), reads still answered. A command still gets its answer
(never the "incident" apology), a watch and a "Post to channel" click get the plain
"unavailable" notice, and a mention gets exactly one reply. When memory is back, writes work again.

The served app as ``gpufit serve`` builds it (``build_services``: the price store in Redis),
the fake Slack on loopback, a real Redis."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import httpx
import pytest
import redis.asyncio as aioredis

from bot.app import build_app
from bot.listeners import mentions
from bot.listeners.errors import UNAVAILABLE_TEXT
from bot.render.blocks import ACTION_POST
from bot.server import EVENTS_PATH, build_asgi
from bot.services import build_services
from tests.bot.slack_requests import (
    CHANNEL_ID,
    FORM,
    JSON,
    VERIFIER,
    action_body,
    mention_body,
    settings_for,
    signed_headers,
)
from tests.fake_slack import FakeSlack
from tests.reliability.conftest import command_answer, post_command, serving


@pytest.fixture
async def out_of_memory(redis_url: str) -> AsyncIterator[aioredis.Redis]:
    admin = aioredis.Redis.from_url(redis_url)
    policy = (await admin.config_get("maxmemory-policy"))["maxmemory-policy"]
    try:
        yield admin
    finally:
        await admin.config_set("maxmemory", "0")
        await admin.config_set("maxmemory-policy", policy)
        await admin.aclose()


async def test_with_redis_out_of_memory_answers_continue_and_a_mention_is_answered_once(
    fake_slack: FakeSlack, redis_url: str, out_of_memory: aioredis.Redis
) -> None:
    settings = settings_for(fake_slack, redis_url)
    services = build_services(settings)
    asgi = build_asgi(services, build_app(settings, services), verifier=VERIFIER)
    ts = "1700030000.000100"
    async with serving(asgi) as url, httpx.AsyncClient(timeout=20) as http:
        await services.catalog()  # loaded (and seeded) before memory runs out
        await out_of_memory.config_set("maxmemory-policy", "noeviction")
        await out_of_memory.config_set("maxmemory", "1")
        with pytest.raises(aioredis.ResponseError, match="maxmemory"):
            await out_of_memory.set("gpufit:probe", "x")
        asked = await post_command(
            http, url, "13B lora 1 day", response_url=fake_slack.hook_url("a")
        )
        answer = await command_answer(fake_slack, asked, "a")
        watched = await post_command(
            http, url, "watch 8xH100 below $20/h", response_url=fake_slack.hook_url("w")
        )
        watch_answer = await command_answer(fake_slack, watched, "w")
        click = action_body(ACTION_POST, "13B lora 1 day", response_url=fake_slack.hook_url("p"))
        clicked = await http.post(
            url + EVENTS_PATH, content=click, headers=signed_headers(click, content_type=FORM)
        )
        assert clicked.status_code == 200
        [posted] = await fake_slack.wait_for("hook:p")
        body = mention_body("13B lora 1 day", event_id="EvOOM", ts=ts)
        for _ in range(2):  # Slack's retry of the event too
            mentioned = await http.post(
                url + EVENTS_PATH, content=body, headers=signed_headers(body, content_type=JSON)
            )
            assert mentioned.status_code == 200
        await services.background.drain(10)
        # Another replica (which has not seen the event) gets Slack's next retry: it reads
        # the thread first and finds the reply there.
        mentions._UNQUEUED.clear()
        mentioned = await http.post(
            url + EVENTS_PATH, content=body, headers=signed_headers(body, content_type=JSON)
        )
        await services.background.drain(10)
        await asyncio.sleep(0.2)
        await out_of_memory.config_set("maxmemory", "0")
        again = await post_command(
            http, url, "watch 8xH100 below $20/h", response_url=fake_slack.hook_url("w2")
        )
        again_answer = await command_answer(fake_slack, again, "w2")
    await services.redis.aclose()
    if services.store is not None:
        await services.store.aclose()
    assert "option" in answer.lower()
    assert "incident" not in (answer + watch_answer + json.dumps(posted.body)).lower()
    assert UNAVAILABLE_TEXT.split(".")[0] in watch_answer
    replies = fake_slack.thread(CHANNEL_ID, ts)
    assert len(replies) <= 1  # at most once...
    assert len(replies) == 1, "...and not lost"
    assert fake_slack.calls("conversations.replies")
    assert "W1" in again_answer  # memory back: the watch is stored
