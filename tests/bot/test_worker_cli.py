"""`gpufit worker --once` as a process: real Redis, the fake Slack, the bundled prices."""

from __future__ import annotations

import redis.asyncio as aioredis

from bot.alerts import WatchStore, parse_watch
from tests.bot.alerts_helpers import FakeSlack, redis, redis_server, slack
from tests.bot.cli_helpers import worker_once
from tests.factories import NOW

__all__ = ["redis", "redis_server", "slack"]  # fixtures used by name below


class TestWorkerOnce:
    async def test_one_pass_posts_a_crossing_once(
        self, redis: aioredis.Redis, redis_server: str, slack: FakeSlack
    ) -> None:
        """A pass posts an alert for a watch the bundled prices satisfy; a second pass does not."""
        text = "watch 8xH100 below $1000/h"
        await WatchStore(redis).add(
            team_id="T1",
            channel_id="C1",
            created_by="U1",
            spec=parse_watch(text),
            text=text,
            now=NOW,
            current=None,
        )
        code, out, err = await worker_once(redis_server, slack.url)
        assert code == 0, err
        assert "1 alerts claimed" in out
        assert "1 sent" in out
        [post] = slack.posts("C1")
        assert "Price drop" in post.body["text"]
        code, out, _ = await worker_once(redis_server, slack.url)
        assert code == 0
        assert len(slack.posts()) == 1

    async def test_without_a_token_exits_1_with_a_hint(
        self, redis_server: str, slack: FakeSlack
    ) -> None:
        """Without SLACK_BOT_TOKEN the worker says what to set instead of a traceback."""
        code, _, err = await worker_once(redis_server, slack.url, SLACK_BOT_TOKEN="")
        assert code == 1
        assert "SLACK_BOT_TOKEN" in err
        assert "Traceback" not in err
