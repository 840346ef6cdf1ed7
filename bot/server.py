"""``gpufit serve``: the Slack app over HTTP (ASGI + uvicorn) or Socket Mode.

HTTP routes: ``POST /slack/events`` (commands, events and interactivity; Bolt verifies the
signature and rejects unsigned, forged or replayed requests with 401 before any listener
runs), ``GET /healthz`` (the process is up) and ``GET /readyz`` (Redis answers and a price
snapshot is loaded; in Socket Mode also: the socket is connected). Socket Mode serves only
the two health routes over HTTP.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

import uvicorn
from redis.exceptions import RedisError
from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_bolt.adapter.starlette.async_handler import AsyncSlackRequestHandler
from slack_bolt.async_app import AsyncApp
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route

from bot.app import build_app
from bot.observability import Metrics, RequestKind, metrics_asgi_app
from bot.services import Services
from bot.settings import Settings, SettingsError
from recommender import GpufitError

__all__ = ["EVENTS_PATH", "build_asgi", "readiness", "request_kind", "serve"]

logger = logging.getLogger(__name__)

EVENTS_PATH = "/slack/events"
#: Longest a readiness probe waits on Redis or the catalog (probes time out at ~1-5 s).
READY_TIMEOUT_S = 2.0  # ours


async def readiness(
    services: Services, *, connected: Callable[[], Awaitable[bool]] | None = None
) -> dict[str, bool]:
    """Each readiness check and whether it passed."""
    checks: dict[str, bool] = {}
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


def request_kind(content_type: str, body: bytes) -> RequestKind:
    """What a Slack request is, from its raw body: a slash command, an interaction or an event."""
    if "application/json" in content_type:
        return "event"
    if body.startswith(b"payload=") or b"&payload=" in body:
        return "action"
    return "command"


def build_asgi(
    services: Services,
    app: AsyncApp | None,
    *,
    connected: Callable[[], Awaitable[bool]] | None = None,
    metrics: Metrics | None = None,
) -> Starlette:
    """The ASGI app: Slack's route (when ``app`` is given), the health routes and, with
    ``metrics``, ``/metrics`` (the HTTP response to Slack is the ack, so its latency is timed
    here, by request kind)."""

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def readyz(request: Request) -> Response:
        checks = await readiness(services, connected=connected)
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
        handler = AsyncSlackRequestHandler(app)

        async def events(request: Request) -> Response:
            if metrics is None:
                response: Response = await handler.handle(request)
                return response
            kind = request_kind(request.headers.get("content-type", ""), await request.body())
            with metrics.time_ack(kind):
                timed: Response = await handler.handle(request)
            return timed

        routes.append(Route(EVENTS_PATH, events, methods=["POST"]))
    if metrics is not None:
        routes.append(Mount("/metrics", app=metrics_asgi_app(metrics)))
    return Starlette(routes=routes)


def _uvicorn(settings: Settings, asgi: Starlette) -> uvicorn.Server:
    config = uvicorn.Config(
        asgi,
        host=settings.host,
        port=settings.port,
        log_config=None,  # keep the process's own logging setup
        access_log=False,  # access lines would carry nothing but noise; Bolt logs outcomes
        lifespan="off",
    )
    return uvicorn.Server(config)


async def serve(settings: Settings, services: Services, *, socket_mode: bool) -> None:
    """Run the Slack app until SIGINT/SIGTERM.

    Raises:
        SettingsError: a token or secret the chosen mode needs is not set.
    """
    app = build_app(settings, services)
    if not socket_mode:
        if settings.slack_signing_secret is None:
            raise SettingsError(
                "SLACK_SIGNING_SECRET is not set; HTTP mode cannot verify Slack's requests.",
                hint="Set SLACK_SIGNING_SECRET (Basic Information → App Credentials), "
                "or run `gpufit serve --socket-mode`.",
            )
        logger.info("serving Slack over HTTP on %s:%s%s", settings.host, settings.port, EVENTS_PATH)
        await _uvicorn(settings, build_asgi(services, app, metrics=services.metrics)).serve()
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
        await _uvicorn(
            settings,
            build_asgi(services, None, connected=connected, metrics=services.metrics),
        ).serve()
    finally:
        await socket.close_async()  # type: ignore[no-untyped-call]
