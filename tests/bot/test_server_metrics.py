"""Metrics of the HTTP server: verified requests counted by kind, acks and answers timed, and
scraped from the metrics port, never from the public Slack port."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import replace

import httpx
import pytest
from slack_bolt.async_app import AsyncApp

from bot.app import build_app
from bot.health import start_metrics_server
from bot.metrics import Metrics
from bot.server import EVENTS_PATH, build_asgi, request_kind
from bot.services import Services
from bot.settings import Settings
from tests.asgi_server import serving
from tests.bot.slack_requests import (
    FORM,
    JSON,
    VERIFIER,
    command_body,
    mention_body,
    signed_headers,
)
from tests.fake_slack import FakeSlack


@pytest.fixture
def metrics() -> Metrics:
    return Metrics(process_metrics=False)


@pytest.fixture
async def metered_url(
    services: Services, settings: Settings, metrics: Metrics
) -> AsyncIterator[str]:
    metered = replace(services, metrics=metrics)
    app: AsyncApp = build_app(settings, metered)
    async with serving(build_asgi(metered, app, verifier=VERIFIER, metrics=metrics)) as url:
        yield url


@pytest.fixture
def scrape_url(metrics: Metrics) -> Iterator[str]:
    """The metrics listener ``gpufit serve`` starts on GPUFIT_METRICS_PORT (a free port)."""
    server = start_metrics_server("127.0.0.1", 0, metrics)
    try:
        yield f"http://127.0.0.1:{server.port}"
    finally:
        server.close()


class TestRequestKind:
    @pytest.mark.parametrize(
        ("content_type", "body", "kind"),
        [
            ("application/x-www-form-urlencoded", b"token=x&command=%2Fgpufit", "command"),
            ("application/x-www-form-urlencoded", b"payload=%7B%22type%22%7D", "action"),
            ("application/json", b'{"type": "event_callback"}', "event"),
        ],
    )
    def test_kind_from_the_raw_body(self, content_type: str, body: bytes, kind: str) -> None:
        """Commands, interactions and events are told apart without parsing the payload."""
        assert request_kind(content_type, body) == kind


class TestMetricsEndpoint:
    async def test_commands_and_events_are_counted_and_timed(
        self, metered_url: str, scrape_url: str, fake_slack: FakeSlack
    ) -> None:
        """After a command and a mention, /metrics shows both kinds, the ack and answer timings."""
        command = command_body("13B full finetune 2 days", response_url=fake_slack.hook_url())
        mention = mention_body("7B lora 1 day", event_id="EvMetrics", ts="1700000000.000900")
        async with httpx.AsyncClient() as http:
            r1 = await http.post(
                metered_url + EVENTS_PATH,
                content=command,
                headers=signed_headers(command, content_type=FORM),
            )
            r2 = await http.post(
                metered_url + EVENTS_PATH,
                content=mention,
                headers=signed_headers(mention, content_type=JSON),
            )
            assert r1.status_code == r2.status_code == 200
            assert "Working on it" in r1.json()["text"]  # the answer follows at response_url
            [answered] = await fake_slack.wait_for("hook")
            assert answered.body["text"].startswith("gpufit: ")
            await fake_slack.wait_for("chat.postMessage")
            text = (await http.get(scrape_url + "/metrics")).text
        assert 'gpufit_slack_requests_total{kind="command"} 1.0' in text
        assert 'gpufit_slack_requests_total{kind="event"} 1.0' in text
        assert 'gpufit_slack_ack_latency_seconds_count{kind="command"} 1.0' in text
        assert "gpufit_recommendation_latency_seconds_count 2.0" in text


class TestMetricsPort:
    async def test_the_public_port_has_no_metrics_and_unsigned_requests_are_not_counted(
        self, metered_url: str, scrape_url: str, fake_slack: FakeSlack
    ) -> None:
        """/metrics is not served where Slack (and anyone) reaches the bot, and a request that
        fails verification is refused before it is counted as a command."""
        body = command_body("13B lora 1 day", response_url=fake_slack.hook_url())
        async with httpx.AsyncClient() as http:
            assert (await http.get(metered_url + "/metrics")).status_code == 404
            assert (await http.get(metered_url + "/metrics/")).status_code == 404
            unsigned = await http.post(
                metered_url + EVENTS_PATH, content=body, headers={"content-type": FORM}
            )
            assert unsigned.status_code == 401
            text = (await http.get(scrape_url + "/metrics")).text
        assert 'gpufit_slack_requests_total{kind="command"} 0.0' in text

    async def test_a_busy_metrics_port_stops_serve_with_a_message_naming_it(
        self, services: Services, settings: Settings
    ) -> None:
        """A worker on the same host holds GPUFIT_METRICS_PORT: `gpufit serve` stops with a
        message naming the variable, not a traceback about sockets."""
        import socket

        from bot.server import serve
        from bot.settings import SettingsError

        with socket.socket() as held:
            held.bind(("127.0.0.1", 0))
            held.listen()
            busy = settings.model_copy(
                update={"host": "127.0.0.1", "metrics_port": held.getsockname()[1]}
            )
            with pytest.raises(SettingsError, match="GPUFIT_METRICS_PORT"):
                await serve(busy, services, socket_mode=False)

    async def test_a_busy_health_port_stops_serve_with_a_message_naming_it(
        self, services: Services, settings: Settings
    ) -> None:
        """The probe listener's port is taken: `gpufit serve` stops with a message naming
        GPUFIT_HEALTH_PORT (uvicorn alone would exit the process)."""
        import socket

        from bot.server import serve
        from bot.settings import SettingsError

        with socket.socket() as held, socket.socket() as free:
            held.bind(("127.0.0.1", 0))
            held.listen()
            free.bind(("127.0.0.1", 0))
            busy = settings.model_copy(
                update={
                    "host": "127.0.0.1",
                    "port": free.getsockname()[1],
                    "metrics_enabled": False,
                    "health_port": held.getsockname()[1],
                }
            )
            free.close()
            with pytest.raises(SettingsError, match="GPUFIT_HEALTH_PORT"):
                await serve(busy, services, socket_mode=False)
