"""Shared feed-test fixtures: fixture documents, a real loopback HTTP feed server with faults,
and a real Redis server (``tests/redis_server.py``)."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.redis_server import redis_server, redis_url

__all__ = [
    "CATALOGS",
    "DATA",
    "FeedServer",
    "Route",
    "catalog_bytes",
    "catalog_clouds",
    "redis_server",
    "redis_url",
]

DATA = Path(__file__).resolve().parent / "data"

#: Real SkyPilot catalog rows, one ``vms.csv`` per cloud at its published path under
#: ``catalogs/v8/``; each file's first line is a ``#`` comment naming the rows' source.
CATALOGS = DATA / "catalogs" / "v8"


def fixture_bytes(name: str) -> bytes:
    return (DATA / name).read_bytes()


def catalog_clouds() -> list[str]:
    """The clouds with a real-rows fixture."""
    return sorted(p.parent.name for p in CATALOGS.glob("*/vms.csv"))


def catalog_bytes(cloud: str) -> bytes:
    """A cloud's fixture as upstream serves it: the leading ``#`` source comment removed."""
    lines = (CATALOGS / cloud / "vms.csv").read_bytes().splitlines(keepends=True)
    while lines and lines[0].startswith(b"#"):
        lines.pop(0)
    return b"".join(lines)


@dataclass
class Route:
    """What the server answers on one path; the fault fields inject failures."""

    body: bytes = b""
    status: int = 200
    content_type: str = "text/plain; charset=utf-8"
    etag: str | None = None
    last_modified: str | None = None
    #: Answer the first ``fail_times`` requests with ``fail_status`` (and ``retry_after``).
    fail_times: int = 0
    fail_status: int = 500
    retry_after: str | None = None
    #: Send only this many bytes of the body, then close (Content-Length says the full size).
    truncate_to: int | None = None
    #: Hold the request without answering until the test ends (or the client gives up).
    hang: bool = False
    #: Send the body one byte per this many seconds (each byte resets a per-read timeout).
    trickle_s: float | None = None
    #: Answer 302 with this ``Location`` instead of the body.
    redirect_to: str | None = None


@dataclass
class Request:
    path: str
    headers: dict[str, str]


@dataclass
class FeedServer:
    """A threaded HTTP server on 127.0.0.1 serving :class:`Route`s and recording requests."""

    base_url: str = ""
    routes: dict[str, Route] = field(default_factory=dict)
    requests: list[Request] = field(default_factory=list)
    release: threading.Event = field(default_factory=threading.Event)

    def url(self, path: str) -> str:
        return self.base_url + path

    def serve(self, path: str, route: Route) -> str:
        self.routes[path] = route
        return self.url(path)

    def hits(self, path: str) -> int:
        return sum(1 for r in self.requests if r.path == path)

    def serve_catalogs(self, last_modified: str) -> dict[str, str]:
        """Serve every cloud's fixture at ``/catalogs/v8/<cloud>/vms.csv``, as the catalog's
        host does, with ``Last-Modified`` and an ``ETag``; returns cloud → URL."""
        urls = {}
        for cloud in catalog_clouds():
            body = catalog_bytes(cloud)
            route = Route(body, etag=f'"{cloud}-{len(body)}"', last_modified=last_modified)
            urls[cloud] = self.serve(f"/catalogs/v8/{cloud}/vms.csv", route)
        return urls


def _handler(server: FeedServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: object) -> None:
            return

        def do_GET(self) -> None:
            server.requests.append(Request(self.path, dict(self.headers.items())))
            route = server.routes.get(self.path)
            if route is None:
                self._send(404, b"not found")
                return
            if route.hang:
                server.release.wait(timeout=30)
                return
            if route.redirect_to is not None:
                self._send(302, b"", {"Location": route.redirect_to})
                return
            if route.fail_times > 0:
                route.fail_times -= 1
                extra = {"Retry-After": route.retry_after} if route.retry_after else {}
                self._send(route.fail_status, b"failing on purpose", extra)
                return
            if route.etag and self.headers.get("If-None-Match") == route.etag:
                self._send(304, b"", {"ETag": route.etag})
                return
            since = self.headers.get("If-Modified-Since")
            if route.last_modified and since == route.last_modified:
                self._send(304, b"", {"Last-Modified": route.last_modified})
                return
            headers = {"Content-Type": route.content_type}
            if route.etag:
                headers["ETag"] = route.etag
            if route.last_modified:
                headers["Last-Modified"] = route.last_modified
            if route.trickle_s is not None:
                self.send_response(route.status)
                self.send_header("Content-Length", str(len(route.body)))
                self.end_headers()
                for i in range(len(route.body)):
                    if server.release.wait(timeout=route.trickle_s):
                        return
                    self.wfile.write(route.body[i : i + 1])
                    self.wfile.flush()
                return
            if route.truncate_to is not None:
                self.send_response(route.status)
                for key, value in headers.items():
                    self.send_header(key, value)
                self.send_header("Content-Length", str(len(route.body)))
                self.end_headers()
                self.wfile.write(route.body[: route.truncate_to])
                self.wfile.flush()
                self.close_connection = True
                return
            self._send(route.status, route.body, headers)

        def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            if status != 304:
                self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if status != 304:
                self.wfile.write(body)

    return Handler


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: object, client_address: object) -> None:
        # Clients that give up (timeouts, size caps) reset connections on purpose.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)  # type: ignore[arg-type]


@pytest.fixture
def feed_server() -> Iterator[FeedServer]:
    """A real HTTP server on a free loopback port, stopped after the test."""
    state = FeedServer()
    httpd = _QuietServer(("127.0.0.1", 0), _handler(state))
    state.base_url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        state.release.set()
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=10)
