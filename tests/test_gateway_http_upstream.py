"""Upstreams reached over the network: streamable HTTP and the older SSE transport.

The test upstream is served in this process by uvicorn on a free port of 127.0.0.1.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from typing import Any

import anyio
import pytest
import uvicorn
from support.registries import fast_search_settings
from upstreams import weather_server

from toolscout.gateway import Gateway, GatewayOptions
from toolscout.registry.spec import ServerSpec
from toolscout.search import ToolSearch
from toolscout.upstream import State

pytestmark = pytest.mark.anyio


async def _serve(app: Any, task_group: anyio.abc.TaskGroup) -> tuple[str, uvicorn.Server]:
    sock = socket.create_server(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    task_group.start_soon(server.serve, [sock])
    return f"http://127.0.0.1:{sock.getsockname()[1]}", server


@pytest.fixture(scope="module")
async def urls() -> AsyncIterator[dict[str, str]]:
    async with anyio.create_task_group() as tg:
        http_base, http_server = await _serve(weather_server.server.streamable_http_app(), tg)
        sse_base, sse_server = await _serve(weather_server.server.sse_app(), tg)
        yield {"http": f"{http_base}/mcp", "sse": f"{sse_base}/sse"}
        http_server.should_exit = sse_server.should_exit = True


async def test_upstreams_over_streamable_http_and_sse_are_searched_and_called(urls: dict[str, str]) -> None:
    specs = [
        ServerSpec(name="remote", transport="http", url=urls["http"]),
        ServerSpec(name="legacy", transport="sse", url=urls["sse"]),
    ]
    with anyio.fail_after(30):
        async with Gateway(specs, ToolSearch(fast_search_settings()), GatewayOptions(max_restarts=0)) as gateway:
            await gateway.ready(20)
            assert {s.name: s.state for s in gateway.statuses()} == {"remote": State.UP, "legacy": State.UP}
            for server in ("remote", "legacy"):
                response = await gateway.search("weather forecast for a city", limit=1, servers=[server])
                tool = response.hits[0].tool
                assert tool.id == f"{server}__get_forecast"
                result = await gateway.call(tool, {"city": "Lisbon", "days": 1})
                assert result.structured_content == {"city": "Lisbon", "days": 1, "summary": ["day 1: sunny, 21 C"]}


async def test_an_http_upstream_nobody_listens_on_is_down_with_the_reason() -> None:
    with socket.create_server(("127.0.0.1", 0)) as sock:
        port = sock.getsockname()[1]
    specs = [ServerSpec(name="gone", transport="http", url=f"http://127.0.0.1:{port}/mcp")]
    with anyio.fail_after(30):
        async with Gateway(specs, ToolSearch(fast_search_settings()), GatewayOptions(start_timeout=10, max_restarts=0)) as gateway:
            await gateway.ready(15)
            (status,) = gateway.statuses()
    assert status.state is State.DOWN
    assert status.reason and status.reason.startswith("failed to start")
    # The reason names the address that refused, not only the library's words.
    assert f"cannot connect to http://127.0.0.1:{port}/mcp" in status.reason
