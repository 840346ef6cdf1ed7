"""Every log line of a Slack request carries its context, and never the user's text."""

from __future__ import annotations

import io
import json
import logging

import pytest
from slack_bolt.async_app import AsyncApp

from bot.logs import configure_logging
from bot.settings import Settings
from tests.bot.slack_requests import FORM, command_body, request
from tests.fake_slack import FakeSlack


@pytest.fixture
def log_stream(settings: Settings) -> io.StringIO:
    stream = io.StringIO()
    handler = configure_logging(settings, stream=stream)
    yield stream
    logging.getLogger().removeHandler(handler)


async def test_command_logs_carry_team_user_and_request_id(
    app: AsyncApp, fake_slack: FakeSlack, log_stream: io.StringIO
) -> None:
    """A line logged while answering a command names its team, user, kind and a request id."""

    @app.middleware
    async def log_something(next):  # type: ignore[no-untyped-def]
        logging.getLogger("gpufit.test").warning("inside the request")
        await next()

    body = command_body("13B lora 1 day <!channel>", response_url=fake_slack.hook_url())
    response = await app.async_dispatch(request(body, FORM))
    assert response.status == 200
    lines = [json.loads(line) for line in log_stream.getvalue().splitlines() if line]
    [line] = [x for x in lines if x.get("message") == "inside the request"]
    assert line["kind"] == "command"
    assert line["command"] == "/gpufit"
    assert line["team_id"]
    assert line["user_id"] == "U0ALICE"
    assert len(line["request_id"]) == 32
    assert "13B lora" not in log_stream.getvalue()
