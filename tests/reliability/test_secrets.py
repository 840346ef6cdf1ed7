"""Secrets users paste (issue #34, item 4): known formats — AWS keys, GitHub, Slack and Hugging
Face tokens, private keys — never reach a log line at any level, nor an answer that echoes the
user's text. The served app (uvicorn) logging at DEBUG through ``configure_logging``, the fake
Slack on loopback and a real Redis.

Before the fix, DEBUG logs kept the AWS keys and GitHub tokens users typed, and answers quoted
them back. The token-shaped strings are assembled at run time (they are fakes, but secret
scanners would flag them in the repository)."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import httpx
import pytest
import structlog

from bot.logs import REDACTED, configure_logging, redact_known_secrets
from bot.settings import Settings
from tests.fake_slack import FakeSlack
from tests.reliability.conftest import app_url, command_answer, post_command

# AWS's documented example key pair (IAM User Guide), and fakes shaped like the others.
SECRETS = {
    "aws key id": "AKIA" + "IOSFODNN7EXAMPLE",
    "aws secret": "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY",
    "github": "ghp_" + "A1b2C3d4" * 4 + "E5f6",
    "github fine-grained": "github_pat_" + "11ABCDEFG0" * 3,
    "slack": "xoxb-" + "1234567890-0987654321-" + "AbCdEfGhIjKlMnOp",
    "hugging face": "hf_" + "AbCdEfGhIj" * 3 + "KlMn",
    "private key": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n"
    "-----END OPENSSH PRIVATE KEY-----",
}
PASTED = (
    f"13B lora 1 day, my keys: {SECRETS['aws key id']} "
    f"aws_secret_access_key={SECRETS['aws secret']} {SECRETS['github']} "
    f"{SECRETS['github fine-grained']} {SECRETS['slack']} {SECRETS['hugging face']} "
    + SECRETS["private key"].replace("\n", " ")
)


def _leaks(text: str) -> list[str]:
    found = [name for name, value in SECRETS.items() if value in text]
    # The private key's body, wherever its line breaks went.
    if "b3BlbnNzaC1rZXktdjEAAAAA" in text:
        found.append("private key body")
    return found


@pytest.fixture
def debug_log() -> Iterator[io.StringIO]:
    root = logging.getLogger()
    saved_handlers, saved_level = list(root.handlers), root.level
    stream = io.StringIO()
    configure_logging(Settings(log_level="DEBUG"), stream=stream)
    try:
        yield stream
    finally:
        for handler in list(root.handlers):
            if handler not in saved_handlers:
                root.removeHandler(handler)
        root.setLevel(saved_level)
        for name in ("httpx", "slack_bolt", "gpufit.slack", "gpufit"):
            logging.getLogger(name).setLevel(logging.NOTSET)


@pytest.mark.parametrize("name", sorted(SECRETS))
def test_each_format_is_redacted_from_text(name: str) -> None:
    text = f"before {SECRETS[name]} after"
    if name == "aws secret":
        text = f"aws_secret_access_key = {SECRETS[name]}"
    redacted = redact_known_secrets(text)
    assert _leaks(redacted) == []
    assert REDACTED in redacted


def test_ordinary_text_is_left_alone() -> None:
    text = "8xH100 80GB, 13B lora 1 day, sha 0123456789abcdef0123456789abcdef01234567 hf_ok"
    assert redact_known_secrets(text) == text


def test_no_level_and_no_logger_writes_a_secret(debug_log: io.StringIO) -> None:
    """Plain and %-args messages, extra fields, structlog key-values, a traceback, and a
    library's logger, from DEBUG to ERROR."""
    log = logging.getLogger("gpufit.test")
    for level in (logging.DEBUG, logging.INFO, logging.WARNING, logging.ERROR):
        log.log(level, "user typed %s", PASTED)
        log.log(level, "payload", extra={"text": PASTED})
    logging.getLogger("slack_sdk.web.async_base_client").debug("Sending a request: %s", PASTED)
    structlog.get_logger("gpufit.test").debug("typed", text=PASTED, nested={"t": [PASTED]})
    try:
        raise ValueError(PASTED)
    except ValueError:
        log.exception("failed on %r", PASTED)
    out = debug_log.getvalue()
    lines = [json.loads(line) for line in out.splitlines()]
    assert len([line for line in lines if line["logger"] == "gpufit.test"]) >= 10
    assert _leaks(out) == []
    assert out.count(REDACTED) >= 7 * 10


async def test_a_served_command_neither_echoes_nor_logs_a_pasted_secret(
    app_url: str, fake_slack: FakeSlack, debug_log: io.StringIO
) -> None:
    async with httpx.AsyncClient(timeout=20) as http:
        response = await post_command(
            http, app_url, PASTED, response_url=fake_slack.hook_url("pasted")
        )
        answer = await command_answer(fake_slack, response, "pasted")
        typo = await post_command(
            http, app_url, f"frobnicate {SECRETS['github']}", response_url=fake_slack.hook_url("t")
        )
        typo_answer = await command_answer(fake_slack, typo, "t")
    assert _leaks(answer) == []
    assert _leaks(typo_answer) == []
    assert _leaks(debug_log.getvalue()) == []
    assert _leaks(json.dumps([c.body for c in fake_slack.calls()])) == []


__all__ = ["app_url"]  # the fixture, used by name
