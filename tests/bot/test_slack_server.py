"""HTTP mode over real sockets: ``/slack/events`` through uvicorn, ``/healthz``, ``/readyz``,
and ``gpufit serve`` as a process."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
import uvicorn
from slack_bolt.async_app import AsyncApp
from starlette.applications import Starlette

from bot.server import DRAIN_GRACE_S, EVENTS_PATH, DrainingServer, build_asgi
from bot.services import Services, static_catalog
from bot.settings import Settings
from recommender import Catalog
from tests.asgi_server import free_port, serving, started
from tests.bot.slack_requests import (
    FORM,
    JSON,
    SECRET,
    VERIFIER,
    command_body,
    mention_body,
    signed_headers,
)
from tests.fake_slack import FakeSlack

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
async def base_url(app: AsyncApp, services: Services) -> AsyncIterator[str]:
    async with serving(build_asgi(services, app, verifier=VERIFIER)) as url:
        yield url


class TestEventsOverHttp:
    async def test_a_slash_command_is_acked_then_answered(
        self, base_url: str, fake_slack: FakeSlack
    ) -> None:
        """A signed command POSTed to /slack/events is acked "Working on it…"; the ephemeral
        answer follows at its response_url."""
        body = command_body("13B full finetune 2 days", response_url=fake_slack.hook_url())
        async with httpx.AsyncClient() as http:
            response = await http.post(
                base_url + EVENTS_PATH,
                content=body,
                headers=signed_headers(body, content_type=FORM),
            )
        assert response.status_code == 200
        assert response.json()["response_type"] == "ephemeral"
        assert "Working on it" in response.json()["text"]
        [answered] = await fake_slack.wait_for("hook")
        assert answered.body["text"].startswith("gpufit: ")

    async def test_a_mention_event_is_acked_and_answered_in_thread(
        self, base_url: str, fake_slack: FakeSlack
    ) -> None:
        """An event envelope is acked with 200 and the reply is posted in the thread."""
        body = mention_body("13B lora 1 day", event_id="EvHttp", ts="1700000000.000500")
        async with httpx.AsyncClient() as http:
            response = await http.post(
                base_url + EVENTS_PATH,
                content=body,
                headers=signed_headers(body, content_type=JSON),
            )
        assert response.status_code == 200
        [post] = await fake_slack.wait_for("chat.postMessage")
        assert post.body["thread_ts"] == "1700000000.000500"

    async def test_unsigned_and_forged_requests_are_401(
        self, base_url: str, fake_slack: FakeSlack, services: Services
    ) -> None:
        """Over HTTP too: no valid signature, 401, and nothing reaches Slack."""
        body = command_body("13B lora 1 day", response_url=fake_slack.hook_url())
        forged = signed_headers(body, content_type=FORM, secret="guess")
        async with httpx.AsyncClient() as http:
            unsigned = await http.post(
                base_url + EVENTS_PATH, content=body, headers={"content-type": FORM}
            )
            bad = await http.post(base_url + EVENTS_PATH, content=body, headers=forged)
        assert unsigned.status_code == bad.status_code == 401
        assert fake_slack.calls() == []
        assert services.answers.hits + services.answers.misses == 0  # no question looked up

    async def test_url_verification_echoes_the_challenge(self, base_url: str) -> None:
        """Slack's Request URL check is answered with its challenge."""
        challenge = "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"
        body = json.dumps({"token": "t", "challenge": challenge, "type": "url_verification"})
        async with httpx.AsyncClient() as http:
            response = await http.post(
                base_url + EVENTS_PATH,
                content=body,
                headers=signed_headers(body, content_type=JSON),
            )
        assert response.status_code == 200
        assert challenge in response.text


class TestHealth:
    async def test_healthz_answers_while_the_process_is_up(self, base_url: str) -> None:
        """/healthz is 200 with no dependency checks."""
        async with httpx.AsyncClient() as http:
            response = await http.get(base_url + "/healthz")
        assert response.status_code == 200
        assert response.json() == {"status": "ok"}

    async def test_readyz_is_ready_with_redis_and_prices(self, base_url: str) -> None:
        """/readyz is 200 when Redis answers and a price snapshot is loaded."""
        async with httpx.AsyncClient() as http:
            response = await http.get(base_url + "/readyz")
        assert response.status_code == 200
        assert response.json()["checks"] == {"redis": True, "prices": True}

    async def test_readyz_is_not_ready_without_prices(self, services: Services) -> None:
        """An empty catalog makes /readyz 503, naming the failed check."""
        empty = Services(
            redis=services.redis,
            catalog=static_catalog(Catalog.of((), ())),
            now=services.now,
            client=services.client,
        )
        async with serving(build_asgi(empty, None)) as url:
            async with httpx.AsyncClient() as http:
                response = await http.get(url + "/readyz")
            assert response.status_code == 503
            assert response.json()["checks"]["prices"] is False

    async def test_readyz_is_not_ready_when_redis_is_down(self, services: Services) -> None:
        """A Redis that does not answer makes /readyz 503."""
        import redis.asyncio as aioredis

        dead = aioredis.Redis(host="127.0.0.1", port=free_port(), socket_connect_timeout=0.2)
        broken = Services(
            redis=dead, catalog=services.catalog, now=services.now, client=services.client
        )
        try:
            async with serving(build_asgi(broken, None)) as url:
                async with httpx.AsyncClient() as http:
                    response = await http.get(url + "/readyz")
                assert response.status_code == 503
                assert response.json()["checks"]["redis"] is False
        finally:
            await dead.aclose()


async def _start_serve(
    fake: FakeSlack, redis_url: str, log: Path
) -> tuple[asyncio.subprocess.Process, str]:
    """``gpufit serve`` as a process on a free port, pointed at the fake Slack; stderr → ``log``."""
    port = free_port()
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("SLACK_")},
        "SLACK_BOT_TOKEN": "xoxb-test-token",
        "SLACK_SIGNING_SECRET": SECRET,
        "SLACK_API_URL": fake.api_url,
        "REDIS_URL": redis_url,
        "GPUFIT_HOST": "127.0.0.1",
        "GPUFIT_PORT": str(port),
        "NO_PROXY": "127.0.0.1,localhost",
    }
    with log.open("wb") as stderr:
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "bot", "serve", cwd=ROOT, env=env, stderr=stderr
        )
    return process, f"http://127.0.0.1:{port}"


async def _wait_until_ok(
    http: httpx.AsyncClient, process: asyncio.subprocess.Process, url: str, log: Path
) -> None:
    """Poll ``url`` (about 30 s at most) until it answers 200; fail with the log if the
    process exits first."""
    for _ in range(600):
        if process.returncode is not None:
            pytest.fail(log.read_text())  # noqa: ASYNC240 - only when the test is failing
        try:
            if (await http.get(url)).status_code == 200:
                return
        except httpx.TransportError:
            await asyncio.sleep(0.05)


@pytest.mark.slow
class TestServeProcess:
    async def test_gpufit_serve_answers_a_signed_command(
        self, fake_slack: FakeSlack, redis_url: str, tmp_path: Path
    ) -> None:
        """``gpufit serve`` as a process: healthy, ready, and answering a signed command."""
        log = tmp_path / "serve.log"
        process, base = await _start_serve(fake_slack, redis_url, log)
        try:
            async with httpx.AsyncClient() as http:
                await _wait_until_ok(http, process, base + "/healthz", log)
                assert (await http.get(base + "/readyz")).status_code == 200
                body = command_body("13B full finetune 2 days", response_url=fake_slack.hook_url())
                response = await http.post(
                    base + EVENTS_PATH,
                    content=body,
                    headers=signed_headers(body, content_type=FORM),
                )
            assert response.status_code == 200
            assert "Working on it" in response.json()["text"]
            [answered] = await fake_slack.wait_for("hook", within_s=30)
            assert answered.body["text"].startswith("gpufit: ")
            served_at = base.removeprefix("http://") + EVENTS_PATH
            assert f"serving Slack over HTTP on {served_at}" in log.read_text()
        finally:
            process.terminate()  # starts the drain ...
            await asyncio.sleep(0.2)
            process.terminate()  # ... and a second signal stops at once
            try:
                await asyncio.wait_for(process.wait(), 15)
            except TimeoutError:
                process.kill()
                await process.wait()


@pytest.fixture
def sigterm_seen() -> Iterator[list[int]]:
    """SIGTERMs raised in the test land in a list instead of ending pytest.

    uvicorn installs its own handler while it serves and, after a signal-driven shutdown,
    re-raises the signal for the handler it found: this one.
    """
    seen: list[int] = []

    def record(sig: int, frame: object) -> None:
        seen.append(sig)

    previous = signal.signal(signal.SIGTERM, record)
    try:
        yield seen
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextlib.asynccontextmanager
async def _draining(
    services: Services, app: AsyncApp | None, *, grace_s: float
) -> AsyncIterator[tuple[str, asyncio.Task[None]]]:
    """``build_asgi`` behind a :class:`DrainingServer` on a free port, as ``serve`` wires it."""
    servers: list[DrainingServer] = []
    asgi = build_asgi(
        services, app, verifier=VERIFIER, draining=lambda: any(s.draining for s in servers)
    )
    port = free_port()
    config = uvicorn.Config(
        asgi, host="127.0.0.1", port=port, log_config=None, lifespan="off", ws="none"
    )
    server = DrainingServer(config, drain_grace_s=grace_s)
    servers.append(server)
    task = await started(server)
    try:
        yield f"http://127.0.0.1:{port}", task
    finally:
        if not task.done():
            server.should_exit = True
        await asyncio.wait_for(task, 15)


class TestDraining:
    async def test_sigterm_makes_readyz_503_while_slack_traffic_is_still_served(
        self, app: AsyncApp, services: Services, fake_slack: FakeSlack, sigterm_seen: list[int]
    ) -> None:
        """After SIGTERM /readyz is 503 (the load balancer stops routing here), /healthz stays
        200 and a Slack command still gets its answer; a second SIGTERM stops it."""
        async with _draining(services, app, grace_s=DRAIN_GRACE_S) as (url, task):
            async with httpx.AsyncClient() as http:
                assert (await http.get(url + "/readyz")).status_code == 200
                signal.raise_signal(signal.SIGTERM)
                ready = await http.get(url + "/readyz")
                assert ready.status_code == 503
                assert ready.json()["status"] == "draining"
                assert (await http.get(url + "/healthz")).status_code == 200
                body = command_body("13B full finetune 2 days", response_url=fake_slack.hook_url())
                response = await http.post(
                    url + EVENTS_PATH,
                    content=body,
                    headers=signed_headers(body, content_type=FORM),
                )
                assert response.status_code == 200
                assert "Working on it" in response.json()["text"]
                [answered] = await fake_slack.wait_for("hook")
                assert answered.body["text"].startswith("gpufit: ")  # while draining
                assert not task.done()
            signal.raise_signal(signal.SIGTERM)
            await asyncio.wait_for(task, 15)
        assert sigterm_seen == [signal.SIGTERM]

    async def test_after_the_grace_the_server_shuts_down_by_itself(
        self, services: Services, sigterm_seen: list[int]
    ) -> None:
        """One SIGTERM is enough: once the drain grace is over uvicorn stops, and the signal is
        passed on to the process's own handler."""
        async with _draining(services, None, grace_s=0.2) as (_url, task):
            signal.raise_signal(signal.SIGTERM)
            await asyncio.wait_for(task, 15)
        assert sigterm_seen == [signal.SIGTERM]

    def test_without_a_signal_the_server_is_not_draining(self) -> None:
        """A fresh server is not draining; ``should_exit`` (set by uvicorn or a test) counts."""
        server = DrainingServer(uvicorn.Config(Starlette(), lifespan="off"))
        assert not server.draining
        server.should_exit = True
        assert server.draining


@pytest.mark.slow
class TestServeProcessDrains:
    async def test_sigterm_drains_gpufit_serve_before_it_exits(
        self, fake_slack: FakeSlack, redis_url: str, tmp_path: Path
    ) -> None:
        """``gpufit serve`` given SIGTERM answers /readyz with 503 but stays up; a second
        SIGTERM ends the drain and the process exits."""
        log = tmp_path / "serve.log"
        process, base = await _start_serve(fake_slack, redis_url, log)
        try:
            async with httpx.AsyncClient() as http:
                await _wait_until_ok(http, process, base + "/readyz", log)
                process.send_signal(signal.SIGTERM)
                for _ in range(200):
                    ready = await http.get(base + "/readyz")
                    if ready.status_code == 503:
                        break
                    await asyncio.sleep(0.05)
                assert ready.status_code == 503, log.read_text()
                assert ready.json()["status"] == "draining"
                assert (await http.get(base + "/healthz")).status_code == 200
            process.send_signal(signal.SIGTERM)
            await asyncio.wait_for(process.wait(), 15)
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()


async def test_serve_answers_the_probes_on_their_own_port_and_drains_there_too(
    settings: Settings, services: Services, sigterm_seen: list[int]
) -> None:
    """`gpufit serve` over HTTP: the probe listener (GPUFIT_HEALTH_PORT) answers /healthz and
    /readyz beside the public port, says 503 while draining, and stops with the server."""
    from bot.server import serve

    config = settings.model_copy(
        update={
            "host": "127.0.0.1",
            "port": free_port(),
            "health_port": free_port(),
            "metrics_enabled": False,
        }
    )
    task = asyncio.create_task(serve(config, services, socket_mode=False))
    probes = f"http://127.0.0.1:{config.health_port}"
    async with httpx.AsyncClient() as http:
        for _ in range(500):
            assert not task.done(), task
            with contextlib.suppress(httpx.TransportError):
                if (await http.get(probes + "/readyz")).status_code == 200:
                    break
            await asyncio.sleep(0.02)
        else:
            pytest.fail("the probe listener never answered ready")
        live = await http.get(probes + "/healthz")
        public = await http.get(f"http://127.0.0.1:{config.port}/healthz")
        signal.raise_signal(signal.SIGTERM)
        draining = await http.get(probes + "/readyz")
        signal.raise_signal(signal.SIGTERM)
    await asyncio.wait_for(task, 15)
    assert (live.status_code, public.status_code, draining.status_code) == (200, 200, 503)
    assert sigterm_seen
