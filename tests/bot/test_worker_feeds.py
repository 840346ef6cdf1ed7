"""Live by default: a worker without price feeds says so, in its log and on /readyz."""

from __future__ import annotations

import httpx

from bot.health import start_metrics_server
from bot.settings import Settings
from bot.worker import NO_FEEDS, with_feeds
from tests.bot.alerts_helpers import FakeSlack, redis_server, slack
from tests.bot.test_worker_cli import _worker_once

__all__ = ["redis_server", "slack"]  # fixtures used by name below

LIVE = "aws=https://raw.githubusercontent.com/skypilot-org/skypilot-catalog/master/catalogs/v8/aws/vms.csv"


def _readyz(settings: Settings) -> httpx.Response:
    # The worker's own checks (slack_token) with the feeds check added, as _run wires them.
    base = {"checks": {"slack_token": True}, "paused": []}
    server = start_metrics_server("127.0.0.1", 0, ready=lambda: with_feeds(base, settings))
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{server.port}", timeout=5) as client:
            return client.get("/readyz")
    finally:
        server.close()


class TestReadyz:
    def test_no_feeds_is_not_ready_with_the_reason(self) -> None:
        response = _readyz(Settings(feeds=()))
        assert response.status_code == 503
        doc = response.json()
        assert doc["checks"] == {"slack_token": True, "feeds": False}
        assert doc["feeds_reason"] == NO_FEEDS

    def test_a_feed_is_ready(self) -> None:
        response = _readyz(Settings(feeds=(LIVE,)))
        assert response.status_code == 200
        assert response.json() == {
            "status": "ready",
            "checks": {"slack_token": True, "feeds": True},
            "paused": [],
        }


async def test_the_worker_warns_when_it_has_no_feeds(redis_server: str, slack: FakeSlack) -> None:
    code, _, err = await _worker_once(redis_server, slack.url, GPUFIT_FEEDS="")
    assert code == 0, err
    assert "GPUFIT_FEEDS is empty" in err
