"""Socket Mode end to end: ``gpufit serve --socket-mode`` against the fake Slack's WebSocket.

``bot.server.serve(..., socket_mode=True)`` runs as it does in production: it opens the
connection with the app-level token (``apps.connections.open`` on the fake answers with a
``ws://127.0.0.1`` URL), receives envelopes over a real WebSocket, acks each one on the
socket, and serves ``/healthz`` and ``/readyz`` over HTTP. Everything stays on loopback.
"""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import socket
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import parse_qsl

import httpx
import pytest
from pydantic import SecretStr

from bot.server import serve
from bot.services import Services
from bot.settings import Settings
from tests.bot.slack_requests import command_body, mention_body
from tests.fake_slack import FakeSlack

APP_TOKEN = "xapp-1-A0GPUFIT-1-0123456789-socketmodetesttoken"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _envelope_id() -> str:
    return str(uuid.uuid4())


def slash_envelope(text: str, *, response_url: str) -> dict[str, Any]:
    """A ``slash_commands`` envelope: the command's form fields, as JSON."""
    return {
        "envelope_id": _envelope_id(),
        "type": "slash_commands",
        "accepts_response_payload": True,
        "payload": dict(parse_qsl(command_body(text, response_url=response_url))),
    }


def mention_envelope(
    text: str, *, event_id: str, ts: str, retry_attempt: int = 0, retry_reason: str = ""
) -> dict[str, Any]:
    """An ``events_api`` envelope carrying an ``app_mention`` event callback."""
    return {
        "envelope_id": _envelope_id(),
        "type": "events_api",
        "accepts_response_payload": False,
        "retry_attempt": retry_attempt,
        "retry_reason": retry_reason,
        "payload": json.loads(mention_body(text, event_id=event_id, ts=ts)),
    }


@pytest.fixture
def sigterm_seen() -> Iterator[list[int]]:
    """SIGTERMs raised in the test land in a list instead of ending pytest (uvicorn re-raises
    the signal for the handler it found once its shutdown is done)."""
    seen: list[int] = []

    def record(sig: int, frame: object) -> None:
        seen.append(sig)

    previous = signal.signal(signal.SIGTERM, record)
    try:
        yield seen
    finally:
        signal.signal(signal.SIGTERM, previous)


@pytest.fixture
def socket_settings(settings: Settings) -> Settings:
    """Socket Mode settings: the app-level token, no signing secret, free health and metrics
    ports."""
    return settings.model_copy(
        update={
            "slack_app_token": SecretStr(APP_TOKEN),
            "slack_signing_secret": None,
            "port": _free_port(),
            "metrics_port": _free_port(),
            "health_port": _free_port(),
        }
    )


async def _readyz(http: httpx.AsyncClient, url: str) -> httpx.Response | None:
    try:
        return await http.get(url + "/readyz")
    except httpx.TransportError:
        return None


@pytest.fixture
async def served(
    socket_settings: Settings,
    services: Services,
    sigterm_seen: list[int],
    caplog: pytest.LogCaptureFixture,
) -> AsyncIterator[str]:
    """``serve(socket_mode=True)`` running on the test loop, ready; its health base URL.

    Stopped the way production stops: SIGTERM (drain), then a second SIGTERM (stop now).
    Its start-up log is captured (``caplog``).
    """
    caplog.set_level(logging.INFO, logger="bot.server")
    task = asyncio.create_task(serve(socket_settings, services, socket_mode=True))
    url = f"http://127.0.0.1:{socket_settings.port}"
    async with httpx.AsyncClient() as http:
        for _ in range(500):
            if task.done():
                task.result()
                pytest.fail("serve() returned before it was ready")
            response = await _readyz(http, url)
            if response is not None and response.status_code == 200:
                break
            await asyncio.sleep(0.02)
        else:
            pytest.fail("serve() never became ready")
    try:
        yield url
    finally:
        if not task.done():
            signal.raise_signal(signal.SIGTERM)
            signal.raise_signal(signal.SIGTERM)
        await asyncio.wait_for(task, 15)
        current = asyncio.current_task()
        pending = [t for t in asyncio.all_tasks() if t is not current and not t.done()]
        if pending:
            await asyncio.wait(pending, timeout=10)


class TestConnection:
    async def test_the_socket_is_opened_with_the_app_token_and_readyz_reports_it(
        self, served: str, fake_slack: FakeSlack
    ) -> None:
        """``apps.connections.open`` is called with the ``xapp-`` token (not the bot token),
        the WebSocket is connected, and /readyz says so."""
        [opened] = fake_slack.calls("apps.connections.open")
        assert opened.headers.get("Authorization") == f"Bearer {APP_TOKEN}"
        assert fake_slack.socket_connections() == 1
        async with httpx.AsyncClient() as http:
            response = await http.get(served + "/readyz")
            health = await http.get(served + "/healthz")
        assert response.status_code == 200
        assert response.json()["checks"] == {
            "slack": True,
            "redis": True,
            "prices": True,
            "socket": True,
        }
        assert health.status_code == 200

    async def test_the_start_up_log_says_where_health_is_served(
        self, served: str, socket_settings: Settings, caplog: pytest.LogCaptureFixture
    ) -> None:
        """One plain line once the socket is connected, naming the health listener."""
        where = f"{socket_settings.host}:{socket_settings.port}"
        started = [r.getMessage() for r in caplog.get_records("setup")]  # in the fixture
        connected = [m for m in started if "in Socket Mode" in m]
        assert connected == [f"connected to Slack in Socket Mode; health on {where}"]

    async def test_socket_mode_serves_no_slack_route_over_http(self, served: str) -> None:
        """In Socket Mode Slack traffic arrives only on the socket: POST /slack/events is 404."""
        async with httpx.AsyncClient() as http:
            response = await http.post(served + "/slack/events", content=b"{}")
        assert response.status_code == 404

    async def test_the_probes_are_served_on_their_own_listener(
        self, served: str, socket_settings: Settings
    ) -> None:
        """GPUFIT_HEALTH_PORT answers /healthz and /readyz with the same checks (issue #34:
        the k8s probes ask it, so the public port's connections cannot starve them)."""
        probes = f"http://127.0.0.1:{socket_settings.health_port}"
        async with httpx.AsyncClient() as http:
            ready = await http.get(probes + "/readyz")
            live = await http.get(probes + "/healthz")
            slack = await http.post(probes + "/slack/events", content=b"{}")
        assert (ready.status_code, live.status_code, slack.status_code) == (200, 200, 404)
        assert ready.json()["checks"]["socket"] is True

    async def test_sigterm_makes_readyz_503_while_the_socket_drains(
        self, served: str, fake_slack: FakeSlack, sigterm_seen: list[int], socket_settings: Settings
    ) -> None:
        """After SIGTERM /readyz is 503 (on the probe listener too) and envelopes are still
        answered on the socket."""
        signal.raise_signal(signal.SIGTERM)
        async with httpx.AsyncClient() as http:
            response = await http.get(served + "/readyz")
            probe = await http.get(f"http://127.0.0.1:{socket_settings.health_port}/readyz")
        assert response.status_code == 503
        assert probe.status_code == 503
        assert response.json()["status"] == "draining"
        envelope = slash_envelope("help", response_url=fake_slack.hook_url())
        await fake_slack.socket_send(envelope)
        ack = await fake_slack.wait_for_ack(envelope["envelope_id"])
        assert "gpufit help" in ack.body["payload"]["text"]


class TestEnvelopes:
    async def test_a_slash_command_is_acked_on_the_socket_then_answered(
        self, served: str, fake_slack: FakeSlack
    ) -> None:
        """The envelope is acked on the socket ("Working on it…"); the answer follows at the
        command's response_url."""
        envelope = slash_envelope("13B full finetune 2 days", response_url=fake_slack.hook_url())
        await fake_slack.socket_send(envelope)
        ack = await fake_slack.wait_for_ack(envelope["envelope_id"])
        assert ack.body["payload"]["response_type"] == "ephemeral"
        assert "Working on it" in ack.body["payload"]["text"]
        [answered] = await fake_slack.wait_for("hook")
        assert answered.body["text"].startswith("gpufit: ")

    async def test_help_is_answered_in_the_ack_itself(
        self, served: str, fake_slack: FakeSlack
    ) -> None:
        """``/gpufit help`` needs no slow work: the ack payload is the help message."""
        envelope = slash_envelope("help", response_url=fake_slack.hook_url())
        await fake_slack.socket_send(envelope)
        ack = await fake_slack.wait_for_ack(envelope["envelope_id"])
        assert ack.body["payload"]["text"].startswith("gpufit help")
        assert ack.body["payload"]["blocks"][0]["type"] == "header"

    async def test_a_mention_is_acked_and_answered_in_its_thread(
        self, served: str, fake_slack: FakeSlack
    ) -> None:
        """An ``events_api`` envelope is acked with its envelope id alone, and the reply is
        posted with chat.postMessage in the mention's thread."""
        envelope = mention_envelope("13B lora 1 day", event_id="EvSock1", ts="1700000000.000700")
        await fake_slack.socket_send(envelope)
        ack = await fake_slack.wait_for_ack(envelope["envelope_id"])
        assert ack.body == {"envelope_id": envelope["envelope_id"]}
        [post] = await fake_slack.wait_for("chat.postMessage")
        assert post.body["thread_ts"] == "1700000000.000700"
        assert post.body["text"].startswith("gpufit: ")

    async def test_a_redelivered_event_is_answered_once(
        self, served: str, fake_slack: FakeSlack, caplog: pytest.LogCaptureFixture
    ) -> None:
        """The same event id in a second envelope (a retry) is acked but dropped where the
        mention is queued (its claim is taken with its reply job); a later, different event is
        still answered."""
        caplog.set_level(logging.INFO, logger="bot.listeners.mentions")
        first = mention_envelope("13B lora 1 day", event_id="EvSockDup", ts="1700000000.000800")
        await fake_slack.socket_send(first)
        await fake_slack.wait_for("chat.postMessage")
        retry = mention_envelope(
            "13B lora 1 day",
            event_id="EvSockDup",
            ts="1700000000.000800",
            retry_attempt=1,
            retry_reason="timeout",
        )
        await fake_slack.socket_send(retry)
        await fake_slack.wait_for_ack(retry["envelope_id"])
        # Logged before the ack is sent, so it is there once the ack arrived.
        assert "duplicate event EvSockDup dropped" in caplog.messages
        other = mention_envelope("help", event_id="EvSockOther", ts="1700000000.000900")
        await fake_slack.socket_send(other)
        await fake_slack.wait_for_ack(other["envelope_id"])
        posts = await fake_slack.wait_for("chat.postMessage", 2)
        assert [p.body["thread_ts"] for p in posts] == ["1700000000.000800", "1700000000.000900"]
        acked = {c.body["envelope_id"] for c in fake_slack.calls("socket")}
        assert {first["envelope_id"], retry["envelope_id"], other["envelope_id"]} <= acked
