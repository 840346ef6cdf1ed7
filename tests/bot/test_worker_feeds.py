"""Live by default: a worker without price feeds says so, in its log and on /readyz; a feed
over the cap is refused, with a log line that says why."""

from __future__ import annotations

from pathlib import Path

import httpx
import redis.asyncio as aioredis

from bot.health import start_metrics_server
from bot.settings import Settings
from bot.worker import NO_FEEDS, Worker, with_feeds
from tests.bot.alerts_helpers import ChangingFeed, FakeSlack, h100x8, redis, redis_server, slack
from tests.bot.cli_helpers import worker_once

__all__ = ["redis", "redis_server", "slack"]  # fixtures used by name below

LIVE = "aws=https://raw.githubusercontent.com/skypilot-org/skypilot-catalog/master/catalogs/v8/aws/vms.csv"


def _readyz(settings: Settings, redis: aioredis.Redis, slack: FakeSlack) -> httpx.Response:
    """A real worker's own checks (slack_token) with the feeds check added, as _run wires them."""
    worker = Worker(
        redis=redis, catalog_source=ChangingFeed(h100x8(19.0)), client_for=lambda _: slack.client()
    )
    ready = lambda: with_feeds(worker.readiness(), settings)  # noqa: E731 - as in _run
    server = start_metrics_server("127.0.0.1", 0, ready=ready)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{server.port}", timeout=5) as client:
            return client.get("/readyz")
    finally:
        server.close()


class TestReadyz:
    def test_no_feeds_is_not_ready_with_the_reason(
        self, redis: aioredis.Redis, slack: FakeSlack
    ) -> None:
        response = _readyz(Settings(feeds=()), redis, slack)
        assert response.status_code == 503
        doc = response.json()
        assert doc["checks"] == {"slack_token": True, "feeds": False}
        assert doc["feeds_reason"] == NO_FEEDS

    def test_a_feed_is_ready(self, redis: aioredis.Redis, slack: FakeSlack) -> None:
        response = _readyz(Settings(feeds=(LIVE,)), redis, slack)
        assert response.status_code == 200
        assert response.json() == {
            "status": "ready",
            "checks": {"slack_token": True, "feeds": True},
            "paused": {},
        }


async def test_the_worker_warns_when_it_has_no_feeds(redis_server: str, slack: FakeSlack) -> None:
    code, _, err = await worker_once(redis_server, slack.url, GPUFIT_FEEDS="")
    assert code == 0, err
    assert "GPUFIT_FEEDS is empty" in err


#: A SkyPilot Lambda row (format of tests/feeds/data/skypilot_lambda.csv), ~250 bytes.
_HEADER = (
    "InstanceType,AcceleratorName,AcceleratorCount,vCPUs,MemoryGiB,Price,Region,GpuInfo,SpotPrice"
)
_ROW = (
    "gpu_8x_h100_sxm5,H100,8.0,208.0,1800.0,{price},us-east-1,\"{{'Gpus': [{{'Name': 'H100', "
    "'Manufacturer': 'NVIDIA', 'Count': 8.0, 'MemoryInfo': {{'SizeInMiB': 81920}}}}], "
    "'TotalGpuMemoryInMiB': 81920}}\","
)


def _feed(path: Path, rows: int) -> str:
    path.write_text("\n".join([_HEADER, *(_ROW.format(price=20 + i / 100) for i in range(rows))]))
    return f"lambda={path}"


class TestFeedCap:
    async def test_a_feed_over_the_cap_is_refused_with_a_clear_log(
        self, redis_server: str, slack: FakeSlack, tmp_path: Path
    ) -> None:
        """A document larger than GPUFIT_FEED_MAX_OFFERS allows is not read (its last good
        prices are kept), and the log names the setting and the size it allows."""
        big = _feed(tmp_path / "big.csv", 200)  # ~50 kB; 100 offers allow 14.2 kB
        code, _, err = await worker_once(
            redis_server, slack.url, GPUFIT_FEEDS=big, GPUFIT_FEED_MAX_OFFERS="100"
        )
        assert code == 0, err
        assert "feed lambda is over the feed cap: GPUFIT_FEED_MAX_OFFERS=100 allows" in err
        assert "last good prices are kept" in err

    async def test_a_feed_under_the_cap_is_read(
        self, redis_server: str, slack: FakeSlack, tmp_path: Path
    ) -> None:
        small = _feed(tmp_path / "small.csv", 20)
        code, _, err = await worker_once(
            redis_server, slack.url, GPUFIT_FEEDS=small, GPUFIT_FEED_MAX_OFFERS="100"
        )
        assert code == 0, err
        assert "feed cap" not in err
        assert "failed to refresh" not in err
