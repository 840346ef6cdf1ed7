"""A fake Slack Web API: a real HTTP server on loopback that records what the bot sent.

* ``POST /api/<method>`` answers like Slack: ``auth.test`` with a bot identity,
  ``chat.postMessage`` with a ``ts``, anything else ``{"ok": true}``; a call without a bot
  token gets ``invalid_auth``.
* ``POST /hooks/<name>`` is a ``response_url`` sink (point payloads' ``response_url`` at
  :meth:`FakeSlack.hook_url`); it answers ``ok``.
* :meth:`FakeSlack.fail_next` scripts the next N answers of a method: HTTP 429 with
  ``Retry-After``, or an error code such as ``channel_not_found``.
* Socket Mode: ``apps.connections.open`` called with an app-level token (``xapp-``) answers
  with :attr:`FakeSlack.socket_url`, a real WebSocket server on loopback (aiohttp, on its own
  thread and event loop). Each connection is greeted with ``hello``;
  :meth:`FakeSlack.socket_send` pushes an envelope to the newest connection and every frame
  the app sends back (the acks) is recorded as a ``"socket"`` call
  (:meth:`FakeSlack.wait_for_ack`).
* Every message it receives (posts, updates, hook posts, ack payloads) is checked against
  Block Kit's limits with slack_sdk's own block models plus the limits those do not check
  (50 blocks, 2000-char fields, a ~12k text budget, a ``text`` fallback). Problems land in
  :attr:`FakeSlack.violations`; the ``fake_slack`` fixture fails the test on any.

The checks here deliberately do not reuse ``bot.render.limits``: the fake is the second
opinion.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

import pytest
from aiohttp import WSMsgType, web
from slack_sdk.errors import SlackObjectFormationError
from slack_sdk.models.blocks import Block

__all__ = [
    "APP_ID",
    "BOT_ID",
    "BOT_USER_ID",
    "TEAM_ID",
    "Call",
    "FakeSlack",
    "message_problems",
]

TEAM_ID = "T0FAKE"
BOT_USER_ID = "U0GPUFIT"
BOT_ID = "B0GPUFIT"
APP_ID = "A0GPUFIT"

MESSAGE_METHODS = {"chat.postMessage", "chat.postEphemeral", "chat.update", "chat.scheduleMessage"}


@dataclass(frozen=True)
class Call:
    """One request the fake received."""

    method: str  # the API method ("chat.postMessage"), or "hook:<name>" for a response_url
    body: dict[str, Any]
    headers: dict[str, str]
    at: float


@dataclass
class _Script:
    status: int
    error: str
    retry_after: int | None
    #: Seconds to wait before answering a call that succeeds (a slow Slack: the post lands,
    #: but a client that gave up never sees its answer).
    delay_s: float = 0.0


def message_problems(body: dict[str, Any]) -> list[str]:
    """Block Kit limit problems of one message body (independent of gpufit's guard)."""
    problems: list[str] = []
    text = body.get("text")
    if not isinstance(text, str) or not text.strip():
        problems.append("no top-level text fallback")
    blocks = body.get("blocks") or []
    if isinstance(blocks, str):
        blocks = json.loads(blocks)
    if len(blocks) > 50:
        problems.append(f"{len(blocks)} blocks (max 50)")
    try:
        for parsed in Block.parse_all(blocks):
            parsed.to_dict()  # slack_sdk validates on to_dict()
    except SlackObjectFormationError as exc:
        problems.append(f"slack_sdk: {exc}")
    size = 0
    for block in blocks:
        for item in block.get("fields") or []:
            if len(item.get("text", "")) > 2000:
                problems.append("section field over 2000 chars")
        size += len(json.dumps(block, ensure_ascii=False))
    if size > 16_000:  # serialized JSON, so generous: Slack's ~13k counts text only
        problems.append(f"blocks too long ({size} chars of JSON)")
    return problems


class _SocketModeServer:
    """Slack's Socket Mode endpoint: ``ws://127.0.0.1:<port>/link`` on its own thread."""

    def __init__(self, on_frame: Any) -> None:
        self._on_frame = on_frame
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._sockets: list[web.WebSocketResponse] = []
        self._runner: web.AppRunner | None = None
        self.url = ""

    def start(self) -> None:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(timeout=10)

    async def _start(self) -> None:
        app = web.Application()
        app.router.add_get("/link", self._link)
        self._runner = web.AppRunner(app, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        host, port = self._runner.addresses[0][:2]
        self.url = f"ws://{host}:{port}/link"

    async def _link(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()  # autoping: answers the client's pings with pongs
        await ws.prepare(request)
        self._sockets.append(ws)
        try:
            await ws.send_json(
                {
                    "type": "hello",
                    "num_connections": len(self._sockets),
                    "debug_info": {
                        "host": "applink-fake",
                        "build_number": 1,
                        "approximate_connection_time": 18060,
                    },
                    "connection_info": {"app_id": APP_ID},
                }
            )
            async for frame in ws:
                if frame.type == WSMsgType.TEXT:
                    self._on_frame(frame.data)
        finally:
            self._sockets.remove(ws)
        return ws

    async def _send(self, envelope: dict[str, Any], within_s: float) -> None:
        deadline = time.monotonic() + within_s
        while not self._sockets:
            if time.monotonic() > deadline:
                raise AssertionError("no Socket Mode connection to send an envelope to")
            await asyncio.sleep(0.02)
        await self._sockets[-1].send_str(json.dumps(envelope))

    async def send(self, envelope: dict[str, Any], within_s: float) -> None:
        """Send from any event loop (the caller's waits without blocking)."""
        future = asyncio.run_coroutine_threadsafe(self._send(envelope, within_s), self._loop)
        await asyncio.wrap_future(future)

    def connections(self) -> int:
        return len(self._sockets)

    async def _stop(self) -> None:
        for ws in list(self._sockets):
            await ws.close(code=1001, message=b"server shutting down")
        if self._runner is not None:
            await self._runner.cleanup()

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(timeout=10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        self._loop.close()


class FakeSlack:
    """Start with :meth:`start` (or as a context manager); stop with :meth:`stop`."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: list[Call] = []
        self._scripts: dict[str, deque[_Script]] = {}
        self._ts = 1_700_000_000_000_000
        self._socket: _SocketModeServer | None = None
        #: Every message posted (``chat.postMessage``), as conversations.replies returns it.
        self._posted: list[dict[str, Any]] = []
        self.violations: list[str] = []
        #: ``users.info`` answers: user id → IANA time zone (unknown users: user_not_found).
        self.user_zones: dict[str, str] = {}
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_GET(self) -> None:  # slack_sdk reads (conversations.replies) with GET
                path, _, query = self.path.partition("?")
                self._reply(*fake._answer(path, dict(self.headers), query))  # a query is a form

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length).decode()
                self._reply(*fake._answer(self.path, dict(self.headers), raw))

            def _reply(self, status: int, headers: dict[str, str], payload: str) -> None:
                data = payload.encode()
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(data)  # a client that timed out (slow_next) is gone

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    # ------------------------------------------------------------- lifecycle

    def start(self) -> FakeSlack:
        self._thread.start()
        return self

    def stop(self) -> None:
        with self._lock:
            socket, self._socket = self._socket, None
        if socket is not None:
            socket.stop()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeSlack:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def api_url(self) -> str:
        return f"{self.base_url}/api/"

    def hook_url(self, name: str = "cmd") -> str:
        return f"{self.base_url}/hooks/{name}"

    # ------------------------------------------------------------- Socket Mode

    def _socket_server(self) -> _SocketModeServer:
        with self._lock:
            if self._socket is None:
                self._socket = _SocketModeServer(self._record_frame)
                self._socket.start()
            return self._socket

    @property
    def socket_url(self) -> str:
        """The WebSocket URL ``apps.connections.open`` hands out (started on first use)."""
        return self._socket_server().url

    def socket_connections(self) -> int:
        """How many Socket Mode connections are open now."""
        with self._lock:
            socket = self._socket
        return socket.connections() if socket is not None else 0

    async def socket_send(self, envelope: dict[str, Any], *, within_s: float = 10.0) -> None:
        """Push an envelope to the newest Socket Mode connection (waiting for one)."""
        await self._socket_server().send(envelope, within_s)

    async def wait_for_ack(self, envelope_id: str, *, within_s: float = 10.0) -> Call:
        """Wait until the app acknowledged ``envelope_id`` on the socket; the ack frame."""
        deadline = time.monotonic() + within_s
        while True:
            for call in self.calls("socket"):
                if call.body.get("envelope_id") == envelope_id:
                    return call
            if time.monotonic() > deadline:
                seen = [c.body for c in self.calls("socket")]
                raise AssertionError(f"no ack for envelope {envelope_id}; socket frames: {seen}")
            await asyncio.sleep(0.02)

    def _record_frame(self, raw: str) -> None:
        body = json.loads(raw)
        with self._lock:
            self._calls.append(Call("socket", body, {}, time.monotonic()))
        payload = body.get("payload")
        if isinstance(payload, dict) and ("text" in payload or "blocks" in payload):
            for problem in message_problems(payload):
                self.violations.append(f"socket ack: {problem}")

    # ------------------------------------------------------------- scripting

    def fail_next(
        self,
        method: str,
        times: int = 1,
        *,
        status: int = 429,
        error: str = "ratelimited",
        retry_after: int | None = 1,
    ) -> None:
        """Answer the next ``times`` calls of ``method`` with an error (429 by default)."""
        with self._lock:
            queue = self._scripts.setdefault(method, deque())
            for _ in range(times):
                queue.append(_Script(status, error, retry_after if status == 429 else None))

    def slow_next(self, method: str, times: int = 1, *, delay_s: float) -> None:
        """Do the next ``times`` calls of ``method`` at once but answer them ``delay_s`` later:
        a message posted this way is in its thread even when the client timed out waiting."""
        with self._lock:
            queue = self._scripts.setdefault(method, deque())
            for _ in range(times):
                queue.append(_Script(200, "", None, delay_s))

    def thread(self, channel: str, thread_ts: str) -> list[dict[str, Any]]:
        """The messages posted in the thread of ``thread_ts`` in ``channel``, oldest first."""
        with self._lock:
            return [
                m
                for m in self._posted
                if m["channel"] == channel and thread_ts in (m["ts"], m.get("thread_ts"))
            ]

    # ------------------------------------------------------------- inspection

    def calls(self, method: str | None = None) -> list[Call]:
        """Every call received (of ``method``; ``"hook"`` matches every response_url post)."""
        with self._lock:
            calls = list(self._calls)
        if method is None:
            return calls
        if method == "hook":
            return [c for c in calls if c.method.startswith("hook:")]
        return [c for c in calls if c.method == method]

    def messages(self) -> list[Call]:
        """Calls that carried a message (API posts and response_url posts)."""
        return [
            c for c in self.calls() if c.method in MESSAGE_METHODS or c.method.startswith("hook:")
        ]

    async def wait_for(self, method: str, count: int = 1, *, within_s: float = 10.0) -> list[Call]:
        """Wait (without blocking the event loop) until ``count`` calls of ``method`` arrived."""
        deadline = time.monotonic() + within_s
        while True:
            found = self.calls(method)
            if len(found) >= count:
                return found
            if time.monotonic() > deadline:
                seen = [c.method for c in self.calls()]
                raise AssertionError(f"expected {count} {method} call(s); saw {seen}")
            await asyncio.sleep(0.02)

    # ------------------------------------------------------------- answering

    def _record(self, method: str, headers: dict[str, str], raw: str) -> dict[str, Any]:
        body = _parse(headers, raw)
        with self._lock:
            self._calls.append(Call(method, body, headers, time.monotonic()))
        if method in MESSAGE_METHODS or (
            method.startswith("hook:") and not body.get("delete_original")
        ):
            for problem in message_problems(body):
                self.violations.append(f"{method}: {problem}")
        return body

    def _answer(
        self, path: str, headers: dict[str, str], raw: str
    ) -> tuple[int, dict[str, str], str]:
        json_type = {"Content-Type": "application/json; charset=utf-8"}
        if path.startswith("/hooks/"):
            self._record("hook:" + path.removeprefix("/hooks/"), headers, raw)
            return 200, {"Content-Type": "text/html"}, "ok"
        if not path.startswith("/api/"):
            return 404, json_type, json.dumps({"ok": False, "error": "unknown_method"})
        method = path.removeprefix("/api/").split("?")[0]
        body = self._record(method, headers, raw)
        with self._lock:
            queue = self._scripts.get(method)
            script = queue.popleft() if queue else None
        if script is not None and script.delay_s:
            done = self._done(method, headers, body)  # the call takes effect at once...
            time.sleep(script.delay_s)  # ...and its answer is late (this request's own thread)
            return done
        if script is not None:
            extra = (
                {"Retry-After": str(script.retry_after)} if script.retry_after is not None else {}
            )
            return (
                script.status,
                {**json_type, **extra},
                json.dumps({"ok": False, "error": script.error}),
            )
        return self._done(method, headers, body)

    def _done(
        self, method: str, headers: dict[str, str], body: dict[str, Any]
    ) -> tuple[int, dict[str, str], str]:
        """A Web API call done as Slack does it (posts recorded; reads answered from them)."""
        json_type = {"Content-Type": "application/json; charset=utf-8"}
        auth = {k.lower(): v for k, v in headers.items()}.get("authorization", "")
        if method == "apps.connections.open":  # needs the app-level token, not the bot's
            if not auth.startswith("Bearer xapp-"):
                return 200, json_type, json.dumps({"ok": False, "error": "not_allowed_token_type"})
            return 200, json_type, json.dumps({"ok": True, "url": self.socket_url})
        if not auth.startswith("Bearer xoxb-"):
            return 200, json_type, json.dumps({"ok": False, "error": "invalid_auth"})
        if method == "auth.test":
            identity = {
                "ok": True,
                "url": "https://fake.slack.test/",
                "team": "Fake Team",
                "user": "gpufit",
                "team_id": TEAM_ID,
                "user_id": BOT_USER_ID,
                "bot_id": BOT_ID,
                "is_enterprise_install": False,
            }
            scopes = {"x-oauth-scopes": "commands,chat:write,chat:write.public,app_mentions:read"}
            return 200, {**json_type, **scopes}, json.dumps(identity)
        if method == "users.info":  # the user's IANA time zone, as Slack's user object has it
            user = str(body.get("user", ""))
            zone = self.user_zones.get(user)
            if zone is None:
                return 200, json_type, json.dumps({"ok": False, "error": "user_not_found"})
            return 200, json_type, json.dumps({"ok": True, "user": {"id": user, "tz": zone}})
        if method in ("chat.postMessage", "chat.update"):
            with self._lock:
                self._ts += 100
                ts = f"{self._ts // 1_000_000}.{self._ts % 1_000_000:06d}"
            channel = body.get("channel", "C0")
            if method == "chat.postMessage":
                with self._lock:
                    self._posted.append({**body, "channel": channel, "ts": ts, "user": BOT_USER_ID})
            return (
                200,
                json_type,
                json.dumps({"ok": True, "channel": channel, "ts": ts, "message": body}),
            )
        if method == "conversations.replies":
            found = self.thread(str(body.get("channel")), str(body.get("ts")))
            keep = str(body.get("include_all_metadata", "")).lower() in ("1", "true")
            found = [m if keep else {k: v for k, v in m.items() if k != "metadata"} for m in found]
            return 200, json_type, json.dumps({"ok": True, "messages": found})
        return 200, json_type, json.dumps({"ok": True})


def _parse(headers: dict[str, str], raw: str) -> dict[str, Any]:
    if not raw:
        return {}
    if raw.lstrip().startswith("{"):
        data: dict[str, Any] = json.loads(raw)
        return data
    form = {k: v[0] for k, v in parse_qs(raw, keep_blank_values=True).items()}
    for key in ("blocks", "attachments"):
        if key in form:
            form[key] = json.loads(form[key])
    return form


# ----------------------------------------------------------------- pytest fixtures
# Import these into a conftest (`from tests.fake_slack import clean_slack_env, fake_slack`).


@pytest.fixture(autouse=True)
def clean_slack_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No developer's real Slack settings leak into a test (Bolt reads a few itself)."""
    for name in (
        "SLACK_BOT_TOKEN",
        "SLACK_SIGNING_SECRET",
        "SLACK_APP_TOKEN",
        "SLACK_CLIENT_ID",
        "SLACK_CLIENT_SECRET",
        "SLACK_VERIFICATION_TOKEN",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SKIP_SLACK_SDK_WARNING", "1")


@pytest.fixture
def fake_slack() -> Iterator[FakeSlack]:
    """The fake Web API; the test fails if any message it received broke a Block Kit limit."""
    with FakeSlack() as fake:
        yield fake
    assert fake.violations == [], fake.violations
