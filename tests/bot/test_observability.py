"""Observability: Prometheus metrics an operator can alert on, and JSON logs that never leak."""

from __future__ import annotations

import asyncio
import io
import json
import logging
import socket
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
import structlog
from prometheus_client.parser import text_string_to_metric_families

from bot.health import healthcheck, start_metrics_server
from bot.logs import (
    REDACTED,
    Redactor,
    configure_logging,
    current_log_context,
    log_context,
    new_request_id,
)
from bot.metrics import REQUEST_KINDS, Metrics, render_metrics
from bot.settings import Settings
from tests.factories import Clock

T0 = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)

BOT_TOKEN = "xoxb-1111-2222-AbCdEfGhIjKl"
SIGNING_SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
RESPONSE_URL = "https://hooks.slack.com/commands/T0001/1234/AbCdEf123"


def _metrics(clock: Clock | None = None) -> Metrics:
    return Metrics(clock=clock or Clock(T0), process_metrics=False)


def _samples(metrics: Metrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every exported sample as {(name, sorted labels): value}, parsed from /metrics text."""
    body, _ = metrics.render()
    out: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for family in text_string_to_metric_families(body.decode()):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def _value(metrics: Metrics, name: str, **labels: str) -> float | None:
    return _samples(metrics).get((name, tuple(sorted(labels.items()))))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class TestRequestMetrics:
    def test_every_request_kind_is_exported_from_the_start(self) -> None:
        """Counters for command, event and action exist at 0 before any request, so rate() works."""
        metrics = _metrics()
        for kind in REQUEST_KINDS:
            assert _value(metrics, "gpufit_slack_requests_total", kind=kind) == 0

    def test_requests_are_counted_by_kind(self) -> None:
        """Each kind has its own count."""
        metrics = _metrics()
        metrics.count_request("command")
        metrics.count_request("command")
        metrics.count_request("action")
        assert _value(metrics, "gpufit_slack_requests_total", kind="command") == 2
        assert _value(metrics, "gpufit_slack_requests_total", kind="action") == 1
        assert _value(metrics, "gpufit_slack_requests_total", kind="event") == 0

    def test_an_unknown_kind_is_refused(self) -> None:
        """The kind label is a closed set: a typo cannot create a new time series."""
        with pytest.raises(ValueError, match="request kind"):
            _metrics().count_request("shortcut")  # type: ignore[arg-type]

    def test_time_ack_counts_the_request_and_observes_one_ack(self) -> None:
        """The ack context manager records one request and one latency observation."""
        metrics = _metrics()
        with metrics.time_ack("event"):
            pass
        assert _value(metrics, "gpufit_slack_requests_total", kind="event") == 1
        assert _value(metrics, "gpufit_slack_ack_latency_seconds_count", kind="event") == 1

    def test_ack_buckets_mark_slacks_three_second_limit(self) -> None:
        """An ack at 2.5 s lands under the 3 s bucket; one at 4 s only above it."""
        metrics = _metrics()
        metrics.observe_ack("command", 2.5)
        metrics.observe_ack("command", 4.0)
        bucket = "gpufit_slack_ack_latency_seconds_bucket"
        assert _value(metrics, bucket, kind="command", le="3.0") == 1
        assert _value(metrics, bucket, kind="command", le="5.0") == 2

    def test_recommendation_latency_is_a_histogram(self) -> None:
        """Timed recommendations add to the histogram's count and sum."""
        metrics = _metrics()
        with metrics.time_recommendation():
            pass
        metrics.observe_recommendation(0.2)
        assert _value(metrics, "gpufit_recommendation_latency_seconds_count") == 2
        total = _value(metrics, "gpufit_recommendation_latency_seconds_sum")
        assert total is not None
        assert total >= 0.2


class TestFeedAndWorkerMetrics:
    def test_feed_age_is_measured_at_scrape_time(self) -> None:
        """A feed that stops refreshing keeps ageing on every scrape, without new calls."""
        clock = Clock(T0)
        metrics = _metrics(clock)
        metrics.feed_fetched("skypilot", T0 - timedelta(seconds=90))
        assert _value(metrics, "gpufit_feed_age_seconds", source="skypilot") == 90
        clock.now = T0 + timedelta(hours=1)
        assert _value(metrics, "gpufit_feed_age_seconds", source="skypilot") == 3690

    def test_feed_age_is_per_source_with_the_fetch_time(self) -> None:
        """Each source has its own age and its own fetch timestamp."""
        metrics = _metrics()
        metrics.feed_fetched("skypilot", T0 - timedelta(minutes=5))
        metrics.feed_fetched("gpuhunt", T0)
        assert _value(metrics, "gpufit_feed_age_seconds", source="skypilot") == 300
        assert _value(metrics, "gpufit_feed_age_seconds", source="gpuhunt") == 0
        assert _value(
            metrics, "gpufit_feed_fetched_timestamp_seconds", source="gpuhunt"
        ) == pytest.approx(T0.timestamp())

    def test_a_newer_fetch_resets_the_age(self) -> None:
        """Recording a new snapshot replaces the old fetch time."""
        metrics = _metrics()
        metrics.feed_fetched("native", T0 - timedelta(days=1))
        metrics.feed_fetched("native", T0 - timedelta(seconds=10))
        assert _value(metrics, "gpufit_feed_age_seconds", source="native") == 10

    def test_a_naive_fetch_time_is_refused(self) -> None:
        """Feed times are UTC-aware; a naive datetime would silently shift ages by hours."""
        with pytest.raises(ValueError, match="timezone-aware"):
            _metrics().feed_fetched("native", datetime(2026, 11, 21, 12, 0))

    def test_refresh_failures_alerts_and_429s_are_counted(self) -> None:
        """Refresh failures by source, alerts sent, and Slack 429s by method each count up."""
        metrics = _metrics()
        metrics.refresh_failed("gpuhunt")
        metrics.refresh_failed("gpuhunt")
        metrics.alert_sent()
        metrics.slack_rate_limited_once("chat.postMessage")
        assert _value(metrics, "gpufit_feed_refresh_failures_total", source="gpuhunt") == 2
        assert _value(metrics, "gpufit_alerts_sent_total") == 1
        assert _value(metrics, "gpufit_slack_rate_limited_total", method="chat.postMessage") == 1

    def test_two_metrics_objects_do_not_share_counts(self) -> None:
        """Each Metrics has its own registry, so tests and processes stay independent."""
        first, second = _metrics(), _metrics()
        first.alert_sent()
        assert _value(second, "gpufit_alerts_sent_total") == 0


class TestExposition:
    def test_render_gives_prometheus_text_and_its_content_type(self) -> None:
        """The default exposition is the Prometheus text format with its content type."""
        body, content_type = render_metrics(_metrics())
        assert content_type.startswith("text/plain; version=0.0.4")
        assert b"# TYPE gpufit_slack_requests_total counter" in body

    def test_openmetrics_is_served_when_asked_for(self) -> None:
        """A scraper that accepts OpenMetrics gets it."""
        body, content_type = _metrics().render("application/openmetrics-text; version=1.0.0")
        assert content_type.startswith("application/openmetrics-text")
        assert body.rstrip().endswith(b"# EOF")

    def test_process_metrics_are_exported_by_default(self) -> None:
        """A production Metrics also exports the process's CPU and memory."""
        body, _ = Metrics().render()
        assert b"process_resident_memory_bytes" in body or b"python_info" in body


class TestWorkerMetricsServer:
    @pytest.fixture
    def served(self) -> Iterator[tuple[Metrics, int]]:
        metrics = _metrics()
        server = start_metrics_server("127.0.0.1", 0, metrics)
        try:
            yield metrics, server.port
        finally:
            server.close()

    def test_it_serves_metrics_health_and_404(self, served: tuple[Metrics, int]) -> None:
        """/metrics has the registry, /healthz says ok, anything else is 404."""
        metrics, port = served
        metrics.refresh_failed("skypilot")
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=5) as client:
            scraped = client.get("/metrics")
            health = client.get("/healthz")
            missing = client.get("/admin")
        assert scraped.status_code == 200
        assert 'gpufit_feed_refresh_failures_total{source="skypilot"} 1.0' in scraped.text
        assert (health.status_code, health.text) == (200, "ok\n")
        assert missing.status_code == 404

    def test_healthcheck_passes_when_the_worker_listener_answers(
        self, served: tuple[Metrics, int]
    ) -> None:
        """The image's HEALTHCHECK accepts a process that answers on GPUFIT_METRICS_PORT only."""
        _, port = served
        settings = Settings(port=_free_port(), metrics_port=port)
        assert healthcheck(settings, timeout_s=5) is True

    def test_healthcheck_fails_when_nothing_answers(self) -> None:
        """With neither port listening the check fails, so Docker marks the container unhealthy."""
        settings = Settings(port=_free_port(), metrics_port=_free_port())
        assert healthcheck(settings, timeout_s=2) is False


# ------------------------------------------------------------------------------ logging


@pytest.fixture
def log_stream() -> Iterator[io.StringIO]:
    """Root logging configured by configure_logging into a buffer; restored afterwards."""
    root = logging.getLogger()
    saved_handlers, saved_level = list(root.handlers), root.level
    stream = io.StringIO()
    configure_logging(
        Settings(
            slack_bot_token=BOT_TOKEN,  # type: ignore[arg-type]
            slack_signing_secret=SIGNING_SECRET,  # type: ignore[arg-type]
            log_level="DEBUG",
        ),
        stream=stream,
    )
    try:
        yield stream
    finally:
        for handler in list(root.handlers):
            if handler not in saved_handlers:
                root.removeHandler(handler)
        root.setLevel(saved_level)
        for name in ("httpx", "slack_bolt", "gpufit.slack", "gpufit"):
            logging.getLogger(name).setLevel(logging.NOTSET)


def _lines(stream: io.StringIO, logger: str = "gpufit.test") -> list[dict[str, Any]]:
    """The JSON lines ``logger`` wrote (other libraries may log at DEBUG meanwhile)."""
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    return [line for line in lines if line["logger"] == logger]


class TestJsonLogs:
    def test_each_record_is_one_json_object_per_line(self, log_stream: io.StringIO) -> None:
        """Even a message with newlines stays one line, with ts, level, logger and message."""
        logging.getLogger("gpufit.test").info("two\nlines %s", "here")
        (line,) = _lines(log_stream)
        assert line["message"] == "two\nlines here"
        assert line["level"] == "INFO"
        assert line["logger"] == "gpufit.test"
        assert line["ts"].endswith("Z")

    def test_request_context_is_on_every_line_inside_the_block(
        self, log_stream: io.StringIO
    ) -> None:
        """Lines logged inside log_context carry its fields; lines after it do not."""
        log = logging.getLogger("gpufit.test")
        with log_context(request_id="r1", team_id="T1", user_id="U1", command="/gpufit"):
            log.info("inside")
        log.info("outside")
        inside, outside = _lines(log_stream)
        assert {k: inside[k] for k in ("request_id", "team_id", "user_id", "command")} == {
            "request_id": "r1",
            "team_id": "T1",
            "user_id": "U1",
            "command": "/gpufit",
        }
        assert "team_id" not in outside

    def test_nested_context_adds_to_the_outer_one(self) -> None:
        """An inner block adds fields (None ones left out) and restores the outer on exit."""
        with log_context(request_id="r1", team_id="T1") as outer:
            with log_context(user_id="U1", channel_id=None) as inner:
                pass
            after_inner = current_log_context()
        assert inner == {"request_id": "r1", "team_id": "T1", "user_id": "U1"}
        assert after_inner == outer == {"request_id": "r1", "team_id": "T1"}
        assert current_log_context() == {}

    async def test_context_follows_into_tasks_without_leaking_between_them(
        self, log_stream: io.StringIO
    ) -> None:
        """Concurrent requests each log their own context (contextvars, not globals)."""
        log = logging.getLogger("gpufit.test")

        async def handle(team: str) -> None:
            with log_context(request_id=new_request_id(), team_id=team):
                await asyncio.sleep(0)
                log.info("handled")

        await asyncio.gather(handle("T1"), handle("T2"))
        teams = sorted(line["team_id"] for line in _lines(log_stream))
        assert teams == ["T1", "T2"]

    def test_unknown_context_fields_are_refused(self) -> None:
        """Only the documented context fields exist, so dashboards can rely on their names."""
        with pytest.raises(ValueError, match="unknown log context"), log_context(token="x"):
            pass

    def test_extra_fields_are_included(self, log_stream: io.StringIO) -> None:
        """``extra=`` fields appear as keys of the JSON object."""
        logging.getLogger("gpufit.test").info(
            "refreshed", extra={"source": "skypilot", "offers": 12}
        )
        (line,) = _lines(log_stream)
        assert (line["source"], line["offers"]) == ("skypilot", 12)

    def test_configuring_twice_keeps_one_handler(self, log_stream: io.StringIO) -> None:
        """configure_logging replaces its own handler instead of doubling every line."""
        configure_logging(Settings(log_level="INFO"), stream=log_stream)
        logging.getLogger("gpufit.test").warning("once")
        assert len(_lines(log_stream)) == 1


LEAKS = [
    pytest.param(f"auth with {BOT_TOKEN}", BOT_TOKEN, id="configured-bot-token"),
    pytest.param(f"signature base used {SIGNING_SECRET}", SIGNING_SECRET, id="signing-secret"),
    pytest.param("user token xoxp-9-8-7-abcdef", "xoxp-9-8-7-abcdef", id="user-token"),
    pytest.param("rotating xoxe.xoxb-1-MTIzNDU", "xoxe.xoxb-1-MTIzNDU", id="rotated-token"),
    pytest.param("refresh xoxe-1-My0xLTEyMw", "xoxe-1-My0xLTEyMw", id="refresh-token"),
    pytest.param("socket mode xapp-1-A01-2345-ffee", "xapp-1-A01-2345-ffee", id="app-token"),
    pytest.param(f"replying to {RESPONSE_URL}", "AbCdEf123", id="response-url"),
    pytest.param(
        "webhook https://hooks.slack.com/services/T0/B0/XyZ", "B0/XyZ", id="incoming-webhook"
    ),
    pytest.param(
        "body token=gIkuvaNzQIHg97ATvDxqgjtO&team_id=T1&response_url="
        "https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1%2F2%2Fsecretpath",
        "secretpath",
        id="form-body-response-url",
    ),
    pytest.param(
        "body token=gIkuvaNzQIHg97ATvDxqgjtO&team_id=T1",
        "gIkuvaNzQIHg97ATvDxqgjtO",
        id="form-body-verification-token",
    ),
    pytest.param(
        "payload {'response_url': 'https://example.org/r/1', 'user': 'U1'}",
        "example.org/r/1",
        id="response-url-key-in-a-dict",
    ),
    pytest.param("Authorization: Bearer abc.def.ghi", "abc.def.ghi", id="authorization-header"),
    pytest.param(
        "connecting to rediss://default:hunter2-pass@redis:6380/0",
        "hunter2-pass",
        id="redis-url-password",
    ),
    pytest.param(
        "GET https://prices.example.org/v1/gpus?api_key=sk-live-9f8e7d&region=us",
        "sk-live-9f8e7d",
        id="query-api-key",
    ),
    pytest.param(
        "GET https://example.org/feed.json?region=eu&access_token=ya29.a0AfB_Zz",
        "ya29.a0AfB_Zz",
        id="query-access-token",
    ),
    pytest.param(
        "GET https://b.s3.amazonaws.com/vms.csv?X-Amz-Credential=AKIA1%2F2&X-Amz-Signature=ab12cd",
        "ab12cd",
        id="query-presigned-signature",
    ),
    pytest.param(
        "GET https://a.blob.core.windows.net/c/vms.csv?sv=2024-01-01&sig=Zm9vYmFy%3D",
        "Zm9vYmFy",
        id="query-sas-sig",
    ),
    pytest.param("GET https://maps.example/api?key=AIzaSyA-1234xyz", "AIzaSyA", id="query-key"),
    pytest.param("login user=bob password=Tr0ub4dor", "Tr0ub4dor", id="password-key"),
    pytest.param("client_secret=abc123def456 sent", "abc123def456", id="client-secret"),
]


class TestRedaction:
    @pytest.mark.parametrize(("message", "secret"), LEAKS)
    def test_a_secret_in_the_message_never_reaches_the_line(
        self, log_stream: io.StringIO, message: str, secret: str
    ) -> None:
        """Tokens, signing secrets, response URLs and URL passwords are replaced by a marker."""
        logging.getLogger("gpufit.test").info(message)
        output = log_stream.getvalue()
        assert secret not in output
        assert REDACTED in output
        json.loads(output)  # still valid JSON after redaction

    @pytest.mark.parametrize(("message", "secret"), LEAKS)
    def test_a_secret_passed_as_an_argument_is_redacted_too(
        self, log_stream: io.StringIO, message: str, secret: str
    ) -> None:
        """``log.info("%s", value)`` is rendered before redaction, so args cannot smuggle one."""
        logging.getLogger("gpufit.test").info("got %s", message)
        assert secret not in log_stream.getvalue()

    def test_ordinary_text_is_left_alone(self, log_stream: io.StringIO) -> None:
        """Workload text, ids and URLs of price feeds pass through unchanged."""
        text = (
            "13B full finetune 2 days team_id=T1 feed=https://example.org/catalog.csv"
            "?region=us max_tokens=2048 keyword=lora"
        )
        logging.getLogger("gpufit.test").info(text)
        (line,) = _lines(log_stream)
        assert line["message"] == text

    def test_secrets_in_extra_fields_are_dropped(self, log_stream: io.StringIO) -> None:
        """Extra fields named like secrets vanish; nested strings are scrubbed."""
        logging.getLogger("gpufit.test").info(
            "slash command",
            extra={
                "response_url": RESPONSE_URL,
                "payload": {"token": "abc", "text": f"call {BOT_TOKEN}", "team": "T1"},
            },
        )
        (line,) = _lines(log_stream)
        assert line["response_url"] == REDACTED
        assert line["payload"] == {"token": REDACTED, "text": f"call {REDACTED}", "team": "T1"}

    def test_a_traceback_is_scrubbed(self, log_stream: io.StringIO) -> None:
        """An exception whose message holds a token is logged with the token removed."""
        try:
            raise RuntimeError(f"Slack said invalid_auth for {BOT_TOKEN} at {RESPONSE_URL}")
        except RuntimeError:
            logging.getLogger("gpufit.test").exception("post failed")
        (line,) = _lines(log_stream)
        assert "RuntimeError" in line["exc"]
        assert BOT_TOKEN not in log_stream.getvalue()
        assert "AbCdEf123" not in log_stream.getvalue()

    def test_third_party_loggers_are_scrubbed(self, log_stream: io.StringIO) -> None:
        """Records from libraries (httpx, slack_sdk) go through the same filter."""
        logging.getLogger("httpx").warning('HTTP Request: POST %s "HTTP/1.1 404"', RESPONSE_URL)
        logging.getLogger("slack_sdk.web").error("token=%s rejected", BOT_TOKEN)
        output = log_stream.getvalue()
        assert "AbCdEf123" not in output
        assert BOT_TOKEN not in output
        assert len(_lines(log_stream, "httpx")) == len(_lines(log_stream, "slack_sdk.web")) == 1

    @pytest.mark.parametrize("library", ["httpx", "uvicorn.error", "slack_bolt.App"])
    def test_query_secrets_in_a_library_record_are_redacted(
        self, log_stream: io.StringIO, library: str
    ) -> None:
        """A stdlib logger's record (httpx's request line) loses ``?api_key=`` and the like,
        and keeps the parameters that are not secret."""
        url = "https://prices.example.org/catalog.csv?region=us-east-1&api_key=S3cr3tK3y9"
        logging.getLogger(library).warning('HTTP Request: GET %s "HTTP/1.1 200 OK"', url)
        (line,) = _lines(log_stream, library)
        assert "S3cr3tK3y9" not in log_stream.getvalue()
        assert line["message"] == (
            "HTTP Request: GET https://prices.example.org/catalog.csv"
            f'?region=us-east-1&api_key={REDACTED} "HTTP/1.1 200 OK"'
        )

    def test_structlog_loggers_share_the_chain(self, log_stream: io.StringIO) -> None:
        """``structlog.get_logger()`` lines carry the context and are redacted like the rest."""
        with log_context(request_id="r9", team_id="T9"):
            structlog.get_logger("gpufit.test").warning("calling", url=RESPONSE_URL, n=3)
        (line,) = _lines(log_stream)
        assert (line["message"], line["team_id"], line["n"]) == ("calling", "T9", 3)
        assert line["url"] == REDACTED
        assert line["level"] == "WARNING"

    def test_text_format_is_redacted_as_well(self) -> None:
        """GPUFIT_LOG_FORMAT=text trades JSON for readability, never redaction."""
        root = logging.getLogger()
        saved = list(root.handlers), root.level
        stream = io.StringIO()
        try:
            configure_logging(
                Settings(log_format="text", slack_bot_token=BOT_TOKEN),  # type: ignore[arg-type]
                stream=stream,
            )
            with log_context(team_id="T9"):
                logging.getLogger("gpufit.test").warning("using %s", BOT_TOKEN)
        finally:
            for handler in list(root.handlers):
                if handler not in saved[0]:
                    root.removeHandler(handler)
            root.setLevel(saved[1])
        output = stream.getvalue()
        assert BOT_TOKEN not in output
        assert "team_id=T9" in output

    def test_short_configured_values_are_not_treated_as_secrets(self) -> None:
        """A too-short 'secret' (a test value) would redact ordinary words, so it is ignored."""
        assert Redactor(["abc"])("abc def") == "abc def"


class TestBoltBodies:
    async def test_a_request_failing_verification_is_logged_without_its_body(
        self, log_stream: io.StringIO
    ) -> None:
        """Issue #18 item 9: Bolt logged ``Invalid request signature detected (…, body: …)``
        at INFO with the whole unverified body. The record keeps its first part only."""
        import redis.asyncio as aioredis
        from pydantic import SecretStr
        from slack_sdk.web.async_client import AsyncWebClient

        from bot.app import build_app
        from bot.catalog import bundled_catalog
        from bot.services import Services, static_catalog
        from tests.bot.slack_requests import FORM, command_body, request

        logging.getLogger("slack_bolt").setLevel(logging.INFO)  # even when INFO is on
        redis = aioredis.Redis.from_url("redis://127.0.0.1:1/0")  # never reached
        services = Services(
            redis=redis,
            catalog=static_catalog(bundled_catalog()),
            now=lambda: datetime.now(UTC),
            client=AsyncWebClient(token=BOT_TOKEN, base_url="http://127.0.0.1:1/api/"),
        )
        settings = Settings(
            slack_bot_token=SecretStr(BOT_TOKEN), slack_signing_secret=SecretStr(SIGNING_SECRET)
        )
        app = build_app(settings, services)
        body = command_body("private plans for project nightjar", response_url=RESPONSE_URL)
        response = await app.async_dispatch(request(body, FORM, secret="not-the-secret"))
        await redis.aclose()
        assert response.status == 401
        logged = log_stream.getvalue()
        assert "Invalid request signature" in logged
        assert "nightjar" not in logged
        assert "body: [omitted]" in logged
