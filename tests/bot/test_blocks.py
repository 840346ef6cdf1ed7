"""Block Kit rendering stays inside Slack's limits, whatever the recommendation or text."""

from __future__ import annotations

import copy
import dataclasses
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from bot.render.blocks import render_notice, render_problem, render_recommendation
from bot.render.limits import check_limits, fit_message, payload_size, text_size
from bot.render.prices import render_prices
from bot.render.short import SHORT_CHARS, render_short
from recommender import gpu_prices, parse_workload, recommend
from recommender.feeds.bundled import bundled_catalog
from tests.bot.slack_requests import visible_chars
from tests.factories import NOW, catalog, offer, workload
from tests.fake_slack import message_problems

NAMES = st.text(
    alphabet=st.characters(codec="utf-8", categories=("L", "N", "P", "S", "Zs")),
    min_size=1,
    max_size=300,
)


def _ok(message: Any) -> None:
    assert check_limits(message.blocks, message.text) == []
    assert message_problems(message.kwargs()) == []


class TestFitMessage:
    @pytest.mark.parametrize(
        ("blocks", "broken"),
        [
            ([{"type": "section", "text": {"type": "mrkdwn", "text": "x" * 3001}}], "text"),
            ([{"type": "header", "text": {"type": "plain_text", "text": "h" * 151}}], "text"),
            ([{"type": "divider"}] * 51, "blocks"),
            (
                [{"type": "context", "elements": [{"type": "mrkdwn", "text": "c"}] * 11}],
                "elements",
            ),
            (
                [
                    {
                        "type": "actions",
                        "elements": [
                            {
                                "type": "button",
                                "text": {"type": "plain_text", "text": "b" * 80},
                                "action_id": "a" * 300,
                                "value": "v",
                            }
                        ],
                    }
                ],
                "button",
            ),
            ([{"type": "section", "text": {"type": "mrkdwn", "text": "y" * 2900}}] * 6, "chars"),
            # Over the text budget with the payload under its own: only the text count says so.
            ([{"type": "section", "text": {"type": "mrkdwn", "text": "z" * 2500}}] * 5, "chars"),
        ],
    )
    def test_each_broken_limit_is_reported_and_then_fixed(self, blocks: Any, broken: str) -> None:
        """``check_limits`` names the broken limit; ``fit_message`` returns a message without it,
        leaving the blocks it was given as they were."""
        assert any(broken in p for p in check_limits(blocks, "fallback"))
        before = copy.deepcopy(blocks)
        _ok(fit_message(blocks, "fallback"))
        assert blocks == before

    def test_a_button_whose_value_is_too_long_is_dropped_not_cut(self) -> None:
        """A cut value would carry a different query, so the button goes instead."""
        keep = {"type": "button", "text": {"type": "plain_text", "text": "ok"}, "value": "q"}
        drop = {**keep, "value": "q" * 2001}
        message = fit_message([{"type": "actions", "elements": [drop, keep]}], "t")
        assert message.blocks[0]["elements"] == [keep]

    @settings(max_examples=300, deadline=None)
    @given(
        texts=st.lists(st.text(max_size=200), max_size=8),
        key=st.sampled_from(["text", "value", "alt_text"]),
    )
    @example(texts=['\n"\\<&>\u2028\x00\ud800'], key="text")
    def test_block_text_never_outgrows_the_serialized_blocks(
        self, texts: list[str], key: str
    ) -> None:
        """``fit_message`` counts the texts only when the payload is over the text budget:
        sound because the texts never add up to more than the serialized blocks."""
        blocks: list[dict[str, Any]] = [
            {"type": "section", "text": {"type": "mrkdwn", "text": t or "x"}, key: t} for t in texts
        ]
        blocks.append(
            {"type": "context", "elements": [{"type": "plain_text", "text": t} for t in texts]}
        )
        assert text_size(blocks) <= payload_size(blocks)

    @pytest.mark.parametrize(
        "message",
        [
            fit_message(
                [{"type": "section", "text": {"type": "mrkdwn", "text": "a · b … c"}}], "t"
            ),
            fit_message([{"type": "divider"}] * 60, "many blocks: measured again after cutting"),
            fit_message([], "no blocks"),
            fit_message([{"type": "section", "text": {"type": "mrkdwn", "text": "x\ud800y"}}], "s"),
        ],
        ids=["non-ascii", "cut", "no blocks", "lone surrogate"],
    )
    def test_the_response_json_is_the_body_bolt_would_send(self, message: Any) -> None:
        """``response_json`` is the JSON value of Bolt's ``ack(response_type=...,
        **kwargs())`` body, and always encodes as UTF-8 (a lone surrogate is escaped)."""
        bolt: dict[str, Any] = {"text": message.text, "response_type": "ephemeral"}
        if message.blocks:
            bolt["blocks"] = list(message.blocks)
        sent = message.response_json("ephemeral")
        assert sent.startswith("{")
        assert json.loads(sent.encode()) == json.loads(json.dumps(bolt))

    def test_a_copy_with_other_blocks_does_not_reuse_the_old_blocks_json(self) -> None:
        """The JSON kept by fit_message belongs to its blocks: a copy with other blocks
        serializes its own."""
        message = fit_message([{"type": "divider"}], "t")
        other = dataclasses.replace(message, blocks=({"type": "header"},))
        assert json.loads(other.response_json("ephemeral"))["blocks"] == [{"type": "header"}]

    def test_a_message_without_text_gets_a_fallback(self) -> None:
        """Every message carries a top-level text."""
        assert fit_message([], "  ").text == "gpufit"


class TestRenderers:
    def test_a_real_answer_is_inside_the_limits(self) -> None:
        """The answer for a realistic catalog keeps every limit and has a text fallback."""
        rec = recommend(workload(duration_hours=48), catalog(offer(), offer(spot=True)), now=NOW)
        message = render_recommendation(rec, query="8B full finetune 2 days")
        _ok(message)
        assert message.text.startswith("gpufit: ")

    def test_details_show_the_time_breakdown_of_option_1(self) -> None:
        """Issue #33 item 3 in Slack: the details (behind the short answer's Details button)
        carry option 1's step by cause, each exposed communication on its link or fabric,
        the bubble, the stalls, the global batch and the efficiency assumed."""
        w = parse_workload("pretrain llama 3 70b on 256x H100 on 1T tokens", now=NOW)
        rec = recommend(w, catalog(offer()), now=NOW)
        message = render_recommendation(rec, query="pretrain llama 3 70b on 256x H100")
        _ok(message)
        texts = [b["text"]["text"] for b in message.blocks if b["type"] == "section"]
        line = next(t for t in texts if t.startswith("*Time (option 1):*"))
        for part in ("compute ", "TP ", "on NVLink", "on EFA", "optimizer ", "stalls ", "global"):
            assert part in line, part
        assert "% of the dense peak" in line

    @settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(
        provider=NAMES,
        instance=NAMES,
        region=NAMES,
        query=st.text(max_size=2500),
        offers=st.integers(min_value=0, max_value=12),
        top=st.integers(min_value=1, max_value=20),
    )
    @example(  # found by CI: nine options whose text fit but whose JSON did not
        provider="0",
        instance="0",
        region="00000000𐀀𐀀𐀀𐀀𐀀𐀀𐀀𐀀𐀀𐀀𐀀𝈎𐀀𐀀𐀀𐀀𐀀𐀀𐀀𐀀𐀀𝒆𝒑𝒒𝒑𝒑𝒔𝒕𝒔𝒔𝒗𝒘𝒙𝒚𝒛",
        query="00000000𐀀𐀀𐀀𐀀𐀀𐀀𐀀𐀀𐀀𐀀𐀀𝈎𐀀𐀀𐀀𐀀𐀀𐀀𐀀𐀀𐀀𝒆𝒑𝒒𝒑𝒑𝒔𝒕𝒔𝒔𝒗𝒘𝒙𝒚𝒛",
        offers=9,
        top=9,
    )
    def test_random_answers_stay_inside_the_limits(
        self, provider: str, instance: str, region: str, query: str, offers: int, top: int
    ) -> None:
        """Any feed names, any query text and any number of options render within limits."""
        items = [
            offer(
                provider=f"{provider}{i}",
                instance_type=instance,
                region=region,
                price_usd_per_hour=10.0 + i,
                spot=bool(i % 2),
            )
            for i in range(offers)
        ]
        rec = recommend(workload(duration_hours=24), catalog(*items), now=NOW, top=top)
        _ok(render_recommendation(rec, query=query, ephemeral=bool(offers % 2)))

    @settings(max_examples=30, deadline=None)
    @given(text=st.text(max_size=5000), hint=st.one_of(st.none(), st.text(max_size=5000)))
    def test_problems_and_notices_stay_inside_the_limits(self, text: str, hint: str | None) -> None:
        """Error texts of any length are cut to fit."""
        _ok(render_problem(text, hint))
        _ok(render_notice(text))

    @settings(max_examples=20, deadline=None)
    @given(names=st.lists(NAMES, min_size=0, max_size=60))
    def test_price_lists_stay_inside_the_limits(self, names: list[str]) -> None:
        """``prices`` with any number of offers and names stays inside the limits."""
        items = [offer(provider=n, instance_type=n, region=n) for n in names]
        c = catalog(*items)
        _ok(render_prices([gpu_prices("H100-SXM-80GB", c.offers)], c.sources, now=NOW))


#: The five questions of docs/format-examples.md.
EXAMPLE_QUESTIONS = (
    "13B full finetune 2 days",
    "llama-3-70b qlora on 2B tokens under $3,000",
    "mistral-7b lora 36h spot only aws only",
    "llama-3-8b full finetune on 1B tokens within 3 days",
    "qwen2.5-7b lora on 500M tokens on 1x A10G",
)


@pytest.mark.parametrize("question", EXAMPLE_QUESTIONS)
def test_the_short_answer_on_the_bundled_catalog_stays_under_1500_characters(
    question: str,
) -> None:
    """Issue #39: the Slack reply to a simple question is at most 1,500 characters; the first
    block is the answer, and Details carries the rest."""
    rec = recommend(parse_workload(question, now=NOW), bundled_catalog(), now=NOW, top=5)
    message = render_short(rec, query=question).kwargs()
    assert visible_chars(message) <= SHORT_CHARS
    assert message["blocks"][0]["text"]["text"].startswith("*Best: ")
    assert "gpufit_details" in json.dumps(message["blocks"])
