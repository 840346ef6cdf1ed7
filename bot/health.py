"""The worker's ``/metrics`` + ``/healthz`` listener, and the container health check.

``gpufit worker`` has no HTTP face of its own: :func:`start_metrics_server` serves its
metrics (:mod:`bot.metrics`) and ``/healthz`` on ``GPUFIT_METRICS_PORT`` from a daemon
thread. :func:`healthcheck` is the image's ``HEALTHCHECK`` (``python -m bot.health``): it asks
``/healthz`` of whichever command the container runs.
"""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable, Iterable
from socketserver import ThreadingMixIn
from typing import Any
from urllib.error import URLError
from urllib.request import urlopen
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client import make_wsgi_app

from bot.metrics import Metrics, default_metrics
from bot.settings import Settings, SettingsError

__all__ = ["MetricsServer", "healthcheck", "start_metrics_server"]


class _ThreadingWSGIServer(ThreadingMixIn, WSGIServer):
    daemon_threads = True


class _QuietHandler(WSGIRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        """Scrapes every 15 s would drown the logs; Prometheus records its own scrape errors."""


class MetricsServer:
    """A running ``/metrics`` + ``/healthz`` listener on a background thread."""

    def __init__(self, server: WSGIServer, thread: threading.Thread) -> None:
        self._server = server
        self._thread = thread

    @property
    def port(self) -> int:
        """The bound port (useful when started on port 0)."""
        return int(self._server.server_address[1])

    def close(self) -> None:
        """Stop serving and release the port."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def start_metrics_server(
    host: str,
    port: int,
    metrics: Metrics | None = None,
    *,
    ready: Callable[[], dict[str, Any]] | None = None,
) -> MetricsServer:  # pragma: no branch
    """Serve ``/metrics`` and ``/healthz`` on ``host:port`` from a daemon thread.

    For processes without an HTTP face (``gpufit worker``): Prometheus scrapes it and the
    liveness probe asks ``/healthz``. With ``ready``, ``/readyz`` answers its checks as JSON
    (``checks``: name → passed; any other keys are details), 503 when one failed. Any other
    path is 404.
    """
    metrics_app = make_wsgi_app((metrics or default_metrics()).registry)

    def app(environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if path == "/metrics":
            body: Iterable[bytes] = metrics_app(environ, start_response)
            return body
        if path == "/readyz" and ready is not None:
            report = ready()
            ok = all(report.get("checks", {}).values())
            status = "200 OK" if ok else "503 Service Unavailable"
            start_response(status, [("Content-Type", "application/json")])
            return [json.dumps({"status": "ready" if ok else "not ready", **report}).encode()]
        if path == "/healthz":
            start_response("200 OK", [("Content-Type", "text/plain; charset=utf-8")])
            return [b"ok\n"]
        start_response("404 Not Found", [("Content-Type", "text/plain; charset=utf-8")])
        return [b"not found\n"]

    server = make_server(
        host, port, app, server_class=_ThreadingWSGIServer, handler_class=_QuietHandler
    )
    thread = threading.Thread(target=server.serve_forever, name="gpufit-metrics", daemon=True)
    thread.start()
    return MetricsServer(server, thread)


# ------------------------------------------------------------------------------ health check


def healthcheck(settings: Settings, *, timeout_s: float = 3.0) -> bool:
    """Whether this container's process answers ``/healthz`` on loopback.

    ``serve`` answers on ``GPUFIT_HEALTH_PORT`` (and ``GPUFIT_PORT``), the worker on
    ``GPUFIT_METRICS_PORT``; any counts, so one image-level ``HEALTHCHECK``
    (``python -m bot.health``) fits both commands.
    """
    for port in dict.fromkeys((settings.health_port, settings.port, settings.metrics_port)):
        try:
            with urlopen(f"http://127.0.0.1:{port}/healthz", timeout=timeout_s) as response:
                if response.status == 200:
                    return True
        except (URLError, OSError):
            continue
    return False


def main() -> int:
    """The container ``HEALTHCHECK``: 0 when the process answers, 1 otherwise (a bad setting
    is reported on stderr by its variable name, without a traceback)."""
    try:
        settings = Settings.from_env()
    except SettingsError as exc:
        sys.stderr.write(f"gpufit: {exc.user_text()}\n")
        return 1
    return 0 if healthcheck(settings) else 1


if __name__ == "__main__":  # pragma: no cover - the container HEALTHCHECK entry point
    sys.exit(main())
