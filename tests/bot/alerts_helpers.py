"""Real resources for the alert tests: Redis (``tests.redis_server``) and a fake Slack Web API.

Import the fixtures explicitly (``from tests.bot.alerts_helpers import redis, slack``); they
are not in ``conftest.py`` on purpose. The fake Slack is a real aiohttp server on 127.0.0.1
that records every call and answers from a FIFO of scripted replies (429 with Retry-After,
``channel_not_found``, a 500…) or per-channel errors before falling back to ``ok``. Unlike
``tests.fake_slack.FakeSlack`` (threaded, FIFO per method) it runs on the test's own event
loop and can fail one channel only; it borrows that module's Block Kit second opinion
(``message_problems``) and fails the test on any violation.
"""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

import pytest
import redis.asyncio as aioredis
from aiohttp import web
from slack_sdk.web.async_client import AsyncWebClient

from recommender import Catalog, Offer
from tests.factories import catalog, offer
from tests.fake_slack import message_problems
from tests.redis_server import redis_server

__all__ = ["ChangingFeed", "FakeSlack", "h100x8", "new_client", "redis", "redis_server", "slack"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
async def redis(redis_server: str) -> AsyncIterator[aioredis.Redis]:
    """A client on an emptied database (each test starts from nothing)."""
    client = aioredis.Redis.from_url(redis_server, decode_responses=True)
    await client.flushdb()
    yield client
    await client.aclose()


def new_client(url: str) -> aioredis.Redis:
    """Another, separate client (as a second replica would have)."""
    return aioredis.Redis.from_url(url, decode_responses=True)


# ------------------------------------------------------------------ fake Slack


@dataclass
class Call:
    method: str
    body: dict[str, Any]
    at: float


@dataclass
class FakeSlack:
    """Records Web API calls; answers from scripted replies, then ``ok``."""

    calls: list[Call] = field(default_factory=list)
    #: Replies to use first, in order: (HTTP status, JSON body, headers).
    script: list[tuple[int, dict[str, Any], dict[str, str]]] = field(default_factory=list)
    #: Per-channel permanent errors: every post to that channel gets this error.
    channel_errors: dict[str, str] = field(default_factory=dict)
    #: A workspace token error (``invalid_auth``…): every call gets it, ``auth.test`` included.
    token_error: str | None = None
    url: str = ""
    #: Block Kit problems of received messages (checked by tests.fake_slack's second opinion).
    violations: list[str] = field(default_factory=list)
    #: Seconds the next ``chat.postMessage`` calls wait before answering, one per call; the
    #: message is posted (and readable in the history) before the wait, as when Slack stores
    #: a message and its answer is lost or late.
    slow_posts: list[float] = field(default_factory=list)
    #: An error every ``conversations.history`` call gets (``missing_scope``…).
    history_error: str | None = None
    _ts: int = 0

    def posts(self, channel: str | None = None) -> list[Call]:
        """Successful ``chat.postMessage`` calls (optionally to one channel)."""
        return [
            c
            for c in self.calls
            if c.method == "chat.postMessage"
            and c.body.get("_ok")
            and (channel is None or c.body.get("channel") == channel)
        ]

    def hooks(self) -> list[Call]:
        """Posts to a ``response_url`` (``respond()`` in a listener)."""
        return [c for c in self.calls if c.method.startswith("hook:")]

    def hook_url(self, name: str = "cmd") -> str:
        return self.url.replace("/api/", f"/hooks/{name}")

    def attempts(self) -> list[Call]:
        return [c for c in self.calls if c.method == "chat.postMessage"]

    def history_reads(self) -> list[Call]:
        return [c for c in self.calls if c.method == "conversations.history"]

    def auth_tests(self) -> list[Call]:
        return [c for c in self.calls if c.method == "auth.test"]

    def rate_limit(self, times: int, retry_after_s: int = 1) -> None:
        for _ in range(times):
            self.script.append(
                (429, {"ok": False, "error": "ratelimited"}, {"Retry-After": str(retry_after_s)})
            )

    def fail(self, error: str, *, status: int = 200, times: int = 1) -> None:
        for _ in range(times):
            self.script.append((status, {"ok": False, "error": error}, {}))

    async def _hook(self, request: web.Request) -> web.Response:
        body = json.loads(await request.read() or b"{}")
        self.violations += message_problems(body)
        self.calls.append(Call(f"hook:{request.match_info['name']}", body, time.monotonic()))
        return web.Response(text="ok")

    async def _handle(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        raw = await request.read()
        if request.content_type == "application/json":
            body: dict[str, Any] = json.loads(raw or b"{}")
        else:
            body = {k: v[0] for k, v in parse_qs(raw.decode()).items()}
        body = {**dict(request.query), **body}  # a GET (conversations.history) has a query
        call = Call(method, body, time.monotonic())
        self.calls.append(call)
        if self.token_error is not None:
            return web.json_response({"ok": False, "error": self.token_error})
        if method == "auth.test":  # not scripted: the worker confirms token errors with it
            return web.json_response(
                {"ok": True, "team_id": "T1", "user_id": "U0BOT", "bot_id": "B0BOT"},
                headers={"x-oauth-scopes": "commands,chat:write,chat:write.public"},
            )
        if method == "conversations.history":  # not scripted either: answered from the posts
            return self._history(body)
        if method == "chat.postMessage":
            self.violations += message_problems(body)
        channel = str(body.get("channel", ""))
        if channel in self.channel_errors:
            return web.json_response({"ok": False, "error": self.channel_errors[channel]})
        if self.script:
            status, reply, headers = self.script.pop(0)
            return web.json_response(reply, status=status, headers=headers)
        self._ts += 1
        body["_ok"] = True
        body["_ts"] = ts = f"1700000000.{self._ts:06d}"
        if method == "chat.postMessage" and self.slow_posts:
            await asyncio.sleep(self.slow_posts.pop(0))
        return web.json_response({"ok": True, "channel": channel, "ts": ts})

    def _history(self, query: dict[str, Any]) -> web.Response:
        """conversations.history: the channel's newest posts first, ``limit`` of them, with
        their ``metadata`` only when ``include_all_metadata`` is asked for (as Slack does).
        ``oldest`` is not applied: the fake's ``ts`` values are not on the worker's clock."""
        if self.history_error is not None:
            return web.json_response({"ok": False, "error": self.history_error})
        with_meta = str(query.get("include_all_metadata", "")).lower() in ("1", "true")
        messages = []
        for post in reversed(self.posts(str(query.get("channel", "")))):
            message: dict[str, Any] = {"type": "message", "ts": post.body["_ts"]}
            message["text"] = post.body.get("text", "")
            if with_meta and post.body.get("metadata"):
                message["metadata"] = post.body["metadata"]
            messages.append(message)
        limit = int(query.get("limit") or 15)
        return web.json_response({"ok": True, "messages": messages[:limit], "has_more": False})

    def client(self) -> AsyncWebClient:
        return AsyncWebClient(token="xoxb-test", base_url=self.url)


@pytest.fixture
async def slack() -> AsyncIterator[FakeSlack]:
    """A fake Slack Web API on 127.0.0.1 (real HTTP, no Slack)."""
    fake = FakeSlack()
    app = web.Application()
    app.router.add_post("/api/{method}", fake._handle)
    app.router.add_get("/api/{method}", fake._handle)
    app.router.add_post("/hooks/{name}", fake._hook)
    runner = web.AppRunner(app)
    await runner.setup()
    port = _free_port()
    site = web.TCPSite(runner, "127.0.0.1", port)
    await site.start()
    fake.url = f"http://127.0.0.1:{port}/api/"
    yield fake
    await runner.cleanup()
    assert fake.violations == [], fake.violations


# ------------------------------------------------------------------ a feed that changes


class ChangingFeed:
    """A catalog source whose prices a test sets between worker passes."""

    def __init__(self, *offers: Offer) -> None:
        self.offers: list[Offer] = list(offers)
        self.loads = 0

    def set(self, *offers: Offer) -> None:
        self.offers = list(offers)

    async def __call__(self) -> Catalog:
        self.loads += 1
        return catalog(*self.offers)


def h100x8(price: float, **overrides: Any) -> Offer:
    """An 8×H100 instance at ``price`` USD/h (on-demand on lambda unless overridden)."""
    base: dict[str, Any] = {
        "provider": "lambda",
        "instance_type": "gpu_8x_h100_sxm5",
        "region": "us-east-1",
        "price_usd_per_hour": price,
    }
    base.update(overrides)
    return offer(**base)
