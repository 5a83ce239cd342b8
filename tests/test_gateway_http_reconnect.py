"""An HTTP upstream that restarted no longer knows the gateway's session: the gateway reconnects
on the next call and sends that call again, so the agent never sees the upstream's restart."""

from __future__ import annotations

import socket

import anyio
import pytest
import uvicorn
from conftest import fast_search_settings
from upstreams import weather_server

from toolscout.config import ServerSpec
from toolscout.gateway import Gateway
from toolscout.search import ToolSearch

pytestmark = pytest.mark.anyio


async def _serve_once(port: int, tg: anyio.abc.TaskGroup) -> tuple[uvicorn.Server, anyio.Event, int]:
    """Serve a fresh weather server (new process state, no sessions) on `port` (0: any free one)."""
    sock = socket.create_server(("127.0.0.1", port))
    server = uvicorn.Server(uvicorn.Config(weather_server.server.streamable_http_app(), log_level="critical", lifespan="on"))
    done = anyio.Event()

    async def run() -> None:
        await server.serve([sock])
        done.set()

    tg.start_soon(run)
    while not server.started:
        await anyio.sleep(0.01)
    return server, done, sock.getsockname()[1]


async def test_a_call_after_an_http_upstream_restarted_reconnects_and_succeeds() -> None:
    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            first, first_done, port = await _serve_once(0, tg)
            spec = ServerSpec(name="remote", transport="http", url=f"http://127.0.0.1:{port}/mcp")
            async with Gateway([spec], ToolSearch(fast_search_settings()), max_restarts=3) as gateway:
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
