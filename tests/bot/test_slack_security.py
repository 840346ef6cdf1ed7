"""Safe on the open internet: signatures checked first, untrusted text never pings or links."""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Iterator
from typing import Any

import pytest
from slack_bolt.async_app import AsyncApp
from slack_bolt.request.async_request import AsyncBoltRequest

from bot.render.blocks import escape_mrkdwn
from bot.services import Services
from recommender import Catalog
from tests.bot.slack_requests import (
    FORM,
    JSON,
    action_body,
    command_body,
    mention_body,
    request,
    signed_headers,
)
from tests.factories import catalog as make_catalog
from tests.factories import offer
from tests.fake_slack import FakeSlack

INJECTIONS = ("<!channel>", "<!here>", "<@U123>", "<http://evil.example|cheap GPUs>", "@here")


def _bodies(fake: FakeSlack) -> list[str]:
    return [
        command_body("13B lora 1 day", response_url=fake.hook_url()),
        mention_body("13B lora 1 day", event_id="EvSig", ts="1700000000.000100"),
        action_body("gpufit_post", "13B lora 1 day", response_url=fake.hook_url()),
    ]


def _types(fake: FakeSlack) -> Iterator[tuple[str, str]]:
    for body in _bodies(fake):
        yield body, JSON if body.startswith("{") else FORM


class TestSignatures:
    @pytest.mark.parametrize(
        "headers",
        [
            pytest.param(lambda body, ct: {"content-type": ct}, id="unsigned"),
            pytest.param(
                lambda body, ct: signed_headers(body, content_type=ct, secret="not-the-secret"),
                id="forged",
            ),
            pytest.param(
                lambda body, ct: signed_headers(
                    body, content_type=ct, timestamp=int(time.time()) - 301
                ),
                id="replayed",
            ),
        ],
    )
    async def test_bad_requests_are_401_before_any_listener_runs(
        self, app: AsyncApp, fake_slack: FakeSlack, services: Services, headers: Any
    ) -> None:
        """Unsigned, forged and 5-minutes-old requests get 401 and Slack hears nothing."""
        for body, content_type in _types(fake_slack):
            response = await app.async_dispatch(
                AsyncBoltRequest(body=body, headers=headers(body, content_type))
            )
            assert response.status == 401
        assert fake_slack.calls() == []
        assert services.answers.hits + services.answers.misses == 0  # no question looked up

    @pytest.mark.parametrize("timestamp", ["abc", "", "1e10", "9" * 400])
    async def test_a_malformed_timestamp_never_reaches_the_error_handler_s_post(
        self, app: AsyncApp, fake_slack: FakeSlack, services: Services, timestamp: str
    ) -> None:
        """Bolt's verifier raises on a timestamp that is not an integer; the error handler
        then sees an unverified body. It must not post to that body's response_url or
        channel (the ASGI route refuses such requests earlier; this is the second wall)."""
        for body, content_type in _types(fake_slack):
            headers = signed_headers(body, content_type=content_type)
            headers["x-slack-request-timestamp"] = timestamp
            response = await app.async_dispatch(AsyncBoltRequest(body=body, headers=headers))
            assert response.status in (401, 500)
        assert fake_slack.calls() == []
        assert services.answers.hits + services.answers.misses == 0

    async def test_a_tampered_body_is_rejected(
        self, app: AsyncApp, fake_slack: FakeSlack, services: Services
    ) -> None:
        """A valid signature over a different body does not pass."""
        body = command_body("13B lora 1 day", response_url=fake_slack.hook_url())
        headers = signed_headers(body, content_type=FORM)
        tampered = body.replace("13B", "70B")
        response = await app.async_dispatch(AsyncBoltRequest(body=tampered, headers=headers))
        assert response.status == 401
        assert fake_slack.calls() == []
        assert services.answers.hits + services.answers.misses == 0


def _mrkdwn_and_fallback(message: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
    found: list[dict[str, Any]] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") == "mrkdwn":
                found.append(node)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(message.get("blocks", []))
    return found, message["text"]


def _assert_defused(message: dict[str, Any]) -> None:
    mrkdwn, fallback = _mrkdwn_and_fallback(message)
    for obj in mrkdwn:
        assert obj.get("verbatim") is True, obj
        assert not set("<>") & set(obj["text"]), obj["text"]
    assert not set("<>") & set(fallback), fallback


async def _answered(app: AsyncApp, fake: FakeSlack, text: str) -> dict[str, Any]:
    """``/gpufit text``: its ack (defused too), then the reply at its response_url."""
    name = f"inj{next(_HOOKS)}"
    body = command_body(text, response_url=fake.hook_url(name))
    ack = json.loads((await app.async_dispatch(request(body, FORM))).body)
    _assert_defused(ack)
    [reply] = await fake.wait_for(f"hook:{name}")
    reply_body: dict[str, Any] = reply.body
    return reply_body


_HOOKS = itertools.count()


class TestInjection:
    @pytest.fixture
    def catalog(self) -> Catalog:
        """A feed whose provider, instance and region names try to ping and disguise links."""
        return make_catalog(
            offer(
                provider="<!channel>",
                instance_type="<http://evil.example|cheap GPUs>",
                region="us-east-1 <@U123> @here",
            ),
            offer(provider="aws<!here>", instance_type="p5&co", region="<!subteam^S1>"),
        )

    @pytest.mark.parametrize("payload", INJECTIONS)
    async def test_user_text_echoed_back_cannot_ping_or_link(
        self, app: AsyncApp, fake_slack: FakeSlack, payload: str
    ) -> None:
        """The user's own words come back as plain text or escaped, verbatim mrkdwn."""
        text = f"{payload} 7B lora 1 day {payload}"
        reply = await _answered(app, fake_slack, text)
        _assert_defused(reply)
        echoes = [
            e["text"]
            for b in reply["blocks"]
            if b["type"] == "context"
            for e in b["elements"]
            if e["type"] == "plain_text"
        ]
        assert any(payload in e for e in echoes)  # shown literally, as plain text

    async def test_feed_fields_cannot_ping_or_link(
        self, app: AsyncApp, fake_slack: FakeSlack
    ) -> None:
        """Provider, instance and region names from a feed are escaped in every mrkdwn text."""
        reply = await _answered(app, fake_slack, "7B lora 1 day")
        _assert_defused(reply)
        assert "&lt;!channel&gt;" in json.dumps(reply["blocks"])

    async def test_feed_fields_in_a_thread_reply_cannot_ping(
        self, app: AsyncApp, fake_slack: FakeSlack
    ) -> None:
        """The public thread reply (chat.postMessage) is defused the same way."""
        body = mention_body("<!channel> 7B lora 1 day", event_id="EvInj", ts="1700000000.000900")
        await app.async_dispatch(request(body, JSON))
        [post] = await fake_slack.wait_for("chat.postMessage")
        _assert_defused(post.body)

    async def test_prices_of_injected_feed_fields_are_escaped(
        self, app: AsyncApp, fake_slack: FakeSlack
    ) -> None:
        """``prices`` shows feed names escaped too."""
        reply = await _answered(app, fake_slack, "prices H100")
        _assert_defused(reply)


class TestEscapeMrkdwn:
    @pytest.mark.parametrize(
        ("raw", "escaped"),
        [
            ("<!channel>", "&lt;!channel&gt;"),
            ("<@U123>", "&lt;@U123&gt;"),
            ("<http://x|y>", "&lt;http://x|y&gt;"),
            ("a & b", "a &amp; b"),
            ("&lt;", "&amp;lt;"),
            ("@here *bold* _it_ `code`", "@here *bold* _it_ `code`"),
        ],
    )
    def test_only_the_three_control_characters_are_escaped(self, raw: str, escaped: str) -> None:
        """``&``, ``<`` and ``>`` become entities; nothing else changes."""
        assert escape_mrkdwn(raw) == escaped
