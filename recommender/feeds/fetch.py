"""Fetching price sources: local files and http(s) URLs, concurrently, with bounded retries.

* httpx with explicit connect/read/write/pool timeouts, a deadline per attempt, a deadline for
  the whole fetch of a source (every attempt and wait: :attr:`FetchTimeouts.deadline_s`), and
  a response size cap (checked against ``Content-Length`` and while streaming).
* Redirects are followed only to the same scheme and class of address, never to link-local
  or special addresses, checked before connecting (:mod:`recommender.feeds.redirects`).
* Conditional requests: pass the previous ETag/Last-Modified; a ``304`` comes back as
  :attr:`Fetched.not_modified` so the caller keeps its cached copy. Files use their
  modification time and size the same way.
* tenacity ``AsyncRetrying``: bounded attempts, exponential backoff with jitter, ``Retry-After``
  honoured (capped), retries on network errors, 5xx and 429 only, never on other 4xx.
  The policy is a value (:class:`RetryPolicy`), so tests pass zero waits or their own sleep.
"""

from __future__ import annotations

import asyncio
import email.utils
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from recommender.errors import CatalogError, FeedTooLargeError, PriceFeedError
from recommender.feeds.clock import utc_now
from recommender.feeds.redirects import MAX_REDIRECTS, redirect_refusal
from recommender.feeds.retry import Retryable, RetryPolicy

__all__ = [
    "DEFAULT_MAX_BYTES",
    "FetchResult",
    "FetchTimeouts",
    "Fetched",
    "RetryPolicy",
    "Validators",
    "fetch_all",
    "fetch_source",
    "is_url",
    "make_client",
]

#: Largest document accepted; why: the biggest real source (SkyPilot's full AWS vms.csv) is
#: 3.7 MB and gpuhunt's largest provider CSVs are tens of MB at most; 64 MiB stops a runaway.
DEFAULT_MAX_BYTES = 64 * 2**20

_USER_AGENT = "gpufit (+https://github.com/gpufit/gpufit) price-feed fetcher"

#: Longest one attempt may take; why: a 64 MiB document at a slow 1 MB/s still fits.
_DEFAULT_TOTAL_S = 120.0
#: Longest the whole fetch of one source may take, every attempt and backoff included: a feed
#: trickling its body held a worker pass 486 s, past the 300 s refresh lock
#: (recommender.feeds.cache.DEFAULT_LOCK_TTL_S); this leaves over half the lock for parsing,
#: storing and the other sources.
_DEFAULT_DEADLINE_S = 120.0  # ours


@dataclass(frozen=True, slots=True)
class FetchTimeouts:
    """Per-attempt time limits, in seconds."""

    #: TCP + TLS handshake; why: a reachable host answers in well under a second.
    connect_s: float = 5.0
    #: Longest gap between bytes; why: static catalog files stream continuously.
    read_s: float = 30.0
    write_s: float = 10.0
    pool_s: float = 5.0
    #: Whole attempt, including a slow trickle of bytes.
    total_s: float = _DEFAULT_TOTAL_S
    #: The whole fetch of one source: every attempt and every wait between them.
    deadline_s: float = _DEFAULT_DEADLINE_S

    def httpx(self) -> httpx.Timeout:
        return httpx.Timeout(
            connect=self.connect_s, read=self.read_s, write=self.write_s, pool=self.pool_s
        )


@dataclass(frozen=True, slots=True)
class Validators:
    """What the last successful fetch returned, for a conditional request."""

    etag: str | None = None
    last_modified: str | None = None


@dataclass(frozen=True, slots=True)
class Fetched:
    """One successful fetch."""

    location: str
    #: The document; ``None`` when :attr:`not_modified`.
    body: bytes | None
    not_modified: bool
    validators: Validators
    fetched_at: datetime
    #: The document's modification time (HTTP ``Last-Modified`` or the file's mtime).
    modified_at: datetime | None = None


@dataclass(frozen=True, slots=True)
class FetchResult:
    """The outcome for one source of :func:`fetch_all`: a fetch or an error, never both."""

    location: str
    fetched: Fetched | None = None
    error: CatalogError | None = None

    @property
    def ok(self) -> bool:
        return self.fetched is not None


def is_url(location: str) -> bool:
    return location.startswith(("http://", "https://"))


def make_client(timeouts: FetchTimeouts | None = None) -> httpx.AsyncClient:
    """The HTTP client for feeds (the caller closes it)."""
    return httpx.AsyncClient(
        timeout=(timeouts or FetchTimeouts()).httpx(),
        follow_redirects=False,  # followed by _get, after redirect_refusal allows each one
        headers={"User-Agent": _USER_AGENT},
    )


async def fetch_source(
    location: str,
    *,
    client: httpx.AsyncClient,
    policy: RetryPolicy | None = None,
    validators: Validators | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    total_s: float = _DEFAULT_TOTAL_S,
    deadline_s: float = _DEFAULT_DEADLINE_S,
) -> Fetched:
    """Fetch one source (a file path or an http(s) URL), within ``deadline_s`` in all.

    Raises:
        PriceFeedError: the source could not be fetched after the policy's attempts or within
            ``deadline_s``, answered a status other than 2xx/304, redirected where feeds may
            not, or exceeded ``max_bytes``.
    """
    if not is_url(location):
        if "://" in location:
            raise PriceFeedError(
                f"{location}: only http(s) URLs and file paths are supported.",
                source=location,
                hint="Use https://… or a local path such as ./prices.json.",
            )
        return await asyncio.to_thread(_read_file, location, validators, max_bytes)
    try:
        valid = bool(httpx.URL(location).host)
    except (httpx.InvalidURL, ValueError):
        valid = False
    if not valid:
        raise PriceFeedError(
            f"{location}: not a valid URL (no host).",
            source=location,
            hint="Write it as https://host/path/prices.json.",
        )
    try:
        async with asyncio.timeout(deadline_s):
            return await _fetch_url(location, client, policy, validators, max_bytes, total_s)
    except TimeoutError:
        raise PriceFeedError(
            f"{location}: the download did not finish within {deadline_s:g} s.",
            source=location,
            hint="The feed answers too slowly; gpufit keeps using the last good copy meanwhile.",
        ) from None


async def _fetch_url(
    location: str,
    client: httpx.AsyncClient,
    policy: RetryPolicy | None,
    validators: Validators | None,
    max_bytes: int,
    total_s: float,
) -> Fetched:
    last: Retryable | None = None
    try:
        async for attempt in (policy or RetryPolicy()).retrying():
            with attempt:
                try:
                    async with asyncio.timeout(total_s) as attempt_deadline:
                        return await _get(client, location, validators, max_bytes)
                except TimeoutError:
                    if not attempt_deadline.expired():
                        raise  # the whole fetch's deadline (fetch_source), not this attempt's
                    raise Retryable(f"took longer than {total_s:g} s") from None
                except httpx.TimeoutException as exc:
                    raise Retryable(f"timed out ({type(exc).__name__})") from None
                except httpx.TransportError as exc:
                    raise Retryable(f"network error: {exc or type(exc).__name__}") from None
                except (httpx.HTTPError, httpx.InvalidURL) as exc:
                    # Not worth retrying: a malformed URL, undecodable content encoding, ...
                    raise PriceFeedError(
                        f"{location}: {exc or type(exc).__name__}.",
                        source=location,
                        hint="Check the URL; it should serve one catalog file.",
                    ) from None
    except Retryable as exc:
        last = exc
    attempts = (policy or RetryPolicy()).attempts
    raise PriceFeedError(
        f"{location}: fetch failed after {attempts} attempt(s): {last}.",
        source=location,
        hint="Check the URL and network; gpufit keeps using the last good copy meanwhile.",
    )


async def _get(
    client: httpx.AsyncClient, url: str, validators: Validators | None, max_bytes: int
) -> Fetched:
    headers: dict[str, str] = {}
    if validators and validators.etag:
        headers["If-None-Match"] = validators.etag
    if validators and validators.last_modified:
        headers["If-Modified-Since"] = validators.last_modified
    origin = target = httpx.URL(url)
    for _ in range(MAX_REDIRECTS + 1):
        got = await _get_one(client, target, headers, max_bytes, validators)
        if isinstance(got, Fetched):
            return replace(got, location=url)
        refusal = await redirect_refusal(origin, got)
        if refusal is not None:
            raise PriceFeedError(
                f"{url}: redirected to {got.host or 'nowhere'}, which is not followed: {refusal}.",
                source=url,
                hint="Point gpufit at the feed's final URL; a feed may redirect only within "
                "its own scheme and class of address (docs/feed-format.md).",
            )
        target = got
    raise PriceFeedError(
        f"{url}: more than {MAX_REDIRECTS} redirects.",
        source=url,
        hint="Point gpufit at the feed's final URL.",
    )


async def _get_one(
    client: httpx.AsyncClient,
    target: httpx.URL,
    headers: dict[str, str],
    max_bytes: int,
    validators: Validators | None,
) -> Fetched | httpx.URL:
    """One request: the document, or the URL a redirect points at (not yet followed)."""
    async with client.stream("GET", target, headers=headers) as response:
        now = utc_now()
        status = response.status_code
        location = response.headers.get("Location")
        if response.is_redirect and location:
            return target.join(location)
        url = str(target)
        if status == 304:
            return Fetched(
                location=url,
                body=None,
                not_modified=True,
                validators=_validators(response.headers, validators),
                fetched_at=now,
                modified_at=_http_date(response.headers.get("Last-Modified")),
            )
        if status == 429 or status >= 500:
            raise Retryable(
                f"HTTP {status} {response.reason_phrase}".strip(),
                retry_after_s=_retry_after(response.headers.get("Retry-After"), now),
            )
        if not 200 <= status < 300:
            raise PriceFeedError(
                f"{url}: HTTP {status} {response.reason_phrase}".strip() + ".",
                source=url,
                hint="Check the URL (a 4xx answer is not retried).",
            )
        declared = response.headers.get("Content-Length")
        if declared and declared.isdigit() and int(declared) > max_bytes:
            raise _too_large(url, max_bytes)
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > max_bytes:
                raise _too_large(url, max_bytes)
            chunks.append(chunk)
        return Fetched(
            location=url,
            body=b"".join(chunks),
            not_modified=False,
            validators=_validators(response.headers, None),
            fetched_at=now,
            modified_at=_http_date(response.headers.get("Last-Modified")),
        )


def _too_large(location: str, max_bytes: int) -> FeedTooLargeError:
    return FeedTooLargeError(
        f"{location}: the document is larger than the {max_bytes // 2**20} MiB limit.",
        source=location,
        hint="Point gpufit at a single catalog file, not an archive or a directory listing.",
    )


def _validators(headers: httpx.Headers, previous: Validators | None) -> Validators:
    etag = headers.get("ETag") or (previous.etag if previous else None)
    modified = headers.get("Last-Modified") or (previous.last_modified if previous else None)
    return Validators(etag=etag, last_modified=modified)


def _http_date(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _retry_after(value: str | None, now: datetime) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    moment = _http_date(value)
    if moment is None:
        return None
    return max(0.0, (moment - now).total_seconds())


def _read_file(location: str, validators: Validators | None, max_bytes: int) -> Fetched:
    path = Path(location).expanduser()
    now = utc_now()
    try:
        stat = path.stat()
        if not path.is_file():
            raise IsADirectoryError(f"{location} is not a file")
        tag = f'"{stat.st_mtime_ns:x}-{stat.st_size:x}"'
        modified = datetime.fromtimestamp(stat.st_mtime, UTC)
        if validators is not None and validators.etag == tag:
            return Fetched(location, None, True, validators, now, modified)
        if stat.st_size > max_bytes:
            raise _too_large(location, max_bytes)
        body = path.read_bytes()
    except OSError as exc:
        raise PriceFeedError(
            f"{location}: cannot read the file: {exc.strerror or exc}.",
            source=location,
            hint="Check the path, or give an http(s) URL.",
        ) from None
    return Fetched(location, body, False, Validators(etag=tag), now, modified)


async def fetch_all(
    locations: Sequence[str],
    *,
    client: httpx.AsyncClient | None = None,
    policy: RetryPolicy | None = None,
    validators: Mapping[str, Validators] | None = None,
    max_bytes: int = DEFAULT_MAX_BYTES,
    timeouts: FetchTimeouts | None = None,
) -> list[FetchResult]:
    """Fetch every location concurrently; one failure never fails the others.

    Returns one :class:`FetchResult` per location, in the order given.
    """
    timeouts = timeouts or FetchTimeouts()
    own = client is None
    http = client or make_client(timeouts)
    known = validators or {}

    async def one(location: str) -> FetchResult:
        try:
            fetched = await fetch_source(
                location,
                client=http,
                policy=policy,
                validators=known.get(location),
                max_bytes=max_bytes,
                total_s=timeouts.total_s,
                deadline_s=timeouts.deadline_s,
            )
        except CatalogError as exc:
            return FetchResult(location, error=exc)
        return FetchResult(location, fetched=fetched)

    try:
        results: list[Any] = await asyncio.gather(*(one(loc) for loc in locations))
    finally:
        if own:
            await http.aclose()
    return [r for r in results if isinstance(r, FetchResult)]
