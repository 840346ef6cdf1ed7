"""The ASGI app under a real uvicorn on a free loopback port, for HTTP tests."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import uvicorn
from starlette.applications import Starlette

__all__ = ["free_port", "serving", "started"]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


async def started(server: uvicorn.Server) -> asyncio.Task[None]:
    """``server`` running in a task of this event loop, once it listens (what stopped it
    before that is raised)."""
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.01)
    return task


@asynccontextmanager
async def serving(asgi: Starlette) -> AsyncIterator[str]:
    """``asgi`` under uvicorn on a free loopback port (this event loop); its base URL."""
    config = uvicorn.Config(
        asgi,
        host="127.0.0.1",
        port=free_port(),
        ws="none",  # as bot.connections.uvicorn_config: no websockets to serve
        log_config=None,
        access_log=False,
        lifespan="off",
    )
    server = uvicorn.Server(config)
    task = await started(server)
    try:
        yield f"http://127.0.0.1:{config.port}"
    finally:
        server.should_exit = True
        await asyncio.wait_for(task, 30)
