"""Server limits (issue #18 item 7): a slow body is cut off, and a client that hangs up
mid-body is one INFO line (no traceback). The app runs under uvicorn with
:func:`bot.connections.uvicorn_config`, as ``gpufit serve`` runs it (its connection limits:
``test_connections.py``)."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator

import pytest
from pydantic import SecretStr

from bot.app import build_app
from bot.connections import uvicorn_config
from bot.server import EVENTS_PATH, build_asgi
from bot.verify import SignatureVerifier
from tests.asgi_server import free_port, started
from tests.bot.slack_requests import FORM, SECRET, command_body, signed_headers
from tests.fake_slack import FakeSlack
from tests.reliability.conftest import app_services

BODY_TIMEOUT_S = 0.5  # the route's, shortened for the test


@pytest.fixture
async def port(fake_slack: FakeSlack, redis_url: str) -> AsyncIterator[int]:
    settings, services = app_services(fake_slack, redis_url)
    redis = services.redis
    asgi = build_asgi(
        services,
        build_app(settings, services),
        verifier=SignatureVerifier(SecretStr(SECRET)),
        body_timeout_s=BODY_TIMEOUT_S,
    )
    config = uvicorn_config(asgi, host="127.0.0.1", port=free_port())
    import uvicorn

    server = uvicorn.Server(config)
    task = await started(server)
    try:
        yield config.port
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 30)
        await redis.aclose()


def _head(body: str) -> bytes:
    headers = signed_headers(body, content_type=FORM)
    lines = [f"POST {EVENTS_PATH} HTTP/1.1", "Host: 127.0.0.1", f"Content-Length: {len(body)}"]
    lines += [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


async def test_a_trickled_body_is_cut_off_with_408(port: int, fake_slack: FakeSlack) -> None:
    body = command_body("13B lora 1 day", response_url=fake_slack.hook_url("slow"))
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(_head(body) + body[:10].encode())
    await writer.drain()
    start = time.monotonic()
    status = await asyncio.wait_for(reader.readline(), BODY_TIMEOUT_S + 10)
    waited = time.monotonic() - start
    writer.close()
    assert status.startswith(b"HTTP/1.1 408"), status
    assert BODY_TIMEOUT_S * 0.8 <= waited < BODY_TIMEOUT_S + 5
    assert fake_slack.calls() == []


async def test_a_disconnect_mid_body_is_one_info_line(
    port: int, fake_slack: FakeSlack, caplog: pytest.LogCaptureFixture
) -> None:
    body = command_body("13B lora 1 day", response_url=fake_slack.hook_url("gone"))
    with caplog.at_level(logging.DEBUG):
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(_head(body) + body[:10].encode())
        await writer.drain()
        await asyncio.sleep(0.1)
        writer.close()
        await asyncio.sleep(0.5)
    mine = [r for r in caplog.records if "disconnected" in r.getMessage()]
    assert [r.levelno for r in mine] == [logging.INFO]
    assert [r for r in caplog.records if r.exc_info or r.levelno >= logging.WARNING] == []
    assert fake_slack.calls() == []
