"""Buttons: more options, spot only, on-demand only, watch price, post to channel."""

from __future__ import annotations

import json
from typing import Any

import pytest
from slack_bolt.async_app import AsyncApp

from tests.bot.slack_requests import CHANNEL_ID, FORM, action_body, answer_rows, request
from tests.fake_slack import FakeSlack

QUERY = "13B full finetune 2 days"


async def _click(
    app: AsyncApp, fake: FakeSlack, action_id: str, value: str = QUERY, **kw: Any
) -> None:
    body = action_body(action_id, value, response_url=fake.hook_url("act"), **kw)
    response = await app.async_dispatch(request(body, FORM))
    assert response.status == 200, response.body


def _options(message: dict[str, Any]) -> list[str]:
    """The options of a short answer: its table's rows."""
    return [row for row, _ in answer_rows(message)]


def _detailed_options(message: dict[str, Any]) -> list[str]:
    """The options of a detailed answer: its option sections."""
    return [
        b["text"]["text"]
        for b in message["blocks"]
        if str(b.get("block_id", "")).startswith("option_")
    ]


class TestRefineButtons:
    async def test_more_options_replaces_the_answer_with_a_longer_list(
        self, app: AsyncApp, fake_slack: FakeSlack
    ) -> None:
        """ "More options" rewrites the ephemeral answer in place with more ranked options."""
        await _click(app, fake_slack, "gpufit_more")
        [hook] = await fake_slack.wait_for("hook")
        assert hook.body["replace_original"] is True
        assert len(_options(hook.body)) > 5

    async def test_spot_only_shows_only_spot_offers(
        self, app: AsyncApp, fake_slack: FakeSlack
    ) -> None:
        """ "Spot only" re-answers the same question with spot offers only."""
        await _click(app, fake_slack, "gpufit_spot_only")
        [hook] = await fake_slack.wait_for("hook")
        rows = answer_rows(hook.body)
        assert rows
        assert all(spot for _, spot in rows)
        assert "spot only" in json.dumps(hook.body["blocks"])

    async def test_on_demand_only_shows_no_spot_offers(
        self, app: AsyncApp, fake_slack: FakeSlack
    ) -> None:
        """ "On-demand only" re-answers the same question without spot offers."""
        await _click(app, fake_slack, "gpufit_on_demand_only")
        [hook] = await fake_slack.wait_for("hook")
        rows = answer_rows(hook.body)
        assert rows
        assert not any(spot for _, spot in rows)

    async def test_a_button_on_a_public_thread_answer_replies_in_that_thread(
        self, app: AsyncApp, fake_slack: FakeSlack
    ) -> None:
        """A click on the bot's public reply in a thread answers in the thread, not in place."""
        await _click(
            app,
            fake_slack,
            "gpufit_spot_only",
            ephemeral=False,
            message_ts="1700000500.000200",
            thread_ts="1700000400.000100",
        )
        [post] = await fake_slack.wait_for("chat.postMessage")
        assert post.body["channel"] == CHANNEL_ID
        assert post.body["thread_ts"] == "1700000400.000100"
        assert fake_slack.calls("hook") == []


class TestDetailsButton:
    async def test_details_add_the_whole_answer_under_the_short_one(
        self, app: AsyncApp, fake_slack: FakeSlack
    ) -> None:
        """ "Details" leaves the short answer in place and adds the detailed one, to the
        clicker: the workload read, memory, each option's layout and reasons, its Watch and
        Launch buttons."""
        await _click(app, fake_slack, "gpufit_details")
        [hook] = await fake_slack.wait_for("hook")
        assert hook.body["response_type"] == "ephemeral"
        assert hook.body["replace_original"] is False
        text = json.dumps(hook.body["blocks"], ensure_ascii=False)
        for part in ("Workload:", "Memory (option 1)", "Layout:", "Why:", "Assumed:"):
            assert part in text, part
        options = [b for b in hook.body["blocks"] if b.get("block_id", "").startswith("option_")]
        assert 3 <= len(options) <= 5
        assert all(b["accessory"]["action_id"] == "gpufit_watch" for b in options)

    async def test_on_a_public_answer_they_go_to_its_thread(
        self, app: AsyncApp, fake_slack: FakeSlack
    ) -> None:
        await _click(
            app,
            fake_slack,
            "gpufit_details",
            ephemeral=False,
            message_ts="1700000500.000200",
            thread_ts="1700000400.000100",
        )
        [post] = await fake_slack.wait_for("chat.postMessage")
        assert post.body["thread_ts"] == "1700000400.000100"
        assert _detailed_options(post.body)
        assert fake_slack.calls("hook") == []


class TestPostToChannel:
    async def test_post_to_channel_posts_the_answer_for_everyone(
        self, app: AsyncApp, fake_slack: FakeSlack
    ) -> None:
        """The answer goes to the channel (in_channel), as a new message, without a post button."""
        await _click(app, fake_slack, "gpufit_post")
        [hook] = await fake_slack.wait_for("hook")
        assert hook.body["response_type"] == "in_channel"
        assert hook.body["replace_original"] is False
        assert _options(hook.body)
        assert "gpufit_post" not in json.dumps(hook.body["blocks"])

    async def test_a_double_click_posts_once(self, app: AsyncApp, fake_slack: FakeSlack) -> None:
        """Two clicks on the same button of the same message post one message."""
        await _click(app, fake_slack, "gpufit_post")
        await _click(app, fake_slack, "gpufit_post")
        await fake_slack.wait_for("hook")
        await _click(app, fake_slack, "gpufit_post", message_ts="1700009999.000100")
        hooks = await fake_slack.wait_for("hook", 2)
        assert len(fake_slack.calls("hook")) == len(hooks) == 2


class TestWatchButton:
    async def test_watch_price_routes_to_the_alerts_seam_once(
        self, app: AsyncApp, fake_slack: FakeSlack
    ) -> None:
        """ "Watch price" reaches the alerts handler with the offer, once per double click."""
        value = json.dumps({"q": QUERY, "offer": "aws/p5.48xlarge/8xH100-SXM-80GB/us-east-1//od"})
        await _click(app, fake_slack, "gpufit_watch", value)
        await _click(app, fake_slack, "gpufit_watch", value)
        [hook] = await fake_slack.wait_for("hook")
        assert "Sorry, something went wrong" not in hook.body["text"]
        assert not _options(hook.body)
        await _click(app, fake_slack, "gpufit_more")  # drains: one more reply, then count
        await fake_slack.wait_for("hook", 2)
        assert len(fake_slack.calls("hook")) == 2


class TestLaunchFilesButton:
    """ "Launch files": the clicked option's task.yaml and accelerate.yaml as code blocks."""

    @staticmethod
    async def _launch_value(
        app: AsyncApp, fake: FakeSlack, rank: int = 1, query: str = QUERY
    ) -> str:
        """The value of option ``rank``'s launch button on the detailed answer to ``query``,
        spot only (the short answer's Details button shows it)."""
        await _click(app, fake, "gpufit_details", f"{query} spot only")
        [hook] = await fake.wait_for("hook")
        for block in hook.body["blocks"]:
            if block.get("block_id") == f"launch_{rank}":
                [button] = block["elements"]
                assert button["action_id"] == "gpufit_launch"
                assert button["text"]["text"] == "Launch files"
                return str(button["value"])
        raise AssertionError("no launch button")

    async def test_ephemeral_answer_gets_the_files_ephemerally(
        self, app: AsyncApp, fake_slack: FakeSlack
    ) -> None:
        value = await self._launch_value(app, fake_slack)
        await _click(app, fake_slack, "gpufit_launch", value)
        hooks = await fake_slack.wait_for("hook", count=2)
        body = hooks[-1].body
        assert body["response_type"] == "ephemeral"
        assert body["replace_original"] is False  # the answer stays
        text = json.dumps(body["blocks"])
        assert "*task.yaml*" in text
        assert "*accelerate.yaml*" in text
        assert "```" in text
        assert "use_spot: true" in text
        assert "distributed_type:" in text
        assert "SKYPILOT_NODE_IPS" in text

    async def test_public_thread_answer_gets_the_files_in_the_thread(
        self, app: AsyncApp, fake_slack: FakeSlack
    ) -> None:
        value = await self._launch_value(app, fake_slack)
        await _click(
            app,
            fake_slack,
            "gpufit_launch",
            value,
            ephemeral=False,
            message_ts="1700000500.000200",
            thread_ts="1700000400.000100",
        )
        [post] = await fake_slack.wait_for("chat.postMessage")
        assert post.body["thread_ts"] == "1700000400.000100"
        assert "accelerate.yaml" in json.dumps(post.body["blocks"])

    async def test_a_button_an_earlier_version_posted_still_works(
        self, app: AsyncApp, fake_slack: FakeSlack
    ) -> None:
        """Its key has no GPUs in it (provider/instance/region/zone/kind): the option it
        names is found by that key and its files come back."""
        value = json.loads(await self._launch_value(app, fake_slack))
        parts = value["offer"].split("/")
        assert len(parts) == 6
        value["offer"] = "/".join(parts[:2] + parts[3:])
        await _click(app, fake_slack, "gpufit_launch", json.dumps(value))
        hooks = await fake_slack.wait_for("hook", count=2)
        assert "*task.yaml*" in json.dumps(hooks[-1].body["blocks"])

    async def test_an_offer_no_longer_in_the_catalog_gets_a_notice(
        self, app: AsyncApp, fake_slack: FakeSlack
    ) -> None:
        value = json.dumps({"q": QUERY, "n": 1, "t": 5, "offer": "aws/gone/us-east-1//od"})
        await _click(app, fake_slack, "gpufit_launch", value)
        [hook] = await fake_slack.wait_for("hook")
        text = json.dumps(hook.body["blocks"])
        assert "no longer offered" in text
        assert "task.yaml" not in text

    async def test_a_malformed_value_gets_a_notice(
        self, app: AsyncApp, fake_slack: FakeSlack
    ) -> None:
        await _click(app, fake_slack, "gpufit_launch", '{"q": "x", "n": 9, "t": 1}')
        [hook] = await fake_slack.wait_for("hook")
        assert "out of date" in json.dumps(hook.body["blocks"])

    async def test_a_pipeline_plan_gets_its_torchtitan_config(
        self, app: AsyncApp, fake_slack: FakeSlack
    ) -> None:
        query = "llama 3.1 70b pretrain on 100B tokens tp 8 pp 2"
        value = await self._launch_value(app, fake_slack, query=query)
        await _click(app, fake_slack, "gpufit_launch", value)
        hooks = await fake_slack.wait_for("hook", count=2)
        text = json.dumps(hooks[-1].body["blocks"])
        assert "*torchtitan.toml*" in text
        assert "pipeline_parallel_degree = 2" in text
        assert "accelerate.yaml" not in text

    async def test_a_plan_no_supported_framework_runs_gets_a_notice_naming_the_gap(
        self, app: AsyncApp, fake_slack: FakeSlack
    ) -> None:
        query = "llama-3-70b pretrain on 100B tokens tp 8 pp 2"
        value = await self._launch_value(app, fake_slack, query=query)
        await _click(app, fake_slack, "gpufit_launch", value)
        hooks = await fake_slack.wait_for("hook", count=2)
        text = json.dumps(hooks[-1].body["blocks"])
        assert "No launch files for option 1" in text
        assert "no model definition for Llama 3 70B" in text  # torchtitan's are Llama 3.1's
        assert "task.yaml" not in text

    @pytest.mark.parametrize("n", ["Infinity", "-Infinity", "NaN", "1e999", "1.5", '"1"', "true"])
    async def test_a_count_that_is_no_whole_number_gets_a_notice(
        self, app: AsyncApp, fake_slack: FakeSlack, n: str
    ) -> None:
        """Issue #34: ``"n": Infinity`` was unhandled (int() of an infinite float raises)."""
        value = '{"q": "%s", "n": %s, "t": 5, "offer": "x"}' % (QUERY, n)  # noqa: UP031
        await _click(app, fake_slack, "gpufit_launch", value)
        [hook] = await fake_slack.wait_for("hook")
        assert "out of date" in json.dumps(hook.body["blocks"])
