"""Hostile connections (issue #34, item 1): idle sockets, trickled headers and socket floods
never lock out a signed Slack request or the probes. The app runs under uvicorn with
:func:`bot.connections.uvicorn_config`, as ``gpufit serve`` runs it, and the probes on their
own listener (:func:`bot.connections.probe_listener`).

Before the fix, 260 idle sockets made every request (``/healthz`` included) answer 503, and a
client trickling its headers stayed connected indefinitely."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

import httpx
import uvicorn
from pydantic import SecretStr

from bot.app import build_app
from bot.connections import (
    HEADER_TIMEOUT_S,
    LIMIT_CONCURRENCY,
    MAX_CONNECTIONS,
    MAX_HEADER_BYTES,
    ConnectionLimits,
    probe_listener,
    uvicorn_config,
)
from bot.server import EVENTS_PATH, build_asgi
from bot.settings import KEEP_ALIVE_S
from bot.verify import SignatureVerifier
from tests.asgi_server import free_port, started
from tests.bot.slack_requests import FORM, SECRET, command_body, signed_headers
from tests.fake_slack import FakeSlack
from tests.reliability.conftest import app_services, command_answer, post_command

#: Sockets opened against the public port: over its cap of MAX_CONNECTIONS (the issue's 260).
IDLE_SOCKETS = MAX_CONNECTIONS + 44
#: Sockets opened in the flood (one by one, never closed by the client) in the FD-pressure test.
FLOOD_SOCKETS = 2_000
SHORT = ConnectionLimits(header_timeout_s=0.5, max_connections=MAX_CONNECTIONS)


@dataclass(frozen=True)
class Listeners:
    public: uvicorn.Server
    port: int
    probe_port: int

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def open_connections(self) -> int:
        """Connections the public listener holds that are not closing."""
        return sum(1 for c in self.public.server_state.connections if not c.transport.is_closing())  # type: ignore[attr-defined]


@asynccontextmanager
async def listening(
    fake: FakeSlack, redis_url: str, limits: ConnectionLimits, *, keep_alive_s: int = KEEP_ALIVE_S
) -> AsyncIterator[Listeners]:
    settings, services = app_services(fake, redis_url)
    redis = services.redis
    asgi = build_asgi(
        services, build_app(settings, services), verifier=SignatureVerifier(SecretStr(SECRET))
    )
    config = uvicorn_config(
        asgi, host="127.0.0.1", port=free_port(), keep_alive_s=keep_alive_s, limits=limits
    )
    server = uvicorn.Server(config)
    task = await started(server)
    probe_port = free_port()
    try:
        async with probe_listener(build_asgi(services, None), host="127.0.0.1", port=probe_port):
            yield Listeners(server, config.port, probe_port)
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 30)
        await redis.aclose()


async def _open(port: int, count: int) -> list[asyncio.StreamWriter]:
    writers = []
    for _ in range(count):
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        writers.append(writer)
    return writers


def _close(writers: list[asyncio.StreamWriter]) -> None:
    for writer in writers:
        writer.close()


async def _closed_by_server(reader: asyncio.StreamReader, within_s: float) -> float:
    """Seconds until the server closed the connection (EOF, or a reset)."""
    start = time.monotonic()
    try:
        while await asyncio.wait_for(reader.read(1024), within_s):
            pass
    except ConnectionResetError:
        pass
    return time.monotonic() - start


def test_the_listeners_run_with_uvicorns_real_limits() -> None:
    """The real settings: h11 with our protocol, uvicorn's cap as a backstop above ours, the
    keep-alive longer than the 60 s proxies, the header size limit."""
    from starlette.applications import Starlette

    config = uvicorn_config(Starlette(), host="127.0.0.1", port=0)
    config.load()
    protocol = config.http_protocol_class
    assert ConnectionLimits(HEADER_TIMEOUT_S, MAX_CONNECTIONS) == protocol.LIMITS  # type: ignore[attr-defined]
    assert config.limit_concurrency == LIMIT_CONCURRENCY > MAX_CONNECTIONS
    assert config.timeout_keep_alive == KEEP_ALIVE_S > 60
    assert config.h11_max_incomplete_event_size == MAX_HEADER_BYTES


async def test_idle_sockets_over_the_cap_never_block_a_command_or_the_probes(
    fake_slack: FakeSlack, redis_url: str
) -> None:
    async with listening(fake_slack, redis_url, ConnectionLimits()) as app:
        idle = await _open(app.port, IDLE_SOCKETS)
        probe_idle = await _open(app.probe_port, 40)  # over the probe listener's own cap too
        try:
            await asyncio.sleep(0.2)
            assert app.open_connections() <= MAX_CONNECTIONS
            async with httpx.AsyncClient(timeout=10) as http:
                health = await http.get(app.base_url + "/healthz")
                live = await http.get(f"http://127.0.0.1:{app.probe_port}/healthz")
                ready = await http.get(f"http://127.0.0.1:{app.probe_port}/readyz")
                response = await post_command(
                    http, app.base_url, "13B lora 1 day", response_url=fake_slack.hook_url("c")
                )
                answer = await command_answer(fake_slack, response, "c")
        finally:
            _close(idle + probe_idle)
    assert (health.status_code, live.status_code) == (200, 200)
    assert ready.status_code == 200, ready.text
    assert "lora" in answer.lower() or "$" in answer


async def test_a_socket_flood_keeps_the_servers_connections_bounded(
    fake_slack: FakeSlack, redis_url: str
) -> None:
    """FD pressure: 2,000 sockets opened and never closed by the client. The server keeps at
    most its cap (so at most that many descriptors), and still answers."""
    async with listening(fake_slack, redis_url, ConnectionLimits()) as app:
        flood = await _open(app.port, FLOOD_SOCKETS)
        try:
            await asyncio.sleep(0.3)
            held = app.open_connections()
            async with httpx.AsyncClient(timeout=10) as http:
                health = await http.get(app.base_url + "/healthz")
        finally:
            _close(flood)
    assert held <= MAX_CONNECTIONS
    assert health.status_code == 200


async def test_trickled_headers_are_cut_off_at_the_header_deadline(
    fake_slack: FakeSlack, redis_url: str
) -> None:
    """50 clients send a header byte every 0.1 s: each byte would reset a per-read timeout,
    but the head's deadline runs from its first byte."""
    async with listening(fake_slack, redis_url, SHORT) as app:
        pairs = [await asyncio.open_connection("127.0.0.1", app.port) for _ in range(50)]

        async def trickle(writer: asyncio.StreamWriter) -> None:
            for byte in b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 200:
                if writer.is_closing():
                    return
                writer.write(bytes([byte]))
                await asyncio.sleep(0.1)

        trickles = [asyncio.create_task(trickle(w)) for _, w in pairs]
        waited = await asyncio.gather(*(_closed_by_server(r, 10) for r, _ in pairs))
        for task in trickles:
            task.cancel()
        _close([w for _, w in pairs])
    assert max(waited) < SHORT.header_timeout_s + 1.5, waited


async def test_a_silent_socket_is_closed_and_a_keep_alive_one_after_its_timeout(
    fake_slack: FakeSlack, redis_url: str
) -> None:
    async with listening(fake_slack, redis_url, SHORT, keep_alive_s=1) as app:
        silent_r, silent_w = await asyncio.open_connection("127.0.0.1", app.port)
        used_r, used_w = await asyncio.open_connection("127.0.0.1", app.port)
        used_w.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        status = await asyncio.wait_for(used_r.readline(), 5)
        silent_s, used_s = await asyncio.gather(
            _closed_by_server(silent_r, 10), _closed_by_server(used_r, 10)
        )
        _close([silent_w, used_w])
    assert status.startswith(b"HTTP/1.1 200")
    assert silent_s < SHORT.header_timeout_s + 1
    # The keep-alive connection outlives the header deadline: only keep-alive closes it.
    assert SHORT.header_timeout_s < used_s < 1 + 1.5


async def test_shedding_closes_idle_connections_not_requests_in_flight(
    fake_slack: FakeSlack, redis_url: str
) -> None:
    """At the cap, a new connection sheds the longest-idle one; a signed request whose body is
    still arriving is in flight and is kept."""
    cap = ConnectionLimits(header_timeout_s=5, max_connections=4)
    body = command_body("help", response_url=fake_slack.hook_url("busy"))
    headers = signed_headers(body, content_type=FORM)
    head = [f"POST {EVENTS_PATH} HTTP/1.1", "Host: x", f"Content-Length: {len(body)}"]
    head += [f"{k}: {v}" for k, v in headers.items()]
    async with listening(fake_slack, redis_url, cap) as app:
        busy_r, busy_w = await asyncio.open_connection("127.0.0.1", app.port)
        busy_w.write(("\r\n".join(head) + "\r\n\r\n").encode())
        await asyncio.sleep(0.2)
        idle = [await asyncio.open_connection("127.0.0.1", app.port) for _ in range(3)]
        await asyncio.sleep(0.1)
        _, newest = await asyncio.open_connection("127.0.0.1", app.port)  # the 5th: one goes
        oldest_idle_closed = await _closed_by_server(idle[0][0], 2)
        busy_w.write(body.encode())
        status = await asyncio.wait_for(busy_r.readline(), 5)
        _close([busy_w, newest] + [w for _, w in idle])
    assert oldest_idle_closed < 1
    assert status.startswith(b"HTTP/1.1 200"), status  # served, not shed
