"""Real-shaped Slack requests, signed like Slack signs them (v0 HMAC-SHA256 of the raw body).

Payload shapes follow Slack's docs for slash commands (form body), Events API envelopes
(``event_callback`` with ``app_mention``) and interactivity (``payload=`` with
``block_actions``).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote, urlencode

from pydantic import SecretStr
from slack_bolt.request.async_request import AsyncBoltRequest

from bot.settings import Settings
from bot.verify import SignatureVerifier
from tests.fake_slack import BOT_USER_ID, TEAM_ID, FakeSlack

SECRET = "8f742231b10e8888abcd99yyyzzz85a5"
USER_ID = "U0ALICE"
CHANNEL_ID = "C0TEAM"
APP_ID = "A0GPUFIT"
#: What ``gpufit serve`` builds from SLACK_SIGNING_SECRET for its Slack route.
VERIFIER = SignatureVerifier(SecretStr(SECRET))


def signed_headers(
    body: str, *, content_type: str, secret: str = SECRET, timestamp: int | None = None
) -> dict[str, str]:
    ts = str(int(time.time()) if timestamp is None else timestamp)
    digest = hmac.new(secret.encode(), f"v0:{ts}:{body}".encode(), hashlib.sha256).hexdigest()
    return {
        "content-type": content_type,
        "x-slack-request-timestamp": ts,
        "x-slack-signature": f"v0={digest}",
    }


def command_body(
    text: str, *, response_url: str, trigger_id: str = "13345224609.738474920.8088930838d88f008e0"
) -> str:
    """The form body of ``/gpufit TEXT`` as Slack POSTs it (text arrives Slack-escaped)."""
    escaped = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return urlencode(
        {
            "token": "legacy-verification-token",
            "team_id": TEAM_ID,
            "team_domain": "fake",
            "channel_id": CHANNEL_ID,
            "channel_name": "ml-infra",
            "user_id": USER_ID,
            "user_name": "alice",
            "command": "/gpufit",
            "text": escaped,
            "api_app_id": APP_ID,
            "is_enterprise_install": "false",
            "response_url": response_url,
            "trigger_id": trigger_id,
        }
    )


def mention_body(
    text: str, *, event_id: str, ts: str, thread_ts: str | None = None, channel: str = CHANNEL_ID
) -> str:
    """An Events API ``event_callback`` envelope carrying an ``app_mention``."""
    escaped = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    event: dict[str, Any] = {
        "type": "app_mention",
        "user": USER_ID,
        "text": f"<@{BOT_USER_ID}> {escaped}",
        "ts": ts,
        "channel": channel,
        "event_ts": ts,
        "team": TEAM_ID,
    }
    if thread_ts is not None:
        event["thread_ts"] = thread_ts
    return json.dumps(
        {
            "token": "legacy-verification-token",
            "team_id": TEAM_ID,
            "api_app_id": APP_ID,
            "event": event,
            "type": "event_callback",
            "event_id": event_id,
            "event_time": int(float(ts)),
            "authorizations": [
                {
                    "team_id": TEAM_ID,
                    "user_id": BOT_USER_ID,
                    "is_bot": True,
                    "is_enterprise_install": False,
                }
            ],
            "is_ext_shared_channel": False,
        }
    )


def action_body(
    action_id: str,
    value: str,
    *,
    response_url: str,
    message_ts: str = "1700000000.000100",
    ephemeral: bool = True,
    thread_ts: str | None = None,
    user: str = USER_ID,
) -> str:
    """The ``payload=`` form body of a ``block_actions`` click on one of our buttons."""
    message: dict[str, Any] = {"type": "message", "ts": message_ts, "text": "gpufit", "blocks": []}
    if thread_ts is not None:
        message["thread_ts"] = thread_ts
    payload = {
        "type": "block_actions",
        "user": {"id": user, "username": "alice", "name": "alice", "team_id": TEAM_ID},
        "api_app_id": APP_ID,
        "token": "legacy-verification-token",
        "container": {
            "type": "message",
            "message_ts": message_ts,
            "channel_id": CHANNEL_ID,
            "is_ephemeral": ephemeral,
            **({"thread_ts": thread_ts} if thread_ts else {}),
        },
        "trigger_id": "13345224609.738474920.8088930838d88f008e0",
        "team": {"id": TEAM_ID, "domain": "fake"},
        "channel": {"id": CHANNEL_ID, "name": "ml-infra"},
        **({} if ephemeral else {"message": message}),
        "response_url": response_url,
        "actions": [
            {
                "action_id": action_id,
                "block_id": "gpufit_refine",
                "text": {"type": "plain_text", "text": "button", "emoji": True},
                "value": value,
                "type": "button",
                "action_ts": "1700000001.000200",
            }
        ],
    }
    return "payload=" + quote(json.dumps(payload))


FORM = "application/x-www-form-urlencoded"
JSON = "application/json"


def request(body: str, content_type: str, **sign: Any) -> AsyncBoltRequest:
    """A signed Bolt request, as the HTTP adapter would build it."""
    # Bolt's headers are Dict[str, str | Sequence[str]]; a dict is invariant in its values.
    headers: dict[str, str | Sequence[str]] = {
        **signed_headers(body, content_type=content_type, **sign)
    }
    return AsyncBoltRequest(body=body, headers=headers)


def settings_for(fake: FakeSlack, redis_url: str) -> Settings:
    """The settings ``gpufit serve`` would read, pointed at the fake Slack and a test Redis."""
    return Settings(
        slack_bot_token=SecretStr("xoxb-test-token"),
        slack_signing_secret=SecretStr(SECRET),
        slack_api_url=fake.api_url,
        redis_url=redis_url,
        host="127.0.0.1",
    )


def answer_rows(message: dict[str, Any]) -> list[tuple[str, bool]]:
    """The option rows of a short answer's table (bot/render/summary.py), each with whether
    its ``spot`` column says yes; ``[]`` when the message has no such table."""
    for block in message.get("blocks", []):
        text = str((block.get("text") or {}).get("text", "")) if block["type"] == "section" else ""
        if not text.startswith("```") or "cloud instance" not in text:
            continue
        header, *rows = text.strip("`").splitlines()
        at = header.index(" spot ") + 1
        return [(row, row[at : at + 4].strip() == "yes") for row in rows]
    return []


def visible_chars(message: dict[str, Any]) -> int:
    """Characters of text a reader sees in a message's blocks: section and header texts,
    context elements, button labels (Slack shows the fallback ``text`` only in
    notifications)."""
    total = 0
    for block in message.get("blocks", []):
        if "text" in block:
            total += len(block["text"]["text"])
        for element in block.get("elements", []):
            text = element.get("text")
            total += len(text["text"] if isinstance(text, dict) else text or "")
    return total
