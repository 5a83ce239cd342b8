"""Serving an ASGI app (an MCP server's HTTP app, an authorization server) with uvicorn on a free
port of 127.0.0.1, inside the test's own event loop."""

from __future__ import annotations

import socket
from typing import Any

import anyio
import uvicorn

__all__ = ["free_listener", "serve_asgi"]


def free_listener() -> socket.socket:
    """A socket bound to a free port of 127.0.0.1 (so the URL is known before the app is built)."""
    return socket.create_server(("127.0.0.1", 0))


async def serve_asgi(app: Any, task_group: anyio.abc.TaskGroup, sock: socket.socket | None = None) -> tuple[str, uvicorn.Server]:
    """Start `app` on `sock` (or a free port); returns its base URL and the server (set
    `should_exit` to stop it)."""
    sock = sock or free_listener()
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    task_group.start_soon(server.serve, [sock])
    return f"http://127.0.0.1:{sock.getsockname()[1]}", server
