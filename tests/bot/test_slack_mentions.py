"""``@gpufit`` in threads: answered in the thread, follow-ups refine, events answered once."""

from __future__ import annotations

import json
from typing import Any

import redis.asyncio as aioredis
from slack_bolt.async_app import AsyncApp

from bot.listeners.mentions import thread_key
from tests.bot.slack_requests import CHANNEL_ID, JSON, mention_body, request
from tests.fake_slack import TEAM_ID, FakeSlack


async def _mention(app: AsyncApp, text: str, *, event_id: str, ts: str, **kw: Any) -> None:
    body = mention_body(text, event_id=event_id, ts=ts, **kw)
    response = await app.async_dispatch(request(body, JSON, **kw.pop("sign", {})))
    assert response.status == 200


def _text(call: Any) -> str:
    return json.dumps(call.body.get("blocks", []), ensure_ascii=False) + call.body["text"]


class TestThreadReplies:
    async def test_a_mention_in_a_thread_is_answered_in_that_thread(
        self, app: AsyncApp, fake_slack: FakeSlack
    ) -> None:
        """The reply goes to the mention's channel with ``thread_ts`` of the thread."""
        await _mention(
            app,
            "we have $3k, can we LoRA llama-3-70b?",
            event_id="Ev01",
            ts="1700000100.000200",
            thread_ts="1700000000.000100",
        )
        [post] = await fake_slack.wait_for("chat.postMessage")
        assert post.body["channel"] == CHANNEL_ID
        assert post.body["thread_ts"] == "1700000000.000100"
        text = _text(post)
        assert "Llama 3 70B" in text
        assert "budget $3,000" in text

    async def test_a_top_level_mention_starts_a_thread_under_itself(
        self, app: AsyncApp, fake_slack: FakeSlack
    ) -> None:
        """Without ``thread_ts`` the reply threads under the mention (``thread_ts`` = its ts)."""
        await _mention(app, "13B full finetune 2 days", event_id="Ev02", ts="1700000200.000300")
        [post] = await fake_slack.wait_for("chat.postMessage")
        assert post.body["thread_ts"] == "1700000200.000300"

    async def test_a_mention_that_is_not_a_workload_gets_the_friendly_error_in_thread(
        self, app: AsyncApp, fake_slack: FakeSlack
    ) -> None:
        """Bad input in a thread is answered there, with an example."""
        await _mention(app, "hello there", event_id="Ev03", ts="1700000300.000100")
        [post] = await fake_slack.wait_for("chat.postMessage")
        assert post.body["thread_ts"] == "1700000300.000100"
        assert "Didn't understand" in _text(post)
        assert "Try:" in _text(post)


class TestFollowUps:
    THREAD = "1700001000.000100"

    async def _ask_then(self, app: AsyncApp, fake: FakeSlack, follow_up: str) -> str:
        await _mention(app, "we have $3k, can we LoRA llama-3-70b?", event_id="EvQ", ts=self.THREAD)
        await fake.wait_for("chat.postMessage", 1)
        await _mention(
            app, follow_up, event_id="EvF", ts="1700001100.000100", thread_ts=self.THREAD
        )
        posts = await fake.wait_for("chat.postMessage", 2)
        assert posts[1].body["thread_ts"] == self.THREAD
        return _text(posts[1])

    async def test_what_about_spot_refines_to_spot_only(
        self, app: AsyncApp, fake_slack: FakeSlack
    ) -> None:
        """ "what about spot?" keeps the model and budget and shows spot offers only."""
        text = await self._ask_then(app, fake_slack, "what about spot?")
        assert "Llama 3 70B" in text
        assert "budget $3,000" in text
        assert "spot: only" in text
        assert "(on-demand)" not in text

    async def test_a_new_budget_overrides_the_old_one(
        self, app: AsyncApp, fake_slack: FakeSlack
    ) -> None:
        """ "and with a $5k budget?" replaces the $3k, and the old $3k is not "not understood"."""
        text = await self._ask_then(app, fake_slack, "and with a $5k budget?")
        assert "budget $5,000" in text
        not_understood = [t for t in text.split('"') if t.startswith("Not understood")]
        assert not any("$3k" in t for t in not_understood), not_understood

    async def test_on_lambda_only_restricts_the_provider(
        self, app: AsyncApp, fake_slack: FakeSlack
    ) -> None:
        """ "on lambda only" keeps the question and limits it to one provider."""
        text = await self._ask_then(app, fake_slack, "on lambda only")
        assert "providers: lambda" in text
        assert "Llama 3 70B" in text

    async def test_the_thread_question_is_stored_with_a_ttl(
        self, app: AsyncApp, fake_slack: FakeSlack, redis: aioredis.Redis
    ) -> None:
        """The merged question is kept per (team, channel, thread) and expires."""
        await self._ask_then(app, fake_slack, "what about spot?")
        key = thread_key(TEAM_ID, CHANNEL_ID, self.THREAD)
        stored = (await redis.get(key)).decode()
        assert stored.startswith("spot only")
        assert "llama-3-70b" in stored
        assert 0 < await redis.ttl(key) <= 7 * 24 * 3600


class TestEventDedupe:
    async def test_a_retried_event_is_answered_once(
        self, app: AsyncApp, fake_slack: FakeSlack
    ) -> None:
        """The same event id delivered twice (the second as Slack's retry) posts one reply."""
        body = mention_body("13B lora 1 day", event_id="EvDup", ts="1700002000.000100")
        first = await app.async_dispatch(request(body, JSON))
        retry = request(body, JSON)
        retry.headers["x-slack-retry-num"] = ["1"]
        retry.headers["x-slack-retry-reason"] = ["http_timeout"]
        second = await app.async_dispatch(retry)
        assert first.status == second.status == 200
        await fake_slack.wait_for("chat.postMessage")
        # a third, unrelated event proves the pipeline drained before we count
        await _mention(app, "7B lora 1 day", event_id="EvOther", ts="1700002100.000100")
        posts = await fake_slack.wait_for("chat.postMessage", 2)
        assert [p.body["thread_ts"] for p in fake_slack.calls("chat.postMessage")] == [
            "1700002000.000100",
            "1700002100.000100",
        ]
        assert len(posts) == 2

    async def test_a_retry_whose_first_delivery_never_arrived_is_processed(
        self, app: AsyncApp, fake_slack: FakeSlack
    ) -> None:
        """A retry header alone never drops an event: an unseen event id is answered."""
        body = mention_body("13B lora 1 day", event_id="EvLost", ts="1700003000.000100")
        retry = request(body, JSON)
        retry.headers["x-slack-retry-num"] = ["2"]
        retry.headers["x-slack-retry-reason"] = ["http_error"]
        assert (await app.async_dispatch(retry)).status == 200
        [post] = await fake_slack.wait_for("chat.postMessage")
        assert post.body["thread_ts"] == "1700003000.000100"


class TestSlackTrouble:
    async def test_a_rate_limited_post_is_retried_after_retry_after(
        self, app: AsyncApp, fake_slack: FakeSlack
    ) -> None:
        """A 429 with Retry-After on chat.postMessage is retried by the client, and lands."""
        fake_slack.fail_next("chat.postMessage", status=429, retry_after=0)
        await _mention(app, "13B lora 1 day", event_id="Ev429", ts="1700004000.000100")
        posts = await fake_slack.wait_for("chat.postMessage", 2)
        assert posts[0].body == posts[1].body

    async def test_a_channel_error_is_logged_not_crashing_the_app(
        self, app: AsyncApp, fake_slack: FakeSlack
    ) -> None:
        """``channel_not_found`` on the reply fails it for good (no retry, no notice into a
        channel the bot cannot reach): the app answers the next event."""
        fake_slack.fail_next("chat.postMessage", 1, status=200, error="channel_not_found")
        await _mention(app, "13B lora 1 day", event_id="EvGone", ts="1700005000.000100")
        await _mention(app, "7B lora 1 day", event_id="EvNext", ts="1700005100.000100")
        posts = await fake_slack.wait_for("chat.postMessage", 2)
        assert sorted(p.body["thread_ts"] for p in posts) == [
            "1700005000.000100",
            "1700005100.000100",
        ]
