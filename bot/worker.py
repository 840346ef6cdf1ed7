"""``gpufit worker``: refresh the price feeds, evaluate every watch, post what crossed.

One pass (``run_once``) is:

1. **refresh** — ``catalog_source()``: in production, the feed layer's
   :meth:`~recommender.feeds.PriceStore.refresh` under its Redis refresh lock (one
   refresher across replicas; the others get ``locked_out`` and just load), then the catalog;
2. **evaluate** — each enabled watch's current price goes through the hysteresis rules in one
   Redis transaction, which claims an alert key on a crossing (:mod:`bot.alerts.store`);
3. **digest** — once a day per channel, after :data:`DIGEST_HOUR_UTC`, a summary of the
   channel's ``daily`` watches is claimed the same way;
4. **deliver** — every due alert is posted under a per-alert lease, paced per channel across
   replicas, with 429s and permanent errors handled (:mod:`bot.alerts.delivery`).

Any number of replicas may run passes at once: each alert is claimed once and posted at most
once (``docs/alerts.md`` says what is left of the window).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, TextIO

import redis.asyncio as aioredis
from slack_sdk.web.async_client import AsyncWebClient

from bot.alerts.codec import AlertRecord
from bot.alerts.delivery import (
    DELIVERY_DEADLINE_S,
    LEASE_S,
    POST_INTERVAL_S,
    POST_TIMEOUT_S,
    ChannelPacer,
    Delivery,
    Outcome,
)
from bot.alerts.evaluate import PricePoint, Verdict, WatchState, current_price
from bot.alerts.model import Watch
from bot.alerts.render import render_alert, render_digest
from bot.alerts.store import AlertQueue, WatchStore
from bot.health import start_metrics_server
from bot.metrics import Metrics, default_metrics
from bot.runtime import redis_url
from bot.settings import Settings, SettingsError
from recommender import Catalog, GpufitError
from recommender.feeds import FeedSource, FetchTimeouts, PriceStore, redis_client

__all__ = ["DIGEST_HOUR_UTC", "CatalogSource", "PassReport", "Worker", "run_worker"]

log = logging.getLogger(__name__)

CatalogSource = Callable[[], Awaitable[Catalog]]

#: Daily digests go out on the first pass at or after this hour (UTC).
DIGEST_HOUR_UTC = 9  # ours: morning in Europe, early enough for US east-coast stand-ups


@dataclass(frozen=True, slots=True)
class PassReport:
    """What one worker pass did (for logs and ``--once`` output)."""

    watches: int
    verdicts: dict[str, int]
    claimed: tuple[str, ...]
    outcomes: tuple[Outcome, ...] = field(default=())

    @property
    def sent(self) -> int:
        return sum(1 for o in self.outcomes if o.status == "sent")

    def summary(self) -> str:
        by = Counter(o.status for o in self.outcomes)
        parts = [f"{self.watches} watches", f"{len(self.claimed)} alerts claimed"]
        parts += [f"{n} {status}" for status, n in sorted(by.items()) if status != "skipped"]
        return ", ".join(parts)


class Worker:
    """The alert worker; inject everything that does I/O so a test can drive passes."""

    def __init__(
        self,
        *,
        redis: aioredis.Redis,
        catalog_source: CatalogSource,
        client_for: Callable[[str], AsyncWebClient],
        prefix: str = "gpufit",
        owner: str | None = None,
        post_interval_s: float = POST_INTERVAL_S,
        clock: Callable[[], float] = time.time,
        now: Callable[[], datetime] | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        metrics: Metrics | None = None,
        lease_s: float = LEASE_S,
        deadline_s: float = DELIVERY_DEADLINE_S,
        post_timeout_s: float = POST_TIMEOUT_S,
    ) -> None:
        self.watches = WatchStore(redis, prefix=prefix)
        self.queue = AlertQueue(redis, prefix=prefix)
        self._prefix = prefix
        self._catalog_source = catalog_source
        self._clock = clock
        self._now = now or (lambda: datetime.fromtimestamp(self._clock(), UTC))
        self.delivery = Delivery(
            queue=self.queue,
            watches=self.watches,
            pacer=ChannelPacer(redis, interval_s=post_interval_s, prefix=prefix),
            client_for=client_for,
            owner=owner or f"{socket.gethostname()}:{os.getpid()}:{id(self):x}",
            clock=clock,
            sleep=sleep,
            metrics=metrics,
            lease_s=lease_s,
            deadline_s=deadline_s,
            post_timeout_s=post_timeout_s,
        )

    def readiness(self) -> dict[str, Any]:
        """``/readyz``: the Slack token works (a workspace whose token failed is paused)."""
        paused = self.delivery.paused
        return {"checks": {"slack_token": not paused}, "paused": paused}

    async def run_once(self) -> PassReport:
        """One refresh-evaluate-deliver pass."""
        catalog = await self._catalog_source()
        now = self._now()
        verdicts: Counter[str] = Counter()
        claimed: list[str] = []
        points: dict[str, PricePoint | None] = {}
        watches = [w for w in await self.watches.all_watches() if w.enabled]
        for watch in watches:
            try:
                point = current_price(watch.spec, catalog, now=now)
            except GpufitError as exc:
                # The parser changed under a stored workload watch: say so instead of failing.
                await self.watches.disable(watch.id, f"cannot be evaluated: {exc.message}")
                verdicts["disabled"] += 1
                continue
            points[watch.id] = point
            evaluation = await self.watches.observe(
                watch, point, render=self._renderer(catalog, now)
            )
            verdicts[evaluation.verdict.value] += 1
            if evaluation.alert is not None:
                claimed.append(evaluation.alert)
        claimed += await self._claim_digests(watches, points, catalog, now)
        outcomes = await self.delivery.deliver_due()
        report = PassReport(len(watches), dict(verdicts), tuple(claimed), tuple(outcomes))
        log.info("worker pass: %s", report.summary())
        return report

    def _renderer(
        self, catalog: Catalog, now: datetime
    ) -> Callable[[Watch, Verdict, WatchState, PricePoint, str], AlertRecord]:
        def render(
            watch: Watch, verdict: Verdict, before: WatchState, point: PricePoint, key: str
        ) -> AlertRecord:
            old_price = before.alerted_price_usd if verdict is Verdict.DEEPER else None
            if old_price is None:
                old_price = before.last_price_usd
            message = render_alert(
                watch,
                verdict=verdict.value,
                old_price_usd=old_price,
                new=point,
                sources=catalog.sources,
                now=now,
            )
            return AlertRecord(
                key=key,
                watch_ids=(watch.id,),
                team_id=watch.team_id,
                channel_id=watch.channel_id,
                kind=verdict.value,
                text=message.text,
                blocks=message.blocks,
                extra={"old_usd": old_price, "new_usd": point.price_usd, "offer": point.key},
            )

        return render

    async def _claim_digests(
        self,
        watches: list[Watch],
        points: dict[str, PricePoint | None],
        catalog: Catalog,
        now: datetime,
    ) -> list[str]:
        if now.hour < DIGEST_HOUR_UTC:
            return []
        day = f"{now:%Y-%m-%d}"
        channels: dict[tuple[str, str], list[Watch]] = {}
        for w in watches:
            if w.daily_digest and w.id in points:
                channels.setdefault((w.team_id, w.channel_id), []).append(w)
        claimed: list[str] = []
        for (team, channel), ws in sorted(channels.items()):
            message = render_digest(
                [(w, points[w.id]) for w in ws], day=day, sources=catalog.sources
            )
            record = AlertRecord(
                key=f"{self._prefix}:digest:{team}:{channel}:{day}",
                watch_ids=tuple(w.id for w in ws),
                team_id=team,
                channel_id=channel,
                kind="digest",
                text=message.text,
                blocks=message.blocks,
            )
            if await self.queue.claim_digest(record):
                claimed.append(record.key)
        return claimed

    async def run_forever(self, *, interval_s: float, stop: asyncio.Event | None = None) -> None:
        """Passes every ``interval_s`` until ``stop`` is set; a failed pass is logged, not fatal."""
        stop = stop or asyncio.Event()
        while not stop.is_set():
            try:
                await self.run_once()
            except GpufitError as exc:
                log.error("worker pass failed: %s", exc.user_text())
            except Exception:  # keep the deployment alive; the next pass retries
                log.exception("worker pass crashed")
            try:
                await asyncio.wait_for(stop.wait(), timeout=interval_s)
            except TimeoutError:
                continue


# ------------------------------------------------------------------ composition (gpufit worker)


def _slack_client(settings: Settings) -> AsyncWebClient:
    """The worker's Web API client.

    Unlike the app's client it has no slack_sdk 429 handler: the worker handles 429 itself so
    that ``Retry-After`` pauses the channel for every replica (in Redis), not one process.
    """
    if settings.slack_bot_token is None:
        raise SettingsError(
            "The worker needs SLACK_BOT_TOKEN to post alerts.",
            hint="Set SLACK_BOT_TOKEN=xoxb-… (the bot token of the installed app).",
        )
    return AsyncWebClient(
        token=settings.slack_bot_token.get_secret_value(),
        base_url=settings.slack_api_url,
        timeout=round(POST_TIMEOUT_S),  # Delivery also bounds each call by it
    )


#: Bytes of feed document per offer in the most compact format gpufit reads (SkyPilot CSV:
#: 9.9 MiB of rows made 73,125 offers; bench/memory.py --offers). The byte cap
#: ``GPUFIT_FEED_MAX_OFFERS`` × this is checked while the document streams in, before it is
#: parsed, so an oversized feed never reaches memory as offers.
FEED_BYTES_PER_OFFER = 142


def feed_max_bytes(settings: Settings) -> int:
    """The largest feed document the worker fetches (``GPUFIT_FEED_MAX_OFFERS`` in bytes)."""
    return settings.feed_max_offers * FEED_BYTES_PER_OFFER


def _catalog_source(store: PriceStore, settings: Settings, metrics: Metrics) -> CatalogSource:
    sources = tuple(FeedSource.parse(spec) for spec in settings.feeds)
    max_bytes = feed_max_bytes(settings)
    over_cap = (
        f"over the feed cap: GPUFIT_FEED_MAX_OFFERS={settings.feed_max_offers} allows that "
        f"many offers and {max_bytes / 2**20:.1f} MiB per document; its last good prices are "
        "kept. Raise the "
        "cap only with the pods' memory limits (docs/operations.md, Feed cap)"
    )

    async def refresh_and_load() -> Catalog:
        if sources:
            # The feed layer's refresh lock makes one replica the refresher; the others are
            # "locked out" and just load what it stored.
            report = await store.refresh(
                sources,
                timeouts=FetchTimeouts(read_s=settings.feed_timeout_s),
                max_bytes=max_bytes,
                max_offers=settings.feed_max_offers,
            )
            for failed in report.failed:
                metrics.refresh_failed(failed.name)
                if failed.too_large:
                    log.error("feed %s is %s", failed.name, over_cap)
                else:
                    log.warning("feed %s failed to refresh: %s", failed.name, failed.error)
        catalog = await store.load_catalog()
        if len(catalog.offers) > settings.feed_max_offers:
            # Several feeds, each under the cap, can add up past it.
            log.error(
                "the catalog holds %d offers, more than GPUFIT_FEED_MAX_OFFERS=%d: the pods' "
                "memory limits are sized for the cap (docs/operations.md, Feed cap)",
                len(catalog.offers),
                settings.feed_max_offers,
            )
        for info in catalog.sources:
            if info.fetched_at is not None:
                metrics.feed_fetched(info.name, info.fetched_at)
        return catalog

    return refresh_and_load


#: Why the worker is not ready without feeds: it then refreshes nothing (docs/feed-format.md).
NO_FEEDS = "GPUFIT_FEEDS is empty: no live prices are refreshed; answers use the bundled snapshot"


def with_feeds(report: dict[str, Any], settings: Settings) -> dict[str, Any]:
    """``report`` (``/readyz``'s checks and details) with the ``feeds`` check added: a price
    feed is configured; when none is, ``feeds_reason`` says so."""
    checks = {**report.get("checks", {}), "feeds": bool(settings.feeds)}
    extra = {} if settings.feeds else {"feeds_reason": NO_FEEDS}
    return {**report, "checks": checks, **extra}


async def _run(settings: Settings, *, once: bool, out: TextIO) -> int:
    if not settings.feeds:
        log.warning("%s (set it, e.g. as in deploy/.env.example)", NO_FEEDS)
    client = _slack_client(settings)
    url = redis_url(settings)
    metrics = default_metrics()
    store = PriceStore.from_url(url)
    redis = redis_client(url, decode_responses=True)
    worker = Worker(
        redis=redis,
        catalog_source=_catalog_source(store, settings, metrics),
        client_for=lambda team_id: client,
        metrics=metrics,
    )
    try:
        if once:
            report = await worker.run_once()
            out.write(f"gpufit worker: {report.summary()}\n")
            return 0
        server = (
            start_metrics_server(
                settings.host,
                settings.metrics_port,
                metrics,
                ready=lambda: with_feeds(worker.readiness(), settings),
            )
            if settings.metrics_enabled
            else None
        )
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(sig, stop.set)
        try:
            await worker.run_forever(interval_s=settings.refresh_interval_s, stop=stop)
        finally:
            if server is not None:
                server.close()
        return 0
    finally:
        await redis.aclose()
        await store.aclose()


def run_worker(settings: Settings, *, once: bool, out: TextIO) -> int:
    """``gpufit worker [--once]``; returns the exit code.

    Raises:
        GpufitError: no bot token, Redis unreachable, or a feed setting is invalid.
    """
    return asyncio.run(_run(settings, once=once, out=out))
