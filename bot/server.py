"""``gpufit serve``: the Slack app over HTTP (ASGI + uvicorn) or Socket Mode.

HTTP routes: ``POST /slack/events`` (commands, events and interactivity). A request whose
signature headers are missing, malformed or stale gets 401 before its body is read; a body
over :data:`MAX_BODY_BYTES` gets 413; a body Bolt could not parse (not UTF-8, or JSON nested
past Python's recursion limit) gets 400; a body whose signature does not match gets 401. Only
then does Bolt see it (and verify it again).
``GET /healthz`` (the process is up) and ``GET /readyz`` (Redis answers, a price snapshot is
loaded and the bot's start-up ``auth.test`` has answered; in Socket Mode also: the socket is
connected). Socket Mode serves only
the two health routes over HTTP.

Shutdown drains: on SIGINT/SIGTERM :class:`DrainingServer` first answers ``/readyz`` with 503
for :data:`DRAIN_GRACE_S` while still serving everything else, so the load balancer stops
routing Slack traffic here; then uvicorn stops accepting connections and finishes the requests
in flight, and the work those requests left running (thread replies, late answers:
``services.background``) gets :data:`BACKGROUND_GRACE_S` to finish. A second signal skips the
rest of the grace. While serving, each replica sweeps the reply outbox (``bot.outbox``) for
thread replies that are due again or whose replica died.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import Awaitable, Callable
from types import FrameType
from typing import Any
from urllib.parse import parse_qs

import uvicorn
from redis.exceptions import RedisError
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.adapter.starlette.async_handler import AsyncSlackRequestHandler
from slack_bolt.async_app import AsyncApp
from starlette.applications import Starlette
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Route
from starlette.types import Message

from bot.app import build_app
from bot.connections import probe_listener, uvicorn_config
from bot.health import start_metrics_server
from bot.identity import SlackIdentity
from bot.listeners.mentions import run_reply_sweeper
from bot.metrics import Metrics, RequestKind
from bot.services import Services
from bot.settings import Settings, SettingsError
from bot.verify import SignatureVerifier
from recommender import GpufitError

__all__ = [
    "BACKGROUND_GRACE_S",
    "DRAIN_GRACE_S",
    "EVENTS_PATH",
    "MAX_BODY_BYTES",
    "DrainingServer",
    "build_asgi",
    "readable_body",
    "readiness",
    "request_kind",
    "serve",
]

logger = logging.getLogger(__name__)

EVENTS_PATH = "/slack/events"
#: Longest a readiness probe waits on Redis or the catalog (probes time out at ~1-5 s).
READY_TIMEOUT_S = 2.0  # ours
#: Largest request body ``/slack/events`` reads (413 above it, before Bolt parses or verifies
#: it). Slash commands and events are a few KB; a button click carries the message it sits on,
#: and gpufit's messages are budgeted to ~16 KB of blocks JSON (~50 KB form-encoded); a 4-5×
#: margin over that still refuses multi-MB bodies sent to burn CPU and memory.
MAX_BODY_BYTES = 256 * 1024  # ours
#: After SIGTERM, how long /readyz answers 503 before uvicorn stops accepting connections:
#: one default Kubernetes readiness period (periodSeconds 10), which still leaves most of the
#: default 30 s terminationGracePeriodSeconds for the requests in flight.
DRAIN_GRACE_S = 10.0
#: After uvicorn has stopped, how long work started by the last requests may still run: an
#: answer is milliseconds and a Slack post a second or two; 10 s more still ends inside the
#: default 30 s terminationGracePeriodSeconds (10 s readiness grace + requests + this).
BACKGROUND_GRACE_S = 10.0
#: How long the whole body of a Slack request may take to arrive (408 after it): Slack sends
#: a few KB at once; a client trickling bytes holds a connection and a task for nothing.
BODY_TIMEOUT_S = 10.0  # ours


class DrainingServer(uvicorn.Server):
    """uvicorn, but the first SIGINT/SIGTERM starts a drain instead of stopping at once.

    While :attr:`draining`, ``/readyz`` answers 503 and every other route still works; after
    ``drain_grace_s`` (or at a second signal) uvicorn's own graceful shutdown runs, which stops
    accepting connections and waits for the requests in flight.
    """

    def __init__(self, config: uvicorn.Config, *, drain_grace_s: float = DRAIN_GRACE_S) -> None:
        super().__init__(config)
        self.drain_grace_s = drain_grace_s
        self._drain_signal: int | None = None
        self._drain_until_s = 0.0

    @property
    def draining(self) -> bool:
        """A shutdown has been asked for: the load balancer should send no new traffic."""
        return self._drain_signal is not None or self.should_exit

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        # Runs as the signal handler: only set state here (no logging, no awaiting).
        if self._drain_signal is not None or self.drain_grace_s <= 0:
            super().handle_exit(sig, frame)  # a second signal: stop draining, shut down now
            return
        self._drain_signal = sig
        self._drain_until_s = time.monotonic() + self.drain_grace_s

    async def on_tick(self, counter: int) -> bool:
        sig = self._drain_signal
        if sig is not None and not self.should_exit and time.monotonic() >= self._drain_until_s:
            logger.info("drain grace over; finishing in-flight requests and stopping")
            super().handle_exit(sig, None)  # uvicorn's shutdown; it re-raises sig at the end
        return await super().on_tick(counter)


async def readiness(
    services: Services,
    *,
    connected: Callable[[], Awaitable[bool]] | None = None,
    identity: SlackIdentity | None = None,
) -> dict[str, bool]:
    """Each readiness check and whether it passed (with ``identity``: ``slack``, the bot's
    ``auth.test`` has answered, so requests can be authorized)."""
    checks: dict[str, bool] = {}
    if identity is not None:
        checks["slack"] = identity.ready
    try:
        checks["redis"] = bool(await asyncio.wait_for(services.redis.ping(), READY_TIMEOUT_S))
    except (RedisError, OSError, TimeoutError):
        checks["redis"] = False
    try:
        catalog = await asyncio.wait_for(services.catalog(), READY_TIMEOUT_S)
        checks["prices"] = len(catalog.offers) > 0
    except (GpufitError, OSError, TimeoutError):
        checks["prices"] = False
    if connected is not None:
        checks["socket"] = await connected()
    return checks


def readable_body(body: bytes, content_type: str) -> bool:
    """Whether Bolt can parse ``body``: UTF-8 text whose JSON (the body of an event,
    the ``payload`` of an interaction) decodes. Bolt raised on the others (a 500): bytes that
    are not UTF-8, or JSON nested past Python's recursion limit (1,000 deep)."""
    try:
        text = body.decode("utf-8")
        if "application/json" in content_type:
            json.loads(text)
        elif payload := parse_qs(text).get("payload"):
            json.loads(payload[0])
    except (ValueError, RecursionError):  # UnicodeDecodeError and JSONDecodeError included
        return False
    return True


def request_kind(content_type: str, body: bytes) -> RequestKind:
    """What a Slack request is, from its raw body: a slash command, an interaction or an event."""
    if "application/json" in content_type:
        return "event"
    if body.startswith(b"payload=") or b"&payload=" in body:
        return "action"
    return "command"


async def _capped(request: Request, limit: int) -> Request | None:
    """``request`` with its body read, or ``None`` when the body is over ``limit`` bytes.

    The declared ``Content-Length`` is checked first, then the bytes actually received (a
    chunked body declares none), so no more than ``limit`` bytes are ever buffered.
    """
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        return None
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            return None
        chunks.append(chunk)
    return _replaying(request, b"".join(chunks))


def _replaying(request: Request, body: bytes) -> Request:
    """``request`` whose body is ``body``, already read."""
    pending = [body]

    async def replay() -> Message:
        # The body once, as one message; after it, the client's own messages (disconnect).
        if pending:
            return {"type": "http.request", "body": pending.pop(), "more_body": False}
        return await request.receive()

    return Request(request.scope, replay)


def build_asgi(
    services: Services,
    app: AsyncApp | None,
    *,
    verifier: SignatureVerifier | None = None,
    connected: Callable[[], Awaitable[bool]] | None = None,
    metrics: Metrics | None = None,
    draining: Callable[[], bool] | None = None,
    body_timeout_s: float = BODY_TIMEOUT_S,
    identity: SlackIdentity | None = None,
) -> Starlette:
    """The ASGI app: Slack's route (when ``app`` is given) and the health routes. With
    ``metrics``, each verified Slack request is counted and its ack timed here, by request
    kind (the HTTP response to Slack is the ack); ``/metrics`` itself is not on this public
    port but on ``GPUFIT_METRICS_PORT`` (:func:`serve`). While ``draining()`` is true,
    ``/readyz`` answers 503; with ``identity``, also until the bot's ``auth.test`` answered.

    Slack's route needs ``verifier``: every request is verified here, before Bolt parses it.
    """

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def readyz(request: Request) -> Response:
        if draining is not None and draining():
            return JSONResponse({"status": "draining", "checks": {}}, status_code=503)
        checks = await readiness(services, connected=connected, identity=identity)
        ready = all(checks.values())
        return JSONResponse(
            {"status": "ready" if ready else "not ready", "checks": checks},
            status_code=200 if ready else 503,
        )

    routes: list[BaseRoute] = [
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
    ]
    if app is not None:
        if verifier is None:
            raise ValueError("Slack's route needs a SignatureVerifier")
        handler = AsyncSlackRequestHandler(app)

        async def events(request: Request) -> Response:
            if not verifier.headers_ok(request.headers, time.time()):
                return PlainTextResponse("invalid request", status_code=401)
            try:
                async with asyncio.timeout(body_timeout_s):
                    capped = await _capped(request, MAX_BODY_BYTES)
            except TimeoutError:
                logger.info("request body not received within %g s; 408", body_timeout_s)
                return PlainTextResponse("Request body too slow", status_code=408)
            except ClientDisconnect:
                logger.info("client disconnected before sending the whole body")
                return PlainTextResponse("", status_code=400)
            if capped is None:
                return PlainTextResponse("Request body too large", status_code=413)
            request = capped
            # Checked before the signature, which slack_sdk computes over the body as UTF-8.
            if not readable_body(await request.body(), request.headers.get("content-type", "")):
                logger.info("request body is not UTF-8 or its JSON does not decode; 400")
                return PlainTextResponse("invalid request body", status_code=400)
            if not verifier.verify(request.headers, await request.body(), time.time()):
                return PlainTextResponse("invalid request", status_code=401)
            if metrics is None:
                response: Response = await handler.handle(request)
                return response
            kind = request_kind(request.headers.get("content-type", ""), await request.body())
            with metrics.time_ack(kind):
                timed: Response = await handler.handle(request)
            return timed

        routes.append(Route(EVENTS_PATH, events, methods=["POST"]))
    return Starlette(routes=routes)


class _Drain:
    """Whether the server that serves an ASGI app is draining (the app is built first)."""

    def __init__(self) -> None:
        self.server: DrainingServer | None = None

    def __call__(self) -> bool:
        return self.server is not None and self.server.draining


def _uvicorn(settings: Settings, asgi: Starlette, drain: _Drain) -> DrainingServer:
    config = uvicorn_config(
        asgi, host=settings.host, port=settings.port, keep_alive_s=settings.keep_alive_s
    )
    drain.server = DrainingServer(config)
    return drain.server


def _probes(settings: Settings, probes: Starlette) -> contextlib.AbstractAsyncContextManager[Any]:
    return probe_listener(
        probes, host=settings.host, port=settings.health_port, keep_alive_s=settings.keep_alive_s
    )


async def serve(settings: Settings, services: Services, *, socket_mode: bool) -> None:
    """Run the Slack app until SIGINT/SIGTERM (draining first: see :class:`DrainingServer`),
    with ``/metrics`` and ``/healthz`` on ``GPUFIT_METRICS_PORT`` unless metrics are off.

    Raises:
        SettingsError: a token or secret the chosen mode needs is not set.
    """
    # Prometheus scrapes GPUFIT_METRICS_PORT, never the port Slack (and anyone) can reach.
    scraped = None
    if settings.metrics_enabled:
        try:
            scraped = start_metrics_server(settings.host, settings.metrics_port, services.metrics)
        except OSError as exc:
            raise SettingsError(
                f"GPUFIT_METRICS_PORT {settings.metrics_port} cannot be served ({exc.strerror}).",
                hint="Set GPUFIT_METRICS_PORT to a free port (a worker on the same host uses "
                "one too), or GPUFIT_METRICS_ENABLED=false.",
            ) from None
    stop_sweeping = asyncio.Event()
    sweeper = asyncio.create_task(
        run_reply_sweeper(services, top=settings.top, stop=stop_sweeping), name="gpufit-replies"
    )
    try:
        await _serve(settings, services, socket_mode=socket_mode)
    finally:
        stop_sweeping.set()  # replies still due are left to the other replicas (or the next start)
        await asyncio.wait([sweeper], timeout=BACKGROUND_GRACE_S)
        await services.background.drain(BACKGROUND_GRACE_S)
        services.scans.shutdown(wait=False, cancel_futures=True)
        if scraped is not None:
            scraped.close()


async def _serve(settings: Settings, services: Services, *, socket_mode: bool) -> None:
    identity = SlackIdentity(services.client)
    app = build_app(settings, services, identity=identity)
    # One auth.test at start-up (its answer authorizes every request); /readyz waits for it.
    stop_warm_up = asyncio.Event()
    warm_up = asyncio.create_task(identity.warm_up(stop_warm_up), name="gpufit-auth-test")
    try:
        await _serve_app(settings, services, app, identity, socket_mode=socket_mode)
    finally:
        stop_warm_up.set()
        await asyncio.wait([warm_up], timeout=READY_TIMEOUT_S)


async def _serve_app(
    settings: Settings,
    services: Services,
    app: AsyncApp,
    identity: SlackIdentity,
    *,
    socket_mode: bool,
) -> None:
    drain = _Drain()
    if not socket_mode:
        if settings.slack_signing_secret is None:
            raise SettingsError(
                "SLACK_SIGNING_SECRET is not set; HTTP mode cannot verify Slack's requests.",
                hint="Set SLACK_SIGNING_SECRET (Basic Information → App Credentials), "
                "or run `gpufit serve --socket-mode`.",
            )
        logger.info("serving Slack over HTTP on %s:%s%s", settings.host, settings.port, EVENTS_PATH)
        asgi = build_asgi(
            services,
            app,
            verifier=SignatureVerifier(settings.slack_signing_secret),
            metrics=services.metrics,
            draining=drain,
            identity=identity,
        )
        probes = build_asgi(services, None, draining=drain, identity=identity)
        async with _probes(settings, probes):
            await _uvicorn(settings, asgi, drain).serve()
        return
    if settings.slack_app_token is None:
        raise SettingsError(
            "SLACK_APP_TOKEN is not set; Socket Mode needs an app-level token.",
            hint="Create one with the connections:write scope (Basic Information → "
            "App-Level Tokens) and set SLACK_APP_TOKEN=xapp-...",
        )
    socket = AsyncSocketModeHandler(app, settings.slack_app_token.get_secret_value())

    async def connected() -> bool:
        return bool(await socket.client.is_connected())

    await socket.connect_async()  # type: ignore[no-untyped-call]
    logger.info("connected to Slack in Socket Mode; health on %s:%s", settings.host, settings.port)
    try:
        asgi = build_asgi(
            services,
            None,
            connected=connected,
            metrics=services.metrics,
            draining=drain,
            identity=identity,
        )
        probes = build_asgi(services, None, connected=connected, draining=drain, identity=identity)
        async with _probes(settings, probes):
            await _uvicorn(settings, asgi, drain).serve()
    finally:
        await socket.close_async()  # type: ignore[no-untyped-call]
