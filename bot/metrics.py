"""Prometheus metrics: what an operator can alert on in a running gpufit.

:class:`Metrics` owns one Prometheus registry and every gpufit metric; the composition root
(``gpufit serve`` / ``gpufit worker``) builds it once. Both serve it on ``/metrics`` of
``GPUFIT_METRICS_PORT`` with :func:`bot.health.start_metrics_server`, never on the public
Slack port.
docs/operations.md says what each metric means and which alert watches it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from datetime import datetime
from functools import lru_cache
from typing import Literal

from prometheus_client import (
    CollectorRegistry,
    Counter,
    Histogram,
    PlatformCollector,
    ProcessCollector,
)
from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from recommender.feeds import utc_now

__all__ = [
    "REQUEST_KINDS",
    "Metrics",
    "RequestKind",
    "default_metrics",
    "render_metrics",
]

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
        clock: Callable[[], datetime] = utc_now,
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
