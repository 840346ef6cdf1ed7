"""Feed limits that protect the worker's memory and time (issue #34, item 3): a cap on offers
checked before a JSON feed's offers are built, a deadline for a source's whole download, no
redirect out of the feed's class of address, and no control characters from feed text.

Real loopback feed servers (``tests/feeds/conftest.py``) and a real Redis. No test sends a
byte to a non-loopback address: the client's transport refuses any other host, so a redirect
that escaped the check would fail the test instead of leaving the machine."""

from __future__ import annotations

import asyncio
import json
import time
import tracemalloc
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from recommender.errors import FeedTooLargeError, PriceFeedError
from recommender.feeds.cache import RedisSnapshots
from recommender.feeds.detect import parse_any
from recommender.feeds.fetch import FetchTimeouts, RetryPolicy, fetch_source
from recommender.feeds.redirects import redirect_refusal
from recommender.feeds.store import FeedSource, PriceStore
from tests.factories import NOW
from tests.feeds.conftest import FeedServer, Route, fixture_bytes
from tests.feeds.test_gpuhunt_zip import published
from tests.feeds.test_native import feed_doc, offer_row

#: Offers over the cap in the memory test; the cap is far below.
MANY = 40_000
CAP = 1_000
QUICK = FetchTimeouts(connect_s=1.0, read_s=0.5, write_s=1.0, pool_s=1.0, total_s=0.6)


class LoopbackOnly(httpx.AsyncBaseTransport):
    """The real transport, for loopback hosts only; any other host is recorded and refused
    without a connection."""

    def __init__(self) -> None:
        self._real = httpx.AsyncHTTPTransport()
        self.refused: list[str] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        if request.url.host not in ("127.0.0.1", "localhost", "::1"):
            self.refused.append(str(request.url))
            raise httpx.ConnectError("non-loopback host refused by the test", request=request)
        return await self._real.handle_async_request(request)

    async def aclose(self) -> None:
        await self._real.aclose()


@pytest.fixture
async def guarded() -> AsyncIterator[tuple[httpx.AsyncClient, LoopbackOnly]]:
    transport = LoopbackOnly()
    async with httpx.AsyncClient(transport=transport, timeout=QUICK.httpx()) as client:
        yield client, transport


def _feed(n: int, **row: Any) -> bytes:
    offers = [offer_row(instance_type=f"p5.{i}", **row) for i in range(n)]
    return json.dumps(feed_doc(*offers)).encode()


def test_a_json_feed_over_the_cap_is_refused_before_its_offers_are_built() -> None:
    """40k offers against a cap of 1k: refused, and the refusal's peak memory is a small
    fraction of what building the offers' dicts (json.loads) takes."""
    body = _feed(MANY)
    tracing = tracemalloc.is_tracing()  # python -X tracemalloc: already on, with a baseline
    if not tracing:
        tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        with pytest.raises(FeedTooLargeError, match=f"more than {CAP} offers"):
            parse_any(body, source="big", max_offers=CAP)
        refused_peak = tracemalloc.get_traced_memory()[1] - base
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        document = json.loads(body)
        loads_peak = tracemalloc.get_traced_memory()[1] - base
        del document
    finally:
        if not tracing:
            tracemalloc.stop()
    assert refused_peak < loads_peak / 4, (refused_peak, loads_peak)


def test_a_feed_at_the_cap_is_read() -> None:
    parsed = parse_any(_feed(CAP), source="full", max_offers=CAP)
    assert len(parsed.offers) == CAP


async def test_a_refresh_over_the_cap_keeps_the_last_good_prices(
    feed_server: FeedServer, redis_url: str, guarded: tuple[httpx.AsyncClient, LoopbackOnly]
) -> None:
    client, _ = guarded
    route = Route(_feed(10))
    url = feed_server.serve("/feed.json", route)
    store = PriceStore(RedisSnapshots.from_url(redis_url, prefix="test:cap"))
    try:
        source = FeedSource.parse(f"capped={url}")
        first = await store.refresh([source], client=client, max_offers=20)
        route.body = _feed(21)
        second = await store.refresh([source], client=client, max_offers=20)
        catalog = await store.load_catalog()
    finally:
        await store.aclose()
    assert first.sources[0].offers == 10
    [failed] = second.failed
    assert failed.too_large
    assert failed.kept_previous
    assert sum(1 for o in catalog.offers if o.source == "capped") == 10


@pytest.mark.parametrize("fault", ["trickle", "hang"])
async def test_a_slow_feed_fails_within_the_whole_downloads_deadline(
    feed_server: FeedServer, guarded: tuple[httpx.AsyncClient, LoopbackOnly], fault: str
) -> None:
    """Before, each of the policy's attempts had its own deadline: 4 × 0.6 s here (486 s with
    the defaults). Now the whole fetch, retries and backoff included, ends at its deadline."""
    client, _ = guarded
    route = Route(b"x" * 10_000, trickle_s=0.05) if fault == "trickle" else Route(hang=True)
    url = feed_server.serve("/slow", route)
    start = time.monotonic()
    with pytest.raises(PriceFeedError, match=r"did not finish within 1\.5 s"):
        await fetch_source(
            url,
            client=client,
            policy=RetryPolicy.no_wait(attempts=4),
            total_s=QUICK.total_s,
            deadline_s=1.5,
        )
    took = time.monotonic() - start
    assert 1.4 <= took < 2.5, took


async def test_a_redirect_within_the_feeds_host_class_is_followed(
    feed_server: FeedServer, guarded: tuple[httpx.AsyncClient, LoopbackOnly]
) -> None:
    client, transport = guarded
    feed_server.serve("/real.json", Route(_feed(1)))
    url = feed_server.serve("/moved", Route(redirect_to="/real.json"))
    fetched = await fetch_source(url, client=client, policy=RetryPolicy.no_wait(1))
    assert fetched.body == _feed(1)
    assert fetched.location == url
    assert transport.refused == []


@pytest.mark.parametrize(
    ("target", "why"),
    [
        ("http://169.254.169.254/latest/meta-data/", "link-local"),
        ("http://[fe80::1]/", "link-local"),
        ("http://10.0.0.5:6379/", "private"),
        ("http://93.184.216.34/feed.json", "public"),
        ("https://127.0.0.1/feed.json", "scheme"),
        ("ftp://127.0.0.1/feed.json", "scheme"),
    ],
)
async def test_a_redirect_out_of_the_feeds_class_is_refused_before_connecting(
    feed_server: FeedServer,
    redis_url: str,
    guarded: tuple[httpx.AsyncClient, LoopbackOnly],
    target: str,
    why: str,
) -> None:
    """Nothing is requested from the target, and nothing of it is stored: the refresh records
    only that the redirect was refused."""
    client, transport = guarded
    url = feed_server.serve("/evil", Route(redirect_to=target))
    store = PriceStore(RedisSnapshots.from_url(redis_url, prefix="test:redirect"))
    try:
        report = await store.refresh(
            [FeedSource.parse(f"evil={url}")], client=client, policy=RetryPolicy.no_wait(1)
        )
    finally:
        await store.aclose()
    [failed] = report.failed
    assert "not followed" in (failed.error or "")
    assert why in (failed.error or "")
    assert transport.refused == []  # the check came first: no connection was even tried
    assert feed_server.hits("/evil") == 1


@pytest.mark.parametrize(
    "target",
    [
        "https://127.0.0.1/x",
        "https://10.1.2.3/x",
        "https://192.168.0.10/x",
        "https://169.254.169.254/x",
        "https://[::1]/x",
        "https://[::ffff:10.0.0.1]/x",
        "https://0.0.0.0/x",
        "http://93.184.216.35/x",
    ],
)
async def test_a_public_feed_never_redirects_to_an_internal_address(target: str) -> None:
    """IP literals only: nothing is resolved or connected."""
    origin = httpx.URL("https://93.184.216.34/feed.json")
    assert await redirect_refusal(origin, httpx.URL(target)) is not None
    assert await redirect_refusal(origin, httpx.URL("https://8.8.8.8/feed.json")) is None


def test_control_characters_never_reach_stored_feed_text() -> None:
    """Escape sequences in a feed's cells are removed from offers and from error reasons."""
    hostile = "p5\x1b[2J\x1b]0;owned\x07.48x\u202elarge\x9b31m"
    body = json.dumps(
        feed_doc(
            offer_row(instance_type=hostile, region="us-east-1\x1b[31m"),
            offer_row(gpu=f"H900{hostile}"),
        )
    )
    parsed = parse_any(body, source="hostile")
    texts = [v for o in parsed.offers for v in vars_of(o) if isinstance(v, str)]
    texts += list(parsed.errors)
    assert parsed.errors  # the bad GPU's reason quotes the cell
    for text in texts:
        assert text.isprintable(), repr(text)
    assert parsed.offers[0].instance_type == "p5.48xlarge"


def vars_of(offer: object) -> list[object]:
    return [getattr(offer, name) for name in offer.__dataclass_fields__]  # type: ignore[attr-defined]


async def test_the_deadline_ends_a_trickle_even_with_retries_and_waits(
    feed_server: FeedServer, guarded: tuple[httpx.AsyncClient, LoopbackOnly]
) -> None:
    """A 5xx with Retry-After 30 s would wait past the deadline: the deadline wins."""
    client, _ = guarded
    url = feed_server.serve("/busy", Route(b"{}", fail_times=5, retry_after="30"))
    start = time.monotonic()
    with pytest.raises(PriceFeedError, match="did not finish"):
        await asyncio.wait_for(
            fetch_source(url, client=client, policy=RetryPolicy(attempts=3), deadline_s=1.0), 10
        )
    assert time.monotonic() - start < 2.0


def test_an_archive_may_expand_only_to_the_feeds_byte_cap() -> None:
    """The parsed-size cap: a gpuhunt zip's members may expand to the feed's byte cap (before,
    a fixed 256 MiB, ~9× the default cap; deflate packs repeated rows up to ~1000:1)."""
    data = published()
    expanded = sum(len(fixture_bytes(n)) for n in ("aws.csv", "gcp.csv", "lambdalabs.csv"))
    with pytest.raises(FeedTooLargeError, match="expands past"):
        parse_any(data, source="catalog.zip", as_of=NOW, max_bytes=expanded - 1)
    assert parse_any(data, source="catalog.zip", as_of=NOW, max_bytes=expanded).offers
