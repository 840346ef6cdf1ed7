"""``/gpufit``: ``help`` and ``gpus`` in the ack; anything else acked "Working on it…" at
once and answered through ``response_url`` by Bolt's lazy listener."""

from __future__ import annotations

import asyncio
import itertools
import json
from dataclasses import replace
from typing import Any

from slack_bolt.async_app import AsyncApp

from bot.app import build_app
from bot.render.short import SHORT_CHARS
from bot.services import Services
from bot.settings import Settings
from tests.bot.slack_requests import (
    FORM,
    USER_ID,
    answer_rows,
    command_body,
    request,
    visible_chars,
)
from tests.fake_slack import FakeSlack


def _app_with(settings: Settings, services: Services, **changes: Any) -> AsyncApp:
    """The app built on a copy of ``services`` with ``changes`` (services are frozen)."""
    return build_app(settings, replace(services, **changes))


def _ack(response: Any) -> dict[str, Any]:
    assert response.status == 200, response.body
    assert response.headers["content-type"] == ["application/json;charset=utf-8"]
    body: dict[str, Any] = json.loads(response.body)
    return body


def _all_text(message: dict[str, Any]) -> str:
    return json.dumps(message.get("blocks", []), ensure_ascii=False) + message.get("text", "")


_HOOKS = itertools.count()


async def _ack_of(app: AsyncApp, fake: FakeSlack, text: str) -> tuple[dict[str, Any], str]:
    """The ack of ``/gpufit text``, and the name of the response_url its reply goes to."""
    name = f"cmd{next(_HOOKS)}"
    body = command_body(text, response_url=fake.hook_url(name))
    return _ack(await app.async_dispatch(request(body, FORM))), name


async def _command(app: AsyncApp, fake: FakeSlack, text: str) -> dict[str, Any]:
    """What the user is answered: the ack says "Working on it…", and the lazy listener's
    reply arrives at the command's response_url."""
    ack, name = await _ack_of(app, fake, text)
    assert ack["response_type"] == "ephemeral"
    assert "Working on it" in ack["text"]
    [hook] = await fake.wait_for(f"hook:{name}")
    return hook.body


class TestAsk:
    async def test_a_question_is_acked_at_once_then_answered_at_response_url(
        self, app: AsyncApp, fake_slack: FakeSlack
    ) -> None:
        """The ack is "Working on it…"; the short answer follows at response_url, ephemeral,
        as a new message. Its first block is the answer, then what was read, the table and
        the prices' source; it stays under 1,500 characters (issue #39), the rest behind
        Details."""
        reply = await _command(app, fake_slack, "llama-3-70b qlora on 2B tokens under $3k")
        assert reply["response_type"] == "ephemeral"
        assert reply["replace_original"] is False
        assert reply["text"].startswith("gpufit: ")
        first = reply["blocks"][0]["text"]["text"]
        assert first.startswith("*Best: ")
        assert "in total" in first
        assert "$3,000 budget" in first
        text = _all_text(reply)
        for part in ("Llama 3 70B", "budget $3,000", "$/h", "total", "Prices:", "Details"):
            assert part in text, part
        assert visible_chars(reply) <= SHORT_CHARS
        await asyncio.sleep(0.05)
        assert len(fake_slack.calls("hook")) == 1

    async def test_the_answer_shows_three_to_five_ranked_options(
        self, app: AsyncApp, fake_slack: FakeSlack
    ) -> None:
        """Between three and five ranked options, in a table that fits 80 columns."""
        ack = await _command(app, fake_slack, "13B full finetune 2 days")
        rows = answer_rows(ack)
        assert 3 <= len(rows) <= 5
        assert [row.split()[0] for row, _ in rows] == [str(i) for i in range(1, len(rows) + 1)]
        assert max(len(row) for row, _ in rows) <= 80

    async def test_the_answer_carries_refine_and_post_buttons_with_the_query(
        self, app: AsyncApp, fake_slack: FakeSlack
    ) -> None:
        """The buttons carry the question in their value; action ids carry no state."""
        ack = await _command(app, fake_slack, "13B full finetune 2 days")
        [actions] = [b for b in ack["blocks"] if b.get("block_id") == "gpufit_refine"]
        ids = {e["action_id"]: e["value"] for e in actions["elements"]}
        assert set(ids) >= {"gpufit_spot_only", "gpufit_on_demand_only", "gpufit_post"}
        assert set(ids.values()) == {"13B full finetune 2 days"}

    async def test_a_repeated_question_is_answered_from_the_cache_identically(
        self, app: AsyncApp, fake_slack: FakeSlack, services: Services
    ) -> None:
        """The same question against the same catalog gets the same answer, computed once."""
        first = await _command(app, fake_slack, "13B full finetune 2 days")
        misses = services.answers.misses
        second = await _command(app, fake_slack, "13B full finetune 2 days")
        assert second == first
        assert services.answers.misses == misses
        assert services.answers.hits >= 1

    async def test_a_slow_catalog_does_not_hold_the_ack(
        self, settings: Settings, fake_slack: FakeSlack, services: Services
    ) -> None:
        """The ack goes out before the catalog has loaded (here it takes 0.3 s); the answer
        follows at response_url, and the work after the ack is drained at shutdown."""
        current = services.catalog
        loaded = asyncio.Event()

        async def slow() -> Any:
            await asyncio.sleep(0.3)
            loaded.set()
            return await current()

        slow_app = _app_with(settings, services, catalog=slow)
        ack, name = await _ack_of(slow_app, fake_slack, "13B full finetune 2 days")
        assert "Working on it" in ack["text"]
        assert not loaded.is_set()
        [hook] = await fake_slack.wait_for(f"hook:{name}")
        assert hook.body["response_type"] == "ephemeral"
        assert hook.body["replace_original"] is False
        assert hook.body["text"].startswith("gpufit: ")
        assert await services.background.drain(5) == 0  # finished, nothing cancelled


class TestSubcommands:
    async def test_help_is_answered_in_the_ack(self, app: AsyncApp, fake_slack: FakeSlack) -> None:
        """``help`` (and an empty command) answer at once, with examples."""
        for text in ("help", ""):
            ack, _ = await _ack_of(app, fake_slack, text)
            assert ack["response_type"] == "ephemeral"
            assert "/gpufit 13B full finetune 2 days" in _all_text(ack)
        assert fake_slack.calls("hook") == []

    async def test_gpus_lists_the_gpu_table(self, app: AsyncApp, fake_slack: FakeSlack) -> None:
        """``gpus`` answers at once with the GPUs gpufit knows."""
        ack, _ = await _ack_of(app, fake_slack, "gpus")
        text = _all_text(ack)
        await asyncio.sleep(0.05)
        assert fake_slack.calls("hook") == []
        assert "H100" in text
        assert "A100" in text

    async def test_prices_lists_the_cheapest_offers_for_a_gpu(
        self, app: AsyncApp, fake_slack: FakeSlack
    ) -> None:
        """``prices h100 l4`` answers with a table per GPU, cheapest per GPU-hour first."""
        ack = await _command(app, fake_slack, "prices h100 l4")
        tables = [
            b["text"]["text"].split("```")[1]
            for b in ack["blocks"]
            if b["type"] == "section" and "```" in b["text"]["text"]
        ]
        assert len(tables) == 2
        for table in tables:
            header, *rows = [r for r in table.splitlines() if not r.lstrip().startswith("!")]
            at = header.index("$/GPU-h")
            prices = [float(row[at : at + 7]) for row in rows]
            assert prices
            assert prices == sorted(prices)
        assert "Prices:" in _all_text(ack)

    async def test_prices_of_an_unknown_gpu_says_which_are_known(
        self, app: AsyncApp, fake_slack: FakeSlack
    ) -> None:
        """An unknown GPU is not understood, and the reply names known ones."""
        text = _all_text(await _command(app, fake_slack, "prices zz9000"))
        assert "Didn't understand" in text
        assert "zz9000" in text
        assert "H100" in text

    async def test_watch_subcommands_route_to_the_alerts_seam(
        self, app: AsyncApp, fake_slack: FakeSlack
    ) -> None:
        """``watch``, ``watches`` and ``unwatch`` reach the price-alerts handler, not the parser."""
        for n, text in enumerate(("watch H100 below $2/h", "watches", "unwatch W1"), start=1):
            await _command(app, fake_slack, text)
            hooks = await fake_slack.wait_for("hook", n)
            reply = hooks[-1].body
            assert not reply["text"].startswith("gpufit: "), text  # not a recommendation
            assert "Sorry, something went wrong" not in reply["text"], text
            assert not any(
                str(b.get("block_id", "")).startswith("option_") for b in reply["blocks"]
            )


class TestBadInput:
    async def test_bad_input_gets_a_friendly_message_with_an_example(
        self, app: AsyncApp, fake_slack: FakeSlack
    ) -> None:
        """Text naming no model is answered with what was not understood and a working example."""
        ack = await _command(app, fake_slack, "make it fast please")
        assert ack["response_type"] == "ephemeral"
        text = _all_text(ack)
        assert "Didn't understand" in text
        assert "Try:" in text
        assert "Traceback" not in text

    async def test_an_unexpected_failure_is_an_apology_with_an_incident_id(
        self, settings: Settings, fake_slack: FakeSlack, services: Services, caplog: Any
    ) -> None:
        """A bug is logged with an incident id and the user sees only a generic apology."""

        async def broken() -> Any:
            raise RuntimeError("catalog exploded")

        broken_app = _app_with(settings, services, catalog=broken)
        with caplog.at_level("ERROR"):
            text = _all_text(await _command(broken_app, fake_slack, "13B full finetune 2 days"))
        assert "Sorry, something went wrong" in text
        assert "catalog exploded" not in text
        assert "Traceback" not in text
        incident = text.split("incident `")[1].split("`")[0]
        assert any(incident in r.getMessage() for r in caplog.records)


class TestTimeZone:
    """A calendar deadline is read in the asker's time zone, from Slack's ``users.info``."""

    async def test_by_friday_is_the_end_of_the_askers_friday(
        self, app: AsyncApp, fake_slack: FakeSlack
    ) -> None:
        """The tests' clock is Saturday 21 Nov 12:00 UTC: at UTC+14 it is already Sunday,
        and the end of Friday comes 14 hours sooner than in UTC."""
        question = "llama-3-8b lora on 2B tokens by Friday"
        fake_slack.user_zones[USER_ID] = "Pacific/Kiritimati"
        local = _all_text(await _command(app, fake_slack, question))
        assert "(+14), 142 h from" in local
        assert len(fake_slack.calls("users.info")) == 1
        again = _all_text(await _command(app, fake_slack, question))
        assert "(+14), 142 h from" in again
        assert len(fake_slack.calls("users.info")) == 1  # kept in Redis for a day

    async def test_without_a_zone_from_slack_deadlines_are_read_in_utc(
        self, app: AsyncApp, fake_slack: FakeSlack
    ) -> None:
        text = _all_text(await _command(app, fake_slack, "llama-3-8b lora on 2B tokens by Friday"))
        assert "(UTC), 156 h from" in text

    async def test_a_question_without_a_calendar_day_does_not_ask_slack(
        self, app: AsyncApp, fake_slack: FakeSlack
    ) -> None:
        await _command(app, fake_slack, "llama-3-8b lora on 2B tokens in 3 days")
        assert fake_slack.calls("users.info") == []
