"""Security: requests that are not Slack's own never reach a listener.

The real ASGI app (``build_asgi`` around ``build_app``, as ``gpufit serve`` builds it) runs
under uvicorn on a free loopback port. Unsigned, wrongly signed, replayed (timestamp older
than Slack's 5-minute window) and oversized requests are refused with 401 or 413, and the
fake Slack records nothing: no auth.test, no ack payload, no answer at ``response_url``.
A correctly signed command in the same setup is answered, so the silence means refusal.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable

import httpx
import pytest
import redis.asyncio as aioredis
from pydantic import SecretStr

from bot.app import build_app
from bot.catalog import bundled_catalog
from bot.server import EVENTS_PATH, MAX_BODY_BYTES, build_asgi
from bot.services import Services, build_web_client, static_catalog
from bot.verify import SignatureVerifier
from tests.bot.slack_requests import (
    FORM,
    JSON,
    SECRET,
    command_body,
    mention_body,
    settings_for,
    signed_headers,
)
from tests.factories import NOW
from tests.fake_slack import FakeSlack
from tests.reliability.conftest import command_answer, serving

#: Slack refuses (and Bolt rejects) timestamps more than five minutes from now.
REPLAY_AGE_S = 5 * 60 + 30


@pytest.fixture
async def services(fake_slack: FakeSlack, redis_url: str) -> AsyncIterator[Services]:
    redis = aioredis.Redis.from_url(redis_url)
    try:
        yield Services(
            redis=redis,
            catalog=static_catalog(bundled_catalog()),
            now=lambda: NOW,
            client=build_web_client(settings_for(fake_slack, redis_url)),
        )
    finally:
        await redis.aclose()


@pytest.fixture
async def base_url(fake_slack: FakeSlack, redis_url: str, services: Services) -> AsyncIterator[str]:
    settings = settings_for(fake_slack, redis_url)
    verifier = SignatureVerifier(SecretStr(SECRET))
    async with serving(
        build_asgi(services, build_app(settings, services), verifier=verifier)
    ) as url:
        yield url


def _nothing_ran(fake_slack: FakeSlack, services: Services) -> bool:
    """No listener ran: Slack heard nothing and no question was looked up or answered (a
    command's answer goes out in the ack, so the fake Slack alone would not tell)."""
    return fake_slack.calls() == [] and services.answers.hits + services.answers.misses == 0


@pytest.fixture
def body(fake_slack: FakeSlack) -> str:
    return command_body("13B full finetune 2 days", response_url=fake_slack.hook_url("probe"))


def _oversized(fake_slack: FakeSlack) -> str:
    """A real command whose text is padded to about 1 MB (signed correctly)."""
    return command_body("13B lora " + "x" * 1_000_000, response_url=fake_slack.hook_url("big"))


class TestRefusedRequests:
    async def test_a_signed_command_is_answered(
        self, base_url: str, body: str, fake_slack: FakeSlack
    ) -> None:
        """The control: a correctly signed command is acked 200 and answered."""
        async with httpx.AsyncClient() as http:
            response = await http.post(
                base_url + EVENTS_PATH,
                content=body,
                headers=signed_headers(body, content_type=FORM),
            )
        assert (await command_answer(fake_slack, response, "probe")).startswith("gpufit: ")

    @pytest.mark.parametrize(
        "headers",
        [
            pytest.param(lambda body: {"content-type": FORM}, id="unsigned"),
            pytest.param(
                lambda body: signed_headers(body, content_type=FORM, secret="guess"),
                id="wrong secret",
            ),
            pytest.param(
                lambda body: signed_headers(body + "&x=1", content_type=FORM),
                id="signature of another body",
            ),
            pytest.param(
                lambda body: signed_headers(
                    body, content_type=FORM, timestamp=int(time.time()) - REPLAY_AGE_S
                ),
                id="replayed: timestamp over 5 minutes old",
            ),
            pytest.param(
                lambda body: signed_headers(
                    body, content_type=FORM, timestamp=int(time.time()) + REPLAY_AGE_S
                ),
                id="timestamp over 5 minutes ahead",
            ),
            pytest.param(
                lambda body: {
                    k: v
                    for k, v in signed_headers(body, content_type=FORM).items()
                    if k != "x-slack-request-timestamp"
                },
                id="timestamp missing",
            ),
        ],
    )
    async def test_a_request_without_a_valid_signature_is_401(
        self,
        base_url: str,
        body: str,
        fake_slack: FakeSlack,
        services: Services,
        headers: Callable[[str], dict[str, str]],
    ) -> None:
        """Not signed with the app's secret for this body and a current timestamp: 401,
        and no listener runs (the fake Slack hears nothing)."""
        async with httpx.AsyncClient() as http:
            response = await http.post(base_url + EVENTS_PATH, content=body, headers=headers(body))
        assert response.status_code == 401
        assert _nothing_ran(fake_slack, services)

    @pytest.mark.parametrize(
        ("timestamp", "signature"),
        [
            pytest.param("abc", None, id="timestamp not a number"),
            pytest.param("", None, id="timestamp empty"),
            pytest.param("1e10", None, id="timestamp in exponent form"),
            pytest.param("9" * 400, None, id="timestamp of 400 digits"),
            pytest.param("١٧٠٠٠٠٠٠٠٠", None, id="timestamp in non-ASCII digits"),
            pytest.param(None, "v0=" + "é" * 64, id="signature not ASCII"),
            pytest.param(None, "v1=" + "0" * 64, id="signature of another version"),
        ],
    )
    @pytest.mark.parametrize("kind", ["command", "event"])
    async def test_malformed_signature_headers_never_make_the_bot_post(
        self,
        base_url: str,
        fake_slack: FakeSlack,
        services: Services,
        timestamp: str | None,
        signature: str | None,
        kind: str,
    ) -> None:
        """The critical hole: a malformed timestamp or a non-ASCII signature made Bolt's
        verifier raise, and the error handler then posted to the unverified body's
        response_url or channel. Now such a request is 401 and nothing is posted anywhere."""
        if kind == "command":
            body = command_body("13B lora 1 day", response_url=fake_slack.hook_url("attack"))
            content_type = FORM
        else:
            body = mention_body("13B lora 1 day", event_id="EvAttack", ts="1700000000.000100")
            content_type = JSON
        headers = signed_headers(body, content_type=content_type)
        if timestamp is not None:
            headers["x-slack-request-timestamp"] = timestamp
        if signature is not None:
            headers["x-slack-signature"] = signature
        encoded = {k: v.encode() for k, v in headers.items()}  # raw bytes: any header value
        async with httpx.AsyncClient() as http:
            for _ in range(3):
                response = await http.post(
                    base_url + EVENTS_PATH, content=body, headers=list(encoded.items())
                )
                assert response.status_code == 401
        assert _nothing_ran(fake_slack, services)

    async def test_a_replayed_event_is_401(
        self, base_url: str, fake_slack: FakeSlack, services: Services
    ) -> None:
        """An Events API delivery signed more than 5 minutes ago is refused like a command."""
        body = mention_body("13B lora 1 day", event_id="EvOld", ts="1700000000.000100")
        headers = signed_headers(body, content_type=JSON, timestamp=int(time.time()) - REPLAY_AGE_S)
        async with httpx.AsyncClient() as http:
            response = await http.post(base_url + EVENTS_PATH, content=body, headers=headers)
        assert response.status_code == 401
        assert _nothing_ran(fake_slack, services)

    @pytest.mark.parametrize(
        ("signed", "status"), [(True, 413), (False, 401)], ids=["signed", "unsigned"]
    )
    async def test_a_1_mb_body_is_refused_unread(
        self, base_url: str, fake_slack: FakeSlack, services: Services, signed: bool, status: int
    ) -> None:
        """A body over the cap is refused before it is parsed: 401 when the signature
        headers are missing (checked before the body is read), 413 when they look right; no
        listener runs."""
        body = _oversized(fake_slack)
        assert len(body) > MAX_BODY_BYTES
        headers = signed_headers(body, content_type=FORM) if signed else {"content-type": FORM}
        async with httpx.AsyncClient() as http:
            response = await http.post(base_url + EVENTS_PATH, content=body, headers=headers)
        assert response.status_code == status
        assert _nothing_ran(fake_slack, services)

    async def test_a_chunked_body_over_the_cap_is_413(
        self, base_url: str, fake_slack: FakeSlack, services: Services
    ) -> None:
        """A body sent without Content-Length (chunked) is cut off at the cap too."""
        body = _oversized(fake_slack).encode()

        async def chunks() -> AsyncIterator[bytes]:
            for start in range(0, len(body), 64 * 1024):
                yield body[start : start + 64 * 1024]

        headers = signed_headers(body.decode(), content_type=FORM)
        async with httpx.AsyncClient() as http:
            response = await http.post(base_url + EVENTS_PATH, content=chunks(), headers=headers)
        assert "content-length" not in response.request.headers
        assert response.status_code == 413
        assert _nothing_ran(fake_slack, services)

    async def test_a_body_just_under_the_cap_is_read(
        self, base_url: str, fake_slack: FakeSlack
    ) -> None:
        """The cap refuses only what is over it: a signed body of nearly the cap is verified
        and reaches the app (here: answered with the parser's own too-long message)."""
        hook = fake_slack.hook_url("near")
        overhead = len(command_body("13B lora ", response_url=hook))
        body = command_body("13B lora " + "x" * (MAX_BODY_BYTES - overhead - 16), response_url=hook)
        assert len(body) <= MAX_BODY_BYTES
        async with httpx.AsyncClient() as http:
            response = await http.post(
                base_url + EVENTS_PATH,
                content=body,
                headers=signed_headers(body, content_type=FORM),
            )
        assert await command_answer(fake_slack, response, "near")
