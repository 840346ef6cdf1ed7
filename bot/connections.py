"""Connection limits of gpufit's HTTP listeners: uvicorn's own h11 protocol, with a header
deadline and a connection cap that sheds idle connections first.

uvicorn (0.55) has a keep-alive timeout (armed only after a response) and
``limit_concurrency`` (a 503 to every *request* once that many connections are open, idle ones
included), but no header-read timeout and no limit on a connection that never sends a byte.
So 260 idle sockets answered every request 503, and a client trickling its headers kept its
socket forever (issue #34). :class:`GuardedH11Protocol` is uvicorn's ``H11Protocol`` (same
parser, same ASGI cycle) with three additions:

* **header deadline** — a request head (request line and headers) must be complete within
  :attr:`ConnectionLimits.header_timeout_s` of the connection opening or of its first byte
  after a keep-alive wait; otherwise the connection is closed. Data arriving does not extend
  the deadline, so a trickle is cut off like silence is.
* **idle timeout** — a connection that has sent nothing since it opened is closed at the
  same deadline; between requests uvicorn's ``timeout_keep_alive`` closes it
  (:data:`bot.settings.KEEP_ALIVE_S`).
* **idle-first shedding** — when a new connection would take the listener over
  :attr:`ConnectionLimits.max_connections`, the connections with no request in flight are
  closed, longest idle first; only when every one is busy is the newcomer closed instead. So
  idle sockets can never lock out a real request, and the process's file descriptors stay
  bounded however many sockets a client opens.

The probes (``/healthz``, ``/readyz``) also have a listener of their own
(``GPUFIT_HEALTH_PORT``, :func:`bot.server.serve`) whose connections are counted apart from
the public port's, so no number of open public connections can starve the kubelet's probes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import AsyncIterator, Generator
from dataclasses import dataclass
from typing import Any, ClassVar

import h11
import uvicorn
from starlette.applications import Starlette
from uvicorn.protocols.http.h11_impl import H11Protocol

from bot.settings import KEEP_ALIVE_S, SettingsError

__all__ = [
    "HEADER_TIMEOUT_S",
    "LIMIT_CONCURRENCY",
    "MAX_CONNECTIONS",
    "MAX_HEADER_BYTES",
    "PROBE_MAX_CONNECTIONS",
    "ConnectionLimits",
    "GuardedH11Protocol",
    "guarded_h11",
    "probe_listener",
    "uvicorn_config",
]

logger = logging.getLogger(__name__)

#: How long a request head may take to arrive: Slack sends its ~1 KB of headers in one write,
#: and a kubelet probe is one small packet; nginx's own client_header_timeout is 60 s.
HEADER_TIMEOUT_S = 10.0  # ours: 100x what a real client needs, 1/6 of nginx's default
#: Connections the public listener holds at once; above it idle ones are shed. The pod's CPU
#: answers ~100-200 commands/s (docs/benchmarks.md), so 256 requests in flight is already
#: over a second of work; each connection costs one file descriptor and ~10 KB.
MAX_CONNECTIONS = 256  # ours
#: Connections the probe listener holds at once: the kubelet's three probes and a scraper
#: need a handful; a shed idle one never blocks a probe that sends its request.
PROBE_MAX_CONNECTIONS = 16  # ours
#: At most one "over the cap" log line per this many seconds (with the count since the last).
SHED_LOG_EVERY_S = 10.0  # ours
#: uvicorn's own cap (503 to a request once this many connections or tasks are open). Only a
#: backstop: :class:`bot.connections.GuardedH11Protocol` keeps a listener at its
#: ``max_connections`` by shedding idle connections, and a shed connection still counts here
#: until its close completes, so this sits well above that cap.
LIMIT_CONCURRENCY = 2 * MAX_CONNECTIONS  # ours
#: Largest incomplete HTTP event h11 buffers (the request line and headers): 16 KiB.
MAX_HEADER_BYTES = 16 * 1024  # Slack's headers are ~1 KB; h11's own default is 16 KiB too
#: How long the probe listener waits for its last probe to finish when the server stops.
PROBE_STOP_S = 5.0  # ours: a probe answers in milliseconds, readiness in at most ~2 s


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    """A listener's connection limits (tests shorten them)."""

    header_timeout_s: float = HEADER_TIMEOUT_S
    max_connections: int = MAX_CONNECTIONS


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a header deadline and idle-first shedding (see the module
    docstring). Use :func:`guarded_h11` to get one configured with limits."""

    LIMITS: ClassVar[ConnectionLimits] = ConnectionLimits()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._head_timer: asyncio.TimerHandle | None = None
        #: When the connection last became idle (opened, or finished a response).
        self.idle_since = 0.0

    # -------------------------------------------------------------------- uvicorn's hooks

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self.idle_since = self.loop.time()
        self._arm_head_timer()
        self._shed()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state is h11.IDLE:
            self._arm_head_timer()  # a head is arriving: it has its deadline from now
        else:
            self._cancel_head_timer()  # the head is complete

    def on_response_complete(self) -> None:
        self.idle_since = self.loop.time()
        self._cancel_head_timer()  # between requests the keep-alive timeout applies
        super().on_response_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        self._cancel_head_timer()
        super().connection_lost(exc)

    # -------------------------------------------------------------------- the additions

    @property
    def busy(self) -> bool:
        """A request on this connection is being served (its head arrived, no response yet)."""
        return self.cycle is not None and not self.cycle.response_complete

    def _arm_head_timer(self) -> None:
        if self._head_timer is None:
            self._head_timer = self.loop.call_later(
                self.LIMITS.header_timeout_s, self._head_timed_out
            )

    def _cancel_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self.conn.their_state is h11.IDLE and not self.busy:
            logger.debug("no request head within %g s; closing", self.LIMITS.header_timeout_s)
            self.close_idle()

    def close_idle(self) -> None:
        """Close this connection, which has no request in flight."""
        if self.transport.is_closing():
            return
        if self.conn.our_state is h11.IDLE:
            self.conn.send(h11.ConnectionClosed())
        self.transport.close()

    def _shed(self) -> None:
        open_ = [
            c
            for c in self.connections
            if isinstance(c, GuardedH11Protocol) and not c.transport.is_closing()
        ]
        excess = len(open_) - self.LIMITS.max_connections
        if excess <= 0:
            return
        idle = sorted((c for c in open_ if not c.busy), key=lambda c: c.idle_since)
        for victim in idle[:excess]:
            victim.close_idle()
        _Shedding.count += min(excess, len(idle))
        now = self.loop.time()
        if now - _Shedding.logged_at >= SHED_LOG_EVERY_S:  # a flood is a line, not 20k lines
            logger.info(
                "connections over the cap of %d: %d closed since the last report",
                self.LIMITS.max_connections,
                _Shedding.count,
            )
            _Shedding.count, _Shedding.logged_at = 0, now


class _Shedding:
    """How many connections were shed since the last log line, and when that line was."""

    count = 0
    logged_at = -SHED_LOG_EVERY_S


def guarded_h11(limits: ConnectionLimits) -> type[GuardedH11Protocol]:
    """The protocol class for uvicorn's ``http=`` setting, with ``limits``."""
    return type("GuardedH11Protocol", (GuardedH11Protocol,), {"LIMITS": limits})


def uvicorn_config(
    asgi: Starlette,
    *,
    host: str,
    port: int,
    keep_alive_s: int = KEEP_ALIVE_S,
    limits: ConnectionLimits | None = None,
) -> uvicorn.Config:
    """uvicorn's settings for one of gpufit's listeners: uvicorn's h11 protocol with a header
    deadline and idle-first shedding (:mod:`bot.connections`), a keep-alive longer than the
    proxy's, a header size limit, the process's own logging."""
    return uvicorn.Config(
        asgi,
        host=host,
        port=port,
        # uvicorn's pure-Python h11 protocol, whatever else is installed, with our limits.
        http=guarded_h11(limits or ConnectionLimits()),
        # no websockets: gpufit serves none, and importing an installed `websockets` (the
        # launch-test extra brings one) warns that its legacy module is deprecated
        ws="none",
        limit_concurrency=LIMIT_CONCURRENCY,
        timeout_keep_alive=keep_alive_s,
        h11_max_incomplete_event_size=MAX_HEADER_BYTES,
        log_config=None,  # keep the process's own logging setup
        access_log=False,  # access lines would carry nothing but noise; Bolt logs outcomes
        lifespan="off",
    )


class _ProbeServer(uvicorn.Server):
    """uvicorn for the probe listener, which stops with the main server: signals are the main
    server's alone (uvicorn would otherwise take them over from it)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None]:
        yield


@contextlib.asynccontextmanager
async def probe_listener(
    asgi: Starlette, *, host: str, port: int, keep_alive_s: int = KEEP_ALIVE_S
) -> AsyncIterator[uvicorn.Server]:
    """``/healthz`` and ``/readyz`` (``asgi``) on a listener of their own while the block runs:
    its connections are counted apart from the public port's (:mod:`bot.connections`).

    Raises:
        SettingsError: the port cannot be bound.
    """
    limits = ConnectionLimits(max_connections=PROBE_MAX_CONNECTIONS)
    config = uvicorn_config(asgi, host=host, port=port, keep_alive_s=keep_alive_s, limits=limits)
    try:
        # Bound here, not by uvicorn, which exits the process when it cannot bind.
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.create_server((host, port), family=family)
    except OSError as exc:
        raise SettingsError(
            f"GPUFIT_HEALTH_PORT {port} cannot be served ({exc.strerror}).",
            hint="Set GPUFIT_HEALTH_PORT to a free port (not GPUFIT_PORT or GPUFIT_METRICS_PORT).",
        ) from None
    server = _ProbeServer(config)
    task = asyncio.create_task(server.serve(sockets=[sock]), name="gpufit-probes")
    try:
        while not server.started and not task.done():  # noqa: ASYNC110 - uvicorn has no event
            await asyncio.sleep(0.01)
        yield server
    finally:
        server.should_exit = True
        await asyncio.wait([task], timeout=PROBE_STOP_S)
        sock.close()
