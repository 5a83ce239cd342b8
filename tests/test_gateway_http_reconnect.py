"""An HTTP upstream that restarted no longer knows the gateway's session: the gateway reconnects
on the next call and sends that call again, so the agent never sees the upstream's restart.

Sessions exist only on the handshake protocols (up to 2025-11-25), so the upstream here speaks
only those, like a server built before protocol 2026-07-28.
"""

from __future__ import annotations

import socket
from typing import Any

import anyio
import pytest
import uvicorn
from support.registries import fast_search_settings
from support.waiting import wait_until
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.responses import PlainTextResponse
from upstreams import weather_server

from toolscout.gateway import Gateway, GatewayOptions
from toolscout.registry.spec import ServerSpec
from toolscout.search import ToolSearch

pytestmark = pytest.mark.anyio


class HandshakeOnly:
    """ASGI middleware refusing requests of newer protocols, as servers that predate them do."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        versions = [v.decode() for k, v in scope.get("headers", ()) if k == b"mcp-protocol-version"]
        if scope["type"] == "http" and any(v not in HANDSHAKE_PROTOCOL_VERSIONS for v in versions):
            await PlainTextResponse("Bad Request: Unsupported protocol version", status_code=400)(scope, receive, send)
            return
        await self.app(scope, receive, send)


async def _serve_once(port: int, tg: anyio.abc.TaskGroup) -> tuple[uvicorn.Server, anyio.Event, int]:
    """Serve a fresh weather server (new process state, no sessions) on `port` (0: any free one)."""
    sock = socket.create_server(("127.0.0.1", port))
    app = HandshakeOnly(weather_server.server.streamable_http_app())
    server = uvicorn.Server(uvicorn.Config(app, log_level="critical", lifespan="on"))
    done = anyio.Event()

    async def run() -> None:
        await server.serve([sock])
        done.set()

    tg.start_soon(run)
    await wait_until(lambda: server.started, timeout=10, interval=0.01)
    return server, done, sock.getsockname()[1]


async def test_a_call_after_an_http_upstream_restarted_reconnects_and_succeeds() -> None:
    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            first, first_done, port = await _serve_once(0, tg)
            spec = ServerSpec(name="remote", transport="http", url=f"http://127.0.0.1:{port}/mcp")
            async with Gateway([spec], ToolSearch(fast_search_settings()), GatewayOptions(max_restarts=3)) as gateway:
                await gateway.ready(20)
                tool = gateway.catalog.by_id["remote__get_current_weather"]
                before = await gateway.call(tool, {"city": "Oslo"})
                first.should_exit = True
                await first_done.wait()
                second, second_done, _ = await _serve_once(port, tg)
                after = await gateway.call(tool, {"city": "Lisbon"})
                second.should_exit = True
            tg.cancel_scope.cancel()
    assert before.content[0].text.startswith("Oslo: 18 C")
    assert not after.is_error and after.content[0].text.startswith("Lisbon: 18 C")
