"""The HTTP transport: bearer token, Host/Origin checks on any bind address, and the client's
credentials never reaching an upstream.

The gateway's app and an HTTP upstream that records the headers it receives are both served in
this process by uvicorn on free ports of 127.0.0.1; `toolscout serve --transport http` is also run
as a subprocess, to check that it takes its token from the environment.
"""

from __future__ import annotations

import os
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx2 as httpx
import pytest
import uvicorn
from support.registries import fast_search_settings, python_server, write_registry
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from support.serve_process import serve_command, served_over_http
from support.waiting import wait_until
from upstreams import weather_server

from toolscout.gateway import Gateway, GatewayOptions
from toolscout.registry.spec import ServerSpec
from toolscout.search import ToolSearch
from toolscout.serving.http import http_app
from toolscout.serving.server import build_server

pytestmark = pytest.mark.anyio

TOKEN = "client-token-5d1e0c9a"
REGISTRY_KEY = "registry-key-77ab31f0"
INITIALIZE = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "probe", "version": "1"}},
}
MCP_HEADERS = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


class HeaderRecorder:
    """ASGI middleware keeping the headers of every HTTP request the upstream receives."""

    def __init__(self, app: Any) -> None:
        self.app = app
        self.seen: list[dict[str, str]] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            self.seen.append({k.decode(): v.decode() for k, v in scope["headers"]})
        await self.app(scope, receive, send)


async def _serve(app: Any, tg: anyio.abc.TaskGroup) -> tuple[str, uvicorn.Server]:
    sock = socket.create_server(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    tg.start_soon(server.serve, [sock])
    await wait_until(lambda: server.started, timeout=10, interval=0.01)
    return f"http://127.0.0.1:{sock.getsockname()[1]}", server


@pytest.fixture(scope="module")
async def served() -> AsyncIterator[dict[str, Any]]:
    recorder = HeaderRecorder(weather_server.server.streamable_http_app())
    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            upstream_url, upstream = await _serve(recorder, tg)
            spec = ServerSpec(
                name="remote", transport="http", url=f"{upstream_url}/mcp",
                headers={"X-Api-Key": REGISTRY_KEY}, secrets=frozenset({REGISTRY_KEY}),
            )
            async with Gateway([spec], ToolSearch(fast_search_settings()), GatewayOptions(max_restarts=0)) as gateway:
                await gateway.ready(20)
                server = build_server(gateway)
                guarded, guarded_server = await _serve(http_app(server, host="127.0.0.1", auth_token=TOKEN), tg)
                # As if bound to every interface: loopback names and the allowed one only.
                wide, wide_server = await _serve(
                    http_app(build_server(gateway), host="0.0.0.0", allowed_hosts=["gw.example.lan"]), tg
                )
                yield {"guarded": f"{guarded}/mcp", "wide": f"{wide}/mcp", "recorder": recorder}
                upstream.should_exit = guarded_server.should_exit = wide_server.should_exit = True


async def _post(url: str, **headers: str) -> int:
    async with httpx.AsyncClient() as http:
        response = await http.post(url, json=INITIALIZE, headers={**MCP_HEADERS, **headers})
        return response.status_code


async def test_requests_without_the_right_bearer_token_get_401(served: dict[str, Any]) -> None:
    url = served["guarded"]
    with anyio.fail_after(20):
        assert await _post(url) == 401
        assert await _post(url, authorization="Bearer wrong-token") == 401
        assert await _post(url, authorization=f"Basic {TOKEN}") == 401
        assert await _post(url, authorization=f"Bearer {TOKEN}x") == 401
        assert await _post(url, authorization=f"Bearer {TOKEN}") == 200


async def test_an_authorized_client_works_and_its_credentials_never_reach_the_upstream(served: dict[str, Any]) -> None:
    with anyio.fail_after(30):
        async with create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}", "Cookie": "sid=client-cookie-1"}) as http:
            async with Client(streamable_http_client(served["guarded"], http_client=http), mode="legacy") as client:
                result = await client.call_tool(
                    "execute_tool", {"name": "remote__get_current_weather", "arguments": {"city": "Oslo"}}
                )
    assert not result.is_error and result.content[0].text.startswith("Oslo: 18 C")
    seen = served["recorder"].seen
    assert seen and all(headers.get("x-api-key") == REGISTRY_KEY for headers in seen)
    for headers in seen:
        assert TOKEN not in str(headers) and "client-cookie-1" not in str(headers)
        assert "authorization" not in headers


async def test_host_and_origin_are_checked_on_any_bind_address(served: dict[str, Any]) -> None:
    url = served["wide"]
    port = url.split(":")[2].split("/")[0]
    with anyio.fail_after(20):
        assert await _post(url, host="evil.example") == 421
        assert await _post(url, host=f"127.0.0.1:{port}", origin="http://evil.example") == 403
        assert await _post(url, host=f"gw.example.lan:{port}") == 200
        assert await _post(url, host=f"localhost:{port}", origin=f"http://localhost:{port}") == 200


async def test_serve_over_http_requires_the_token_set_in_toolscout_auth_token(tmp_path: Path) -> None:
    registry = write_registry(tmp_path / "servers.json", {"weather": python_server("weather_server.py")})
    command = serve_command(registry, "--transport", "http", "--port", "0")
    with anyio.fail_after(60):
        async with served_over_http(command, env={**os.environ, "TOOLSCOUT_AUTH_TOKEN": TOKEN}) as url:
            assert await _post(url) == 401
            assert await _post(url, authorization="Bearer wrong-token") == 401
            assert await _post(url, authorization=f"Bearer {TOKEN}") == 200
