"""Fetching sources: files and loopback HTTP, with retries, conditional requests and limits."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from recommender.errors import PriceFeedError
from recommender.feeds.fetch import (
    FetchTimeouts,
    RetryPolicy,
    Validators,
    fetch_all,
    fetch_source,
    make_client,
)
from tests.feeds.conftest import DATA, FeedServer, Route, fixture_bytes

FAST = FetchTimeouts(connect_s=2.0, read_s=0.3, write_s=2.0, pool_s=2.0, total_s=5.0)


class RecordingSleep:
    """A sleep that records the waits it was asked for instead of sleeping."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def policy(attempts: int = 3, **overrides: object) -> tuple[RetryPolicy, RecordingSleep]:
    sleep = RecordingSleep()
    fields: dict[str, object] = {
        "attempts": attempts,
        "initial_wait_s": 1.0,
        "max_wait_s": 8.0,
        "jitter_s": 0.0,
        "sleep": sleep,
    }
    fields.update(overrides)
    return RetryPolicy(**fields), sleep  # type: ignore[arg-type]


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with make_client(FAST) as http:
        yield http


class TestFiles:
    async def test_a_file_is_read_with_its_modification_time(
        self, client: httpx.AsyncClient
    ) -> None:
        """A path is read from disk; its mtime is the document's modification time."""
        fetched = await fetch_source(str(DATA / "feed.json"), client=client)
        assert fetched.body == fixture_bytes("feed.json")
        assert fetched.modified_at is not None
        assert fetched.validators.etag

    async def test_an_unchanged_file_is_not_modified(self, client: httpx.AsyncClient) -> None:
        """Passing the last fetch's validators back gives not_modified and no body."""
        first = await fetch_source(str(DATA / "feed.json"), client=client)
        again = await fetch_source(
            str(DATA / "feed.json"), client=client, validators=first.validators
        )
        assert again.not_modified
        assert again.body is None

    @pytest.mark.parametrize("where", ["missing.json", "."])
    async def test_unreadable_paths_fail_clearly(
        self, client: httpx.AsyncClient, tmp_path: Path, where: str
    ) -> None:
        """A missing file or a directory is a PriceFeedError naming the path."""
        with pytest.raises(PriceFeedError, match="cannot read the file"):
            await fetch_source(str(tmp_path / where), client=client)

    async def test_a_file_over_the_size_cap_is_refused(self, client: httpx.AsyncClient) -> None:
        """The size cap applies to files too."""
        with pytest.raises(PriceFeedError, match="larger than"):
            await fetch_source(str(DATA / "skypilot_aws.csv"), client=client, max_bytes=100)

    async def test_other_schemes_are_refused(self, client: httpx.AsyncClient) -> None:
        """Only paths and http(s) URLs are sources."""
        with pytest.raises(PriceFeedError, match="only http"):
            await fetch_source("ftp://example.com/prices.csv", client=client)


class TestHttp:
    async def test_a_document_and_its_validators(
        self, feed_server: FeedServer, client: httpx.AsyncClient
    ) -> None:
        """A 200 gives the body, the ETag and Last-Modified (as the as-of bound)."""
        url = feed_server.serve(
            "/aws.csv",
            Route(
                fixture_bytes("aws.csv"), etag='"v1"', last_modified="Mon, 30 Nov 2026 06:00:00 GMT"
            ),
        )
        fetched = await fetch_source(url, client=client)
        assert fetched.body == fixture_bytes("aws.csv")
        assert fetched.validators == Validators('"v1"', "Mon, 30 Nov 2026 06:00:00 GMT")
        assert fetched.modified_at is not None
        assert fetched.modified_at.isoformat() == "2026-11-30T06:00:00+00:00"

    async def test_a_matching_etag_gets_304_and_keeps_the_cache(
        self, feed_server: FeedServer, client: httpx.AsyncClient
    ) -> None:
        """The conditional request carries If-None-Match; a 304 means "keep your copy"."""
        url = feed_server.serve("/feed.json", Route(fixture_bytes("feed.json"), etag='"abc"'))
        fetched = await fetch_source(url, client=client, validators=Validators(etag='"abc"'))
        assert fetched.not_modified
        assert fetched.body is None
        assert feed_server.requests[-1].headers.get("If-None-Match") == '"abc"'
        changed = await fetch_source(url, client=client, validators=Validators(etag='"old"'))
        assert changed.body == fixture_bytes("feed.json")

    async def test_server_errors_are_retried_until_success(
        self, feed_server: FeedServer, client: httpx.AsyncClient
    ) -> None:
        """Two 500s then a 200: the third attempt succeeds, after exponential backoff 1 s, 2 s."""
        url = feed_server.serve("/f", Route(b"ok", fail_times=2))
        retry, sleep = policy(attempts=3)
        fetched = await fetch_source(url, client=client, policy=retry)
        assert fetched.body == b"ok"
        assert feed_server.hits("/f") == 3
        assert sleep.waits == [1.0, 2.0]

    async def test_attempts_are_bounded(
        self, feed_server: FeedServer, client: httpx.AsyncClient
    ) -> None:
        """A source that keeps failing is given up on after the policy's attempts."""
        url = feed_server.serve("/f", Route(b"ok", fail_times=99, fail_status=503))
        retry, _ = policy(attempts=4)
        with pytest.raises(PriceFeedError, match="after 4 attempt") as info:
            await fetch_source(url, client=client, policy=retry)
        assert "503" in info.value.message
        assert feed_server.hits("/f") == 4

    @pytest.mark.parametrize("status", [400, 401, 403, 404, 410])
    async def test_client_errors_are_not_retried(
        self, feed_server: FeedServer, client: httpx.AsyncClient, status: int
    ) -> None:
        """A 4xx other than 429 will not change on retry: one request, a clear error."""
        url = feed_server.serve("/f", Route(b"no", status=status))
        retry, sleep = policy(attempts=5)
        with pytest.raises(PriceFeedError, match=f"HTTP {status}"):
            await fetch_source(url, client=client, policy=retry)
        assert feed_server.hits("/f") == 1
        assert sleep.waits == []

    async def test_429_honours_retry_after(
        self, feed_server: FeedServer, client: httpx.AsyncClient
    ) -> None:
        """A 429 with Retry-After: 7 waits 7 s (not the backoff) before the next attempt."""
        url = feed_server.serve("/f", Route(b"ok", fail_times=1, fail_status=429, retry_after="7"))
        retry, sleep = policy(attempts=2)
        assert (await fetch_source(url, client=client, policy=retry)).body == b"ok"
        assert sleep.waits == [7.0]

    async def test_retry_after_is_capped(
        self, feed_server: FeedServer, client: httpx.AsyncClient
    ) -> None:
        """A server asking for an hour is retried after the policy's cap instead."""
        url = feed_server.serve(
            "/f", Route(b"ok", fail_times=1, fail_status=429, retry_after="3600")
        )
        retry, sleep = policy(attempts=2, max_retry_after_s=30.0)
        await fetch_source(url, client=client, policy=retry)
        assert sleep.waits == [30.0]

    async def test_a_hanging_server_times_out(
        self, feed_server: FeedServer, client: httpx.AsyncClient
    ) -> None:
        """A server that never answers hits the read timeout and is retried, then given up."""
        url = feed_server.serve("/hang", Route(hang=True))
        retry, _ = policy(attempts=2)
        with pytest.raises(PriceFeedError, match="timed out"):
            await fetch_source(url, client=client, policy=retry)
        assert feed_server.hits("/hang") == 2

    async def test_a_truncated_body_is_an_error(
        self, feed_server: FeedServer, client: httpx.AsyncClient
    ) -> None:
        """A connection closed before Content-Length bytes arrived is a failed fetch."""
        body = fixture_bytes("skypilot_aws.csv")
        url = feed_server.serve("/cut", Route(body, truncate_to=len(body) // 2))
        retry, _ = policy(attempts=2)
        with pytest.raises(PriceFeedError, match="network error"):
            await fetch_source(url, client=client, policy=retry)

    async def test_a_declared_oversize_body_is_refused_unread(
        self, feed_server: FeedServer, client: httpx.AsyncClient
    ) -> None:
        """Content-Length over the cap stops the fetch at once (and is not retried)."""
        url = feed_server.serve("/big", Route(b"x" * 5000))
        with pytest.raises(PriceFeedError, match="larger than"):
            await fetch_source(url, client=client, max_bytes=1000, policy=policy()[0])
        assert feed_server.hits("/big") == 1


class TestStreamingCap:
    async def test_an_undeclared_oversize_body_is_cut_off(self) -> None:
        """Without Content-Length, the cap is enforced while streaming."""

        async def chunks() -> AsyncIterator[bytes]:
            for _ in range(100):
                yield b"y" * 1000

        def handler(request: httpx.Request) -> httpx.Response:
            return httpx.Response(200, content=chunks())

        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as http:
            with pytest.raises(PriceFeedError, match="larger than"):
                await fetch_source("https://feeds.example/x", client=http, max_bytes=10_000)

    async def test_conditional_headers_are_sent(self) -> None:
        """Both validators go out: If-None-Match and If-Modified-Since."""
        seen: list[httpx.Headers] = []

        def handler(request: httpx.Request) -> httpx.Response:
            seen.append(request.headers)
            return httpx.Response(304)

        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as http:
            result = await fetch_source(
                "https://feeds.example/x",
                client=http,
                validators=Validators('"e"', "Mon, 30 Nov 2026 06:00:00 GMT"),
            )
        assert result.not_modified
        assert result.validators.etag == '"e"'
        assert seen[0]["If-None-Match"] == '"e"'
        assert seen[0]["If-Modified-Since"] == "Mon, 30 Nov 2026 06:00:00 GMT"


class TestFetchAll:
    async def test_one_failing_source_does_not_fail_the_others(
        self, feed_server: FeedServer
    ) -> None:
        """Results come back per source, in order, each with its fetch or its error."""
        good = feed_server.serve("/good", Route(b"fine"))
        bad = feed_server.serve("/bad", Route(fail_times=99))
        missing = str(DATA / "nope.csv")
        results = await fetch_all(
            [good, bad, missing, str(DATA / "aws.csv")],
            policy=RetryPolicy.no_wait(2),
            timeouts=FAST,
        )
        assert [r.location for r in results] == [good, bad, missing, str(DATA / "aws.csv")]
        assert [r.ok for r in results] == [True, False, False, True]
        assert results[0].fetched is not None
        assert results[0].fetched.body == b"fine"
        assert results[1].error is not None
        assert "HTTP 500" in results[1].error.message


class TestBrokenResponses:
    async def test_an_undecodable_body_is_a_feed_error(self) -> None:
        """A body that claims gzip but is not is reported, not raised as an httpx exception."""

        def handler(request: httpx.Request) -> httpx.Response:
            return httpx.Response(200, content=b"not gzip", headers={"Content-Encoding": "gzip"})

        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as http:
            with pytest.raises(PriceFeedError, match=r"feeds\.example"):
                await fetch_source("https://feeds.example/x", client=http)

    @pytest.mark.parametrize("url", ["http://:80/prices.json", "https:///prices.json"])
    async def test_a_url_without_a_host_is_a_feed_error(self, url: str) -> None:
        """A URL with no host is refused before any request is made."""
        requests: list[httpx.Request] = []

        def handler(request: httpx.Request) -> httpx.Response:
            requests.append(request)
            return httpx.Response(200)

        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as http:
            with pytest.raises(PriceFeedError, match="not a valid URL"):
                await fetch_source(url, client=http, policy=RetryPolicy.no_wait())
        assert requests == []
