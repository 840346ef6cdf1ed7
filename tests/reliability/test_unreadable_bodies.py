"""Signed bodies Bolt cannot parse (issue #34, Low): not UTF-8, or JSON nested 1,000 deep, as
an event or as an interaction's ``payload``. Before, each was a 500 with a traceback; now a
400 and one INFO line, and nothing reaches Slack."""

from __future__ import annotations

import hashlib
import hmac
import logging
import time

import httpx
import pytest

from bot.server import EVENTS_PATH
from tests.bot.slack_requests import FORM, JSON, SECRET
from tests.fake_slack import FakeSlack
from tests.reliability.conftest import app_url

__all__ = ["app_url"]  # the fixture, used by name

DEEP = 1_000  # the depth; Python's json raises RecursionError near its recursion limit


def _signed(body: bytes, content_type: str) -> dict[str, str]:
    """Slack's v0 signature over raw bytes (the test helper signs text)."""
    ts = str(int(time.time()))
    base = b"v0:" + ts.encode() + b":" + body
    digest = hmac.new(SECRET.encode(), base, hashlib.sha256).hexdigest()
    return {
        "content-type": content_type,
        "x-slack-request-timestamp": ts,
        "x-slack-signature": f"v0={digest}",
    }


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b'\xff\xfe{"type": "event_callback"}', JSON),
        (b"[" * DEEP + b"]" * DEEP, JSON),
        (b'{"a":' * DEEP + b"1" + b"}" * DEEP, JSON),
        (b"payload=" + b"%5B" * DEEP + b"%5D" * DEEP, FORM),
        (b"command=%2Fgpufit&text=\xff\xfe", FORM),
    ],
    ids=["json-not-utf8", "json-deep-array", "json-deep-object", "payload-deep", "form-not-utf8"],
)
async def test_an_unreadable_signed_body_is_400_not_500(
    app_url: str,
    fake_slack: FakeSlack,
    caplog: pytest.LogCaptureFixture,
    body: bytes,
    content_type: str,
) -> None:
    with caplog.at_level(logging.INFO):
        async with httpx.AsyncClient(timeout=10) as http:
            response = await http.post(
                app_url + EVENTS_PATH, content=body, headers=_signed(body, content_type)
            )
    assert response.status_code == 400, response.text
    assert [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR] == []
    assert fake_slack.calls() == []
