"""Metrics and logs: what an operator sees of a running gpufit.

Two halves, both wired once by the composition root (``gpufit serve`` / ``gpufit worker``):

* :class:`Metrics` owns one Prometheus registry and every gpufit metric. The HTTP server
  mounts :func:`metrics_asgi_app` (or calls :func:`render_metrics`) on ``/metrics``; the
  worker, which has no HTTP face of its own, calls :func:`start_metrics_server` to expose
  ``/metrics`` and ``/healthz`` on ``GPUFIT_METRICS_PORT``. docs/operations.md says what each
  metric means and which alert watches it.
* :func:`configure_logging` installs one handler on the root logger: one JSON object per line
  with the request context (:func:`log_context`) and a :class:`RedactingFilter` that removes
  Slack tokens, webhook / ``response_url`` URLs, URL passwords and the configured secret values
  from every record, whichever library logged it.
"""

from __future__ import annotations

import json
import logging
import re
import sys
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping, MutableMapping
from contextlib import contextmanager
from contextvars import ContextVar, Token
from datetime import UTC, datetime
from functools import lru_cache
from socketserver import ThreadingMixIn
from typing import Any, Literal, TextIO
from urllib.error import URLError
from urllib.request import urlopen
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Histogram,
    PlatformCollector,
    ProcessCollector,
    make_asgi_app,
    make_wsgi_app,
)
from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from bot.settings import Settings

__all__ = [
    "REQUEST_KINDS",
    "JsonFormatter",
    "Metrics",
    "MetricsServer",
    "RedactingFilter",
    "Redactor",
    "RequestKind",
    "configure_logging",
    "current_log_context",
    "default_metrics",
    "healthcheck",
    "log_context",
    "metrics_asgi_app",
    "new_request_id",
    "render_metrics",
    "start_metrics_server",
    "start_request_context",
]

# ------------------------------------------------------------------------------ metrics

RequestKind = Literal["command", "event", "action"]
#: The kinds of Slack request a listener handles: slash commands, Events API events
#: (mentions, app_home), interactive actions (buttons). A closed set keeps label cardinality fixed.
REQUEST_KINDS: tuple[RequestKind, ...] = ("command", "event", "action")

#: Slack retries a request it has not seen acknowledged within 3 s, so the buckets are dense
#: below 3 s and the 3.0 bucket is the line an ack must stay under (Slack API docs, "Acknowledge").
ACK_BUCKETS_S = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 3.0, 5.0)
#: A recommendation is pure CPU work over a catalog of a few thousand offers: tens of ms to a
#: few seconds; above 10 s something is wrong (measured on the bundled snapshot).
RECOMMENDATION_BUCKETS_S = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)


def _utcnow() -> datetime:
    return datetime.now(UTC)


class _FeedAgeCollector(Collector):
    """Feed age computed at scrape time, so a feed that stops refreshing visibly ages."""

    def __init__(self, clock: Callable[[], datetime]) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._fetched_at: dict[str, datetime] = {}

    def set(self, source: str, fetched_at: datetime) -> None:
        if fetched_at.tzinfo is None:
            raise ValueError("fetched_at must be timezone-aware (UTC)")
        with self._lock:
            self._fetched_at[source] = fetched_at

    def collect(self) -> Iterable[Metric]:
        with self._lock:
            snapshot = dict(self._fetched_at)
        now = self._clock()
        age = GaugeMetricFamily(
            "gpufit_feed_age_seconds",
            "Seconds since the price snapshot of each source was fetched.",
            labels=["source"],
        )
        stamp = GaugeMetricFamily(
            "gpufit_feed_fetched_timestamp_seconds",
            "Unix time at which the price snapshot of each source was fetched.",
            labels=["source"],
        )
        for source, fetched_at in sorted(snapshot.items()):
            age.add_metric([source], max(0.0, (now - fetched_at).total_seconds()))
            stamp.add_metric([source], fetched_at.timestamp())
        return [age, stamp]


class Metrics:
    """Every gpufit metric, in one registry of its own (build one per process).

    Args:
        registry: where to register; a fresh :class:`CollectorRegistry` by default.
        clock: the time source for feed ages (tests pass a fixed clock).
        process_metrics: also export ``process_*`` and ``python_info`` (off in tests that
            compare exact output).
    """

    def __init__(
        self,
        *,
        registry: CollectorRegistry | None = None,
        clock: Callable[[], datetime] = _utcnow,
        process_metrics: bool = True,
    ) -> None:
        self.registry = registry if registry is not None else CollectorRegistry()
        r = self.registry
        self.requests = Counter(
            "gpufit_slack_requests",
            "Slack requests handled, by kind (command, event, action).",
            ["kind"],
            registry=r,
        )
        self.ack_latency = Histogram(
            "gpufit_slack_ack_latency_seconds",
            "Time from receiving a Slack request to acknowledging it (Slack's limit is 3 s).",
            ["kind"],
            buckets=ACK_BUCKETS_S,
            registry=r,
        )
        self.recommendation_latency = Histogram(
            "gpufit_recommendation_latency_seconds",
            "Time to parse a workload and build its ranked recommendation.",
            buckets=RECOMMENDATION_BUCKETS_S,
            registry=r,
        )
        self.refresh_failures = Counter(
            "gpufit_feed_refresh_failures",
            "Price feed refreshes that failed, by source.",
            ["source"],
            registry=r,
        )
        self.alerts_sent = Counter(
            "gpufit_alerts_sent", "Price alerts posted to Slack by the worker.", registry=r
        )
        self.slack_rate_limited = Counter(
            "gpufit_slack_rate_limited",
            "Slack Web API calls answered 429 (rate limited), by API method.",
            ["method"],
            registry=r,
        )
        for kind in REQUEST_KINDS:  # export zeros from the start, so rate() works at once
            self.requests.labels(kind=kind)
            self.ack_latency.labels(kind=kind)
        self._feed_age = _FeedAgeCollector(clock)
        r.register(self._feed_age)
        if process_metrics:
            ProcessCollector(registry=r)
            PlatformCollector(registry=r)

    # -- recording -------------------------------------------------------------------------

    def count_request(self, kind: RequestKind) -> None:
        """One Slack request of ``kind`` arrived."""
        self.requests.labels(kind=_checked_kind(kind)).inc()

    def observe_ack(self, kind: RequestKind, seconds: float) -> None:
        """A request of ``kind`` was acknowledged ``seconds`` after it arrived."""
        self.ack_latency.labels(kind=_checked_kind(kind)).observe(seconds)

    @contextmanager
    def time_ack(self, kind: RequestKind) -> Iterator[None]:
        """Count a request and time its acknowledgement: ``with metrics.time_ack("command"):``."""
        self.count_request(kind)
        start = time.perf_counter()
        try:
            yield
        finally:
            self.observe_ack(kind, time.perf_counter() - start)

    def observe_recommendation(self, seconds: float) -> None:
        """One recommendation took ``seconds``."""
        self.recommendation_latency.observe(seconds)

    @contextmanager
    def time_recommendation(self) -> Iterator[None]:
        """Time the block as one recommendation."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.observe_recommendation(time.perf_counter() - start)

    def feed_fetched(self, source: str, fetched_at: datetime) -> None:
        """The snapshot of ``source`` now in use was fetched at ``fetched_at`` (aware, UTC)."""
        self._feed_age.set(source, fetched_at)

    def refresh_failed(self, source: str) -> None:
        """A refresh of ``source`` failed (the old snapshot, if any, stays in use)."""
        self.refresh_failures.labels(source=source).inc()

    def alert_sent(self) -> None:
        """The worker posted one price alert."""
        self.alerts_sent.inc()

    def slack_rate_limited_once(self, method: str) -> None:
        """Slack answered 429 to a call of Web API ``method`` (e.g. ``chat.postMessage``)."""
        self.slack_rate_limited.labels(method=method).inc()

    # -- exposition ------------------------------------------------------------------------

    def render(self, accept: str | None = None) -> tuple[bytes, str]:
        """The ``/metrics`` body and its Content-Type (OpenMetrics if ``accept`` asks for it)."""
        encoder, content_type = choose_encoder(accept or "")
        return encoder(self.registry), content_type


def _checked_kind(kind: str) -> str:
    if kind not in REQUEST_KINDS:
        # A programming error, not user input: an open label set would grow without bound.
        raise ValueError(f"request kind must be one of {REQUEST_KINDS}, not {kind!r}")
    return kind


@lru_cache(maxsize=1)
def default_metrics() -> Metrics:
    """The process's :class:`Metrics`, made on first use (never at import time)."""
    return Metrics()


def render_metrics(metrics: Metrics | None = None, accept: str | None = None) -> tuple[bytes, str]:
    """``(body, content_type)`` for a ``/metrics`` response."""
    return (metrics or default_metrics()).render(accept)


ASGIApp = Callable[
    [MutableMapping[str, Any], Callable[[], Awaitable[Any]], Callable[[Any], Awaitable[None]]],
    Awaitable[None],
]


def metrics_asgi_app(metrics: Metrics | None = None) -> ASGIApp:
    """An ASGI app that answers every GET with the metrics (mount it at ``/metrics``)."""
    app: ASGIApp = make_asgi_app((metrics or default_metrics()).registry)
    return app


class _ThreadingWSGIServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Scrapes every 15 s would drown the logs; Prometheus records its own scrape errors."""


class MetricsServer:
    """A running ``/metrics`` + ``/healthz`` listener on a background thread."""

    def __init__(self, server: WSGIServer, thread: threading.Thread) -> None:
        self._server = server
        self._thread = thread

    @property
    def port(self) -> int:
        """The bound port (useful when started on port 0)."""
        return int(self._server.server_address[1])

    def close(self) -> None:
        """Stop serving and release the port."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def start_metrics_server(
    host: str, port: int, metrics: Metrics | None = None
) -> MetricsServer:  # pragma: no branch
    """Serve ``/metrics`` and ``/healthz`` on ``host:port`` from a daemon thread.

    For processes without an HTTP face (``gpufit worker``): Prometheus scrapes it and the
    liveness probe asks ``/healthz``. Any other path is 404.
    """
    metrics_app = make_wsgi_app((metrics or default_metrics()).registry)

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if path == "/metrics":
            body: Iterable[bytes] = metrics_app(environ, start_response)
            return body
        if path == "/healthz":
            start_response("200 OK", [("Content-Type", "text/plain; charset=utf-8")])
            return [b"ok\n"]
        start_response("404 Not Found", [("Content-Type", "text/plain; charset=utf-8")])
        return [b"not found\n"]

    server = make_server(
        host, port, app, server_class=_ThreadingWSGIServer, handler_class=_QuietHandler
    )
    thread = threading.Thread(target=server.serve_forever, name="gpufit-metrics", daemon=True)
    thread.start()
    return MetricsServer(server, thread)


# ------------------------------------------------------------------------------ log context

#: The request context fields a log line may carry, in output order.
CONTEXT_FIELDS = ("request_id", "kind", "team_id", "channel_id", "user_id", "command")

_context: ContextVar[Mapping[str, str]] = ContextVar("gpufit_log_context", default={})  # noqa: B039 - never mutated


def new_request_id() -> str:
    """A fresh request id (32 hex digits)."""
    return uuid.uuid4().hex


def current_log_context() -> dict[str, str]:
    """The context fields bound in the running task or thread."""
    return dict(_context.get())


def _bind(fields: Mapping[str, str | None]) -> Token[Mapping[str, str]]:
    unknown = set(fields) - set(CONTEXT_FIELDS)
    if unknown:
        raise ValueError(f"unknown log context fields {sorted(unknown)}; use {CONTEXT_FIELDS}")
    merged = dict(_context.get())
    merged.update({key: str(value) for key, value in fields.items() if value is not None})
    return _context.set(merged)


def start_request_context(**fields: str | None) -> None:
    """Replace the context for the rest of the running task (and the tasks it starts).

    For Bolt middleware, whose ``next()`` returns before the listeners run, so a ``with``
    block would end too early. Each request runs in its own task (uvicorn, Socket Mode), so
    the context never leaks into another request.
    """
    _context.set({})
    _bind(fields)


@contextmanager
def log_context(**fields: str | None) -> Iterator[dict[str, str]]:
    """Bind request context for every log line inside the block (and tasks it starts).

    ``with log_context(request_id=new_request_id(), team_id=..., user_id=..., command=...):``.
    Fields given as ``None`` are left out; nesting adds to the outer context.
    """
    token = _bind(fields)
    try:
        yield current_log_context()
    finally:
        _context.reset(token)


# ------------------------------------------------------------------------------ redaction

REDACTED = "[REDACTED]"

#: What must never reach a log line, whatever logged it. Character classes stop at quotes and
#: backslashes so redacting a serialized JSON line cannot break it.
_PATTERNS: tuple[re.Pattern[str], ...] = (
    # Slack tokens: bot/user/app/refresh/config tokens (api.slack.com/authentication/token-types).
    re.compile(r"\bxox(?:[abprs]|e(?:\.xox[abprs])?)-[A-Za-z0-9-]+"),
    re.compile(r"\bxapp-[A-Za-z0-9-]+"),
    # Incoming webhooks and slash-command / interaction response_url, plain or URL-encoded.
    re.compile(r"https?(?::|%3A)(?://|%2F%2F)hooks\.slack\.com[^\s\"'<>\\]*", re.IGNORECASE),
    # key=value / "key": "value" for keys that hold secrets or reply URLs (form bodies, dicts).
    re.compile(
        r"(?P<key>\b(?:response_url|token|signing_secret|client_secret|password|authorization)"
        r"[\"']?\s*[:=]\s*[\"']?)(?:Bearer\s+)?[^\s\"'&,;}\\]+",
        re.IGNORECASE,
    ),
    # Credentials inside URLs: scheme://user:password@host.
    re.compile(r"(?P<key>\b[a-z][a-z0-9+.-]*://[^\s:/@\"'\\]*:)[^\s@/\"'\\]+(?=@)", re.IGNORECASE),
)

#: Extra-field names whose values are dropped whole.
_SECRET_KEYS = re.compile(r"token|secret|password|authorization|response_url|cookie", re.I)


def _replace(match: re.Match[str]) -> str:
    key = match.groupdict().get("key")
    return f"{key}{REDACTED}" if key else REDACTED


class Redactor:
    """Scrubs secrets from text: the fixed patterns plus the configured secret values."""

    #: Shorter "secrets" would redact ordinary words; real tokens and secrets are far longer.
    MIN_SECRET_LEN = 8

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        values = sorted(
            {s for s in secrets if len(s) >= self.MIN_SECRET_LEN}, key=len, reverse=True
        )
        self._literal = re.compile("|".join(map(re.escape, values))) if values else None

    def __call__(self, text: str) -> str:
        if self._literal is not None:
            text = self._literal.sub(REDACTED, text)
        for pattern in _PATTERNS:
            text = pattern.sub(_replace, text)
        return text

    def value(self, value: Any, key: str = "") -> Any:
        """Redact a structured value (an ``extra=`` field): strings, mappings, sequences."""
        if key and _SECRET_KEYS.search(key):
            return REDACTED
        if isinstance(value, str):
            return self(value)
        if isinstance(value, Mapping):
            return {str(k): self.value(v, str(k)) for k, v in value.items()}
        if isinstance(value, list | tuple | set | frozenset):
            return [self.value(v) for v in value]
        if value is None or isinstance(value, bool | int | float):
            return value
        return self(str(value))


#: Attributes every LogRecord has; anything else on a record came from ``extra=``.
_RECORD_ATTRS = frozenset(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {
    "message",
    "asctime",
    "taskName",
    "gpufit_context",
    "gpufit_ctx",
}


class RedactingFilter(logging.Filter):
    """Rewrites each record in place so no handler after it can see a secret.

    The message is rendered once (``msg % args``) and scrubbed; the traceback and stack are
    rendered and scrubbed into ``exc_text`` / ``stack_info``; ``extra=`` fields are scrubbed,
    and dropped whole when their name says they hold a secret. It also captures the request
    context of the logging task, so the formatter reports the context of the caller.
    """

    def __init__(self, redactor: Redactor) -> None:
        super().__init__()
        self._redact = redactor
        self._formatter = logging.Formatter()

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except Exception:  # a bad format string must not lose the line
            message = f"{record.msg!s} {record.args!r}"
        record.msg = self._redact(message)
        record.args = None
        if record.exc_info and not record.exc_text:
            record.exc_text = self._formatter.formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self._redact(record.exc_text)
        record.exc_info = None  # the scrubbed exc_text is what formatters print
        if record.stack_info:
            record.stack_info = self._redact(record.stack_info)
        for key, value in list(record.__dict__.items()):
            if key not in _RECORD_ATTRS:
                setattr(record, key, self._redact.value(value, key))
        if not hasattr(record, "gpufit_context"):
            record.gpufit_context = current_log_context()
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ``ts``, ``level``, ``logger``, ``message``, the request
    context fields that are bound, ``exc`` when there is a traceback, and ``extra=`` fields.

    When a :class:`Redactor` is given it also scrubs the finished line (defence in depth).
    """

    def __init__(self, redactor: Redactor | None = None) -> None:
        super().__init__()
        self._redact = redactor

    def format(self, record: logging.LogRecord) -> str:
        ts = datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")
        doc: dict[str, Any] = {
            "ts": ts.replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        context = getattr(record, "gpufit_context", None)
        if context is None:
            context = current_log_context()
        doc.update({key: context[key] for key in CONTEXT_FIELDS if key in context})
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            doc["exc"] = record.exc_text
        if record.stack_info:
            doc["stack"] = record.stack_info
        for key, value in record.__dict__.items():
            if key not in _RECORD_ATTRS and key not in doc:
                doc[key] = value
        line = json.dumps(doc, default=str, ensure_ascii=False)
        return self._redact(line) if self._redact is not None else line


class _TextFormatter(logging.Formatter):
    def __init__(self, redactor: Redactor) -> None:
        super().__init__("%(asctime)s %(levelname)-7s %(name)s: %(message)s%(gpufit_ctx)s")
        self._redact = redactor

    def format(self, record: logging.LogRecord) -> str:
        context = getattr(record, "gpufit_context", None) or current_log_context()
        pairs = " ".join(f"{key}={context[key]}" for key in CONTEXT_FIELDS if key in context)
        record.gpufit_ctx = f" [{pairs}]" if pairs else ""
        return self._redact(super().format(record))


#: Loggers of libraries that install handlers of their own; theirs go, ours format all.
_THIRD_PARTY_LOGGERS = ("uvicorn", "uvicorn.error", "uvicorn.access", "slack_bolt")


def configure_logging(settings: Settings, *, stream: TextIO | None = None) -> logging.Handler:
    """Send every log record through one redacting handler on the root logger.

    Idempotent: calling it again replaces the handler it installed before. Returns it.
    Uvicorn must be started with ``log_config=None`` so it keeps this configuration.
    """
    redactor = Redactor(settings.secret_values())
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.addFilter(RedactingFilter(redactor))
    if settings.log_format == "json":
        handler.setFormatter(JsonFormatter(redactor))
    else:
        handler.setFormatter(_TextFormatter(redactor))
    handler.set_name("gpufit")
    root = logging.getLogger()
    for old in [h for h in root.handlers if h.get_name() == "gpufit"]:
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(settings.log_level)
    for name in _THIRD_PARTY_LOGGERS:
        lib = logging.getLogger(name)
        lib.handlers.clear()
        lib.propagate = True
    # httpx logs every request URL at INFO (response_url included); keep it to warnings.
    logging.getLogger("httpx").setLevel(max(logging.WARNING, root.level))
    return handler


# ------------------------------------------------------------------------------ health check


def healthcheck(settings: Settings, *, timeout_s: float = 3.0) -> bool:
    """Whether this container's process answers ``/healthz`` on loopback.

    ``serve`` answers on ``GPUFIT_PORT``, the worker on ``GPUFIT_METRICS_PORT``; either counts,
    so one image-level ``HEALTHCHECK`` (``python -m bot.observability``) fits both commands.
    """
    for port in dict.fromkeys((settings.port, settings.metrics_port)):
        try:
            with urlopen(f"http://127.0.0.1:{port}/healthz", timeout=timeout_s) as response:
                if response.status == 200:
                    return True
        except (URLError, OSError):
            continue
    return False


if __name__ == "__main__":  # pragma: no cover - the container HEALTHCHECK entry point
    sys.exit(0 if healthcheck(Settings.from_env()) else 1)
