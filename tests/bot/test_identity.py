"""One ``auth.test`` at start-up, shared by every first request (#18 item 7): the app as
``gpufit serve`` builds it, against the fake Slack Web API on loopback and a real Redis."""

from __future__ import annotations

import asyncio

import httpx
import pytest
from slack_bolt.async_app import AsyncApp

from bot.app import build_app
from bot.identity import NOT_READY_TEXT, SlackIdentity
from bot.server import build_asgi
from bot.services import Services
from bot.settings import Settings
from tests.asgi_server import serving
from tests.bot.slack_requests import FORM, VERIFIER, command_body, request
from tests.fake_slack import FakeSlack

#: Requests that arrive before the first auth.test has answered.
FIRST_REQUESTS = 64  # the cold-start figure


async def _help(app: AsyncApp, fake: FakeSlack, i: int = 0) -> int:
    body = command_body("help", response_url=fake.hook_url(f"r{i}"))
    return (await app.async_dispatch(request(body, FORM))).status


async def test_concurrent_first_requests_share_one_auth_test(
    app: AsyncApp, fake_slack: FakeSlack
) -> None:
    """64 commands arriving at once cause one auth.test (Bolt's own check made 64)."""
    statuses = await asyncio.gather(*(_help(app, fake_slack, i) for i in range(FIRST_REQUESTS)))
    assert statuses == [200] * FIRST_REQUESTS
    assert len(fake_slack.calls("auth.test")) == 1
    assert await _help(app, fake_slack, FIRST_REQUESTS) == 200
    assert len(fake_slack.calls("auth.test")) == 1  # later requests reuse the answer


async def test_a_429_from_auth_test_never_says_reinstall(
    settings: Settings, services: Services, fake_slack: FakeSlack
) -> None:
    """auth.test throttled: the user is told to try again (not to reinstall the app), and the
    requests meanwhile do not ask auth.test again."""
    app = build_app(settings, services)
    fake_slack.fail_next("auth.test", 3, status=429, retry_after=0)  # slack_sdk retries twice
    assert await _help(app, fake_slack, 1) == 200
    asked = len(fake_slack.calls("auth.test"))
    assert await _help(app, fake_slack, 2) == 200
    assert len(fake_slack.calls("auth.test")) == asked  # no storm while it is throttled
    said = [c.body.get("text", "") for c in fake_slack.calls("hook")]
    assert said == [NOT_READY_TEXT, NOT_READY_TEXT]
    assert not any("reinstall" in text.lower() for text in said)


async def test_readyz_waits_for_auth_test(
    settings: Settings,
    services: Services,
    fake_slack: FakeSlack,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """/readyz is 503 (``slack: false``) until auth.test has answered, then 200."""
    monkeypatch.setattr("bot.identity.RETRY_AFTER_FAILURE_S", 0.1)
    identity = SlackIdentity(services.client)
    app = build_app(settings, services, identity=identity)
    fake_slack.fail_next("auth.test", 1, status=500, error="internal_error")
    async with (
        serving(build_asgi(services, app, verifier=VERIFIER, identity=identity)) as url,
        httpx.AsyncClient() as http,
    ):
        before = await http.get(url + "/readyz")
        assert not await identity.check()  # Slack fails it
        failed = await http.get(url + "/readyz")
        await asyncio.sleep(0.2)
        assert await identity.check()
        after = await http.get(url + "/readyz")
    assert (before.status_code, before.json()["checks"]["slack"]) == (503, False)
    assert (failed.status_code, failed.json()["checks"]["slack"]) == (503, False)
    assert (after.status_code, after.json()["checks"]["slack"]) == (200, True)
