"""Nothing secret, internal or active reaches a Slack user (issue #18, items 2, 4 and 9).

Every message builder is walked with hostile input: Slack control sequences (``<!channel>``,
``<@U…>``, a link disguised as another), bidirectional and zero-width controls, a feed URL
with ``user:password@`` and ``?api_key=`` on an internal host, and an internal error string.
Each message (the ``text`` fallback included) must carry no raw ``<``/``>`` in mrkdwn, no
control character, and none of the secret or internal strings. Then the same through the
served app: ``/gpufit prices`` with a failed feed refresh, and a Redis outage.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import replace
from typing import Any

import httpx
import pytest
import redis.asyncio as aioredis
from pydantic import SecretStr

from bot.alerts import OfferQuery, PriceBasis, PricePoint, Threshold, Watch, WatchSpec, WatchState
from bot.alerts.render import render_alert, render_confirmation, render_digest, render_watches
from bot.app import build_app
from bot.listeners.errors import error_message
from bot.render.blocks import (
    render_apology,
    render_gpus,
    render_help,
    render_notice,
    render_problem,
    render_recommendation,
    render_working,
)
from bot.render.limits import Message
from bot.render.prices import render_prices
from bot.render.safe import CONTROLS
from bot.server import build_asgi
from bot.services import Services, build_web_client, static_catalog
from bot.verify import SignatureVerifier
from recommender import (
    Catalog,
    CatalogError,
    SourceInfo,
    StoreError,
    WorkloadError,
    all_gpus,
    gpu_prices,
    recommend,
)
from tests.bot.slack_requests import SECRET, settings_for
from tests.factories import AS_OF, NOW, offer, workload
from tests.fake_slack import FakeSlack
from tests.reliability.conftest import command_answer, post_command, serving

PING = "<!channel> <!here> <@U0BOSS> <!subteam^S1>"
LINK = "<https://evil.example/steal|https://bank.example>"
BIDI = "\u202etxt.exe\u202c \u2066x\u2069 \u200fy"
INVISIBLE = "a\u200bb\u200cc\u200dd\u2060e\ufefff"
HOSTILE = f"{PING} {LINK} {BIDI} {INVISIBLE} &lt;!channel&gt;"
#: A feed location as an operator may configure it: credentials, a query secret, an
#: internal host. Unnamed sources are named after their location.
FEED_URL = "https://feeduser:hunter2pass@10.20.30.40:8443/prices/aws.csv?api_key=SEKRETKEY42"
INTERNAL_ERROR = "Error 111 connecting to 127.0.0.1:16391. Connection refused."
SECRETS = ("hunter2pass", "SEKRETKEY42", "feeduser", "10.20.30.40", "127.0.0.1", "Error 111")

#: The one mention gpufit itself writes (the watch's creator, an id Slack gave us).
CREATOR = "U0ALICE"


def _hostile_offer(**extra: Any) -> Any:
    return offer(
        provider="aws" + HOSTILE,
        instance_type="p5" + HOSTILE,
        region="us-east-1" + HOSTILE,
        zone="a" + HOSTILE,
        source=FEED_URL,
        **extra,
    )


def _catalog() -> Catalog:
    info = SourceInfo(name=FEED_URL, as_of=AS_OF, fetched_at=AS_OF, rows=1, error=INTERNAL_ERROR)
    return Catalog.of((_hostile_offer(),), (info,))


def _watch(*, disabled: str | None = None, workload_form: bool = False) -> Watch:
    if workload_form:
        spec = WatchSpec(
            threshold=Threshold(4000, PriceBasis.RUN), workload_text="13B lora " + HOSTILE
        )
    else:
        spec = WatchSpec(
            threshold=Threshold(20, PriceBasis.INSTANCE_HOUR),
            query=OfferQuery(gpu_id="H100-SXM-80GB", gpu_count=8, place="on aws " + HOSTILE),
            assumed=("assumed " + HOSTILE,),
            daily_digest=True,
        )
    return Watch(
        id="W1",
        team_id="T1",
        channel_id="C1",
        created_by=CREATOR,
        created_at=NOW,
        spec=spec,
        text=HOSTILE,
        disabled_reason=disabled,
    )


def _point() -> PricePoint:
    return PricePoint(
        price_usd=18.0,
        basis=PriceBasis.INSTANCE_HOUR,
        offer=_hostile_offer(),
        hours=12.0,
        caveats=("caveat " + HOSTILE,),
    )


def _messages() -> Iterator[tuple[str, Message]]:
    """Every message builder, fed hostile text wherever it takes text."""
    cat = _catalog()
    rec = recommend(workload(), cat, now=NOW, top=3)
    rec = replace(rec, notes=("note " + HOSTILE,))
    yield "recommendation", render_recommendation(rec, query=HOSTILE, ephemeral=True)
    yield "recommendation public", render_recommendation(rec, query=HOSTILE, ephemeral=False)
    yield "prices", render_prices([gpu_prices("H100-SXM-80GB", cat.offers)], cat.sources, now=NOW)
    yield "prices none", render_prices([gpu_prices("H100-SXM-80GB", ())], cat.sources, now=NOW)
    yield "problem", render_problem("bad " + HOSTILE, "hint " + HOSTILE)
    yield "notice", render_notice("notice " + HOSTILE)
    yield "apology", render_apology("abc123")
    yield "help", render_help()
    yield "gpus", render_gpus(all_gpus())
    yield "working", render_working()
    point = _point()
    for verdict in ("crossed", "deeper"):
        yield (
            f"alert {verdict}",
            render_alert(
                _watch(),
                verdict=verdict,
                old_price_usd=25.0,
                new=point,
                sources=cat.sources,
                now=NOW,
            ),
        )
    yield "confirmation", render_confirmation(_watch(), point)
    yield "confirmation below", render_confirmation(_watch(), replace(point, price_usd=10.0))
    yield "confirmation none", render_confirmation(_watch(workload_form=True), None)
    yield (
        "digest",
        render_digest(
            [(_watch(), point), (_watch(workload_form=True), None)],
            day="2026-11-21",
            sources=cat.sources,
        ),
    )
    state = WatchState(armed=False, last_price_usd=18.0)
    yield (
        "watches",
        render_watches([(_watch(), state), (_watch(disabled="not_in_channel: " + HOSTILE), None)]),
    )
    for error in (
        WorkloadError("bad " + HOSTILE, hint="hint " + HOSTILE),
        StoreError(f"Could not save the watch: {INTERNAL_ERROR}"),
        CatalogError(f"{FEED_URL}: the feed has no offers; {INTERNAL_ERROR}", source=FEED_URL),
        ConnectionRefusedError(INTERNAL_ERROR),
    ):
        yield f"error {type(error).__name__}", error_message(error)[0]


def _texts(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "text" and isinstance(value, str):
                yield value
            else:
                yield from _texts(value)
    elif isinstance(node, list):
        for item in node:
            yield from _texts(item)


def _mrkdwn_texts(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        if node.get("type") == "mrkdwn" and isinstance(node.get("text"), str):
            yield node["text"]
        for value in node.values():
            yield from _mrkdwn_texts(value)
    elif isinstance(node, list):
        for item in node:
            yield from _mrkdwn_texts(item)


def problems(message: Message) -> list[str]:
    """What in ``message`` could ping, disguise a link, hide text or leak a secret."""
    found: list[str] = []
    # What a user sees: the fallback and every text object (button values are not shown).
    everything = "\n".join([message.text, *_texts(list(message.blocks))])
    found += [f"secret {s!r}" for s in SECRETS if s in everything]
    found += [f"control U+{ord(c):04X}" for c in set(CONTROLS.findall(everything))]
    for where, text in [("text", message.text)] + [
        ("mrkdwn", t) for t in _mrkdwn_texts(list(message.blocks))
    ]:
        bare = text.replace(f"<@{CREATOR}>", "")
        if "<" in bare or ">" in bare:
            found.append(f"raw markup in {where}: {text[:120]!r}")
    return found


@pytest.mark.parametrize(("name", "message"), list(_messages()), ids=lambda v: str(v)[:30])
def test_no_builder_lets_hostile_text_through(name: str, message: Message) -> None:
    assert problems(message) == [], name


def test_the_hostile_input_is_really_there() -> None:
    """The control: the hostile strings reach the builders (escaped), so the walk above
    checks something."""
    text = "".join(m.text + json.dumps(list(m.blocks)) for _, m in _messages())
    assert "&lt;!channel&gt;" in text
    assert "aws.csv" in text  # the source, by its file name only


# ------------------------------------------------------------------ through the served app


@pytest.fixture
async def redis(redis_url: str) -> AsyncIterator[aioredis.Redis]:
    client = aioredis.Redis.from_url(redis_url)
    yield client
    await client.aclose()


def _services(fake_slack: FakeSlack, redis: aioredis.Redis, catalog: Catalog) -> Services:
    return Services(
        redis=redis,
        catalog=static_catalog(catalog),
        now=lambda: NOW,
        client=build_web_client(settings_for(fake_slack, "redis://unused")),
    )


async def _ask(fake_slack: FakeSlack, services: Services, text: str, hook: str) -> str:
    settings = settings_for(fake_slack, "redis://unused")
    verifier = SignatureVerifier(SecretStr(SECRET))
    async with (
        serving(build_asgi(services, build_app(settings, services), verifier=verifier)) as url,
        httpx.AsyncClient() as http,
    ):
        response = await post_command(http, url, text, response_url=fake_slack.hook_url(hook))
        return await command_answer(fake_slack, response, hook)


async def test_a_failed_refresh_shows_no_feed_url_or_error(
    fake_slack: FakeSlack, redis: aioredis.Redis
) -> None:
    """Issue #18 item 2: the footer showed ``name (feed, …, last refresh failed: <error>)``
    with the source named after its URL, credentials and all."""
    services = _services(fake_slack, redis, _catalog())
    answer = await _ask(fake_slack, services, "prices H100", "prices")
    assert "aws.csv" in answer
    assert "last refresh failed" in answer
    assert [s for s in SECRETS if s in answer] == []


async def test_a_redis_outage_is_not_described_to_users(
    fake_slack: FakeSlack, redis_url: str
) -> None:
    """Issue #18 item 9: "Could not save the watch: Error 111 connecting to 127.0.0.1:…"
    reached the channel. Redis is pointed at a closed port: the user gets a fixed sentence."""
    from tests.asgi_server import free_port

    dead = aioredis.Redis.from_url(f"redis://127.0.0.1:{free_port()}/0")
    services = _services(fake_slack, dead, _catalog())
    try:
        await _ask(fake_slack, services, "watch 8xH100 below $20/h", "watch")
        calls = await fake_slack.wait_for("hook:watch", 1, within_s=20)
        call = calls[-1]
    finally:
        await dead.aclose()
    text = json.dumps(call.body)
    assert "unavailable" in text or "went wrong" in text
    assert [s for s in SECRETS if s in text] == []
