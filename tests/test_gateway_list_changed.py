"""Tool-list changes, told on each protocol era's own mechanism, in both directions.

toolscout's clients: on the handshake era (up to 2025-11-25) a `notifications/tools/list_changed`
on the session; on 2026-07-28 the same notification on a `subscriptions/listen` stream the client
opened (in process, over streamable HTTP and over stdio). toolscout as the client of its
upstreams: it hears an upstream that announces only on listen streams (2026-07-28) and one that
speaks only the handshake and announces on the session.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
import uvicorn
from anyio.streams.buffered import BufferedByteReceiveStream
from support.registries import fast_search_settings, python_server, write_registry
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.subscriptions import ToolsListChanged

from toolscout.catalog import Catalog
from toolscout.gateway import Gateway, GatewayOptions
from toolscout.registry.loading import load_registries
from toolscout.search import ToolSearch
from toolscout.serving.http import http_app
from toolscout.serving.server import build_server

pytestmark = pytest.mark.anyio

MODERN = "2026-07-28"


def _registry(tmp_path: Path, announce: str) -> Path:
    return write_registry(tmp_path / "servers.json", {"reports": python_server("announcing_server.py", announce)})


@asynccontextmanager
async def _gateway(tmp_path: Path, announce: str) -> AsyncIterator[Gateway]:
    specs = load_registries([_registry(tmp_path, announce)])
    async with Gateway(specs, ToolSearch(fast_search_settings()), GatewayOptions(max_restarts=0)) as gateway:
        await gateway.ready(20)
        yield gateway


async def _execute(client: Client, tool_id: str) -> None:
    result = await client.call_tool("execute_tool", {"name": tool_id, "arguments": {}})
    assert not result.is_error, result.content


async def _add_report_tool(client: Client) -> None:
    await _execute(client, "reports__add_report_tool")


async def _servers_answered(client: Client) -> str:
    """The servers a search answer lists now, one per line."""
    answer = await client.call_tool("search_tools", {"query": "report"})
    return "\n".join(answer.structured_content["servers"])


async def test_a_client_on_2026_07_28_is_told_on_its_listen_stream_when_an_upstream_adds_a_tool(
    tmp_path: Path,
) -> None:
    with anyio.fail_after(30):
        async with _gateway(tmp_path, "session") as gateway, Client(build_server(gateway), mode="auto") as client:
            assert client.session.protocol_version == MODERN
            assert client.server_capabilities.tools is not None and client.server_capabilities.tools.list_changed
            before = await _servers_answered(client)
            async with client.listen(tools_list_changed=True) as subscription:
                await _add_report_tool(client)
                change = await anext(subscription)
            after = await _servers_answered(client)
    assert change == ToolsListChanged()
    assert "reports (2 tools" in before and "reports (3 tools" in after


async def test_clients_on_both_protocols_over_http_are_told_about_the_same_change(tmp_path: Path) -> None:
    told_on_session = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            told_on_session.set()

    with anyio.fail_after(40):
        async with _gateway(tmp_path, "session") as gateway, anyio.create_task_group() as tg:
            # Listening before uvicorn starts: clients that connect early wait in the backlog.
            sock = socket.create_server(("127.0.0.1", 0))
            url = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
            app = http_app(build_server(gateway), host="127.0.0.1")
            tg.start_soon(uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on")).serve, [sock])
            async with (
                Client(url, mode="auto") as modern,
                Client(url, mode="legacy", message_handler=on_message) as legacy,
                modern.listen(tools_list_changed=True) as subscription,
            ):
                await _add_report_tool(modern)
                change = await anext(subscription)
                await told_on_session.wait()
                protocols = (modern.session.protocol_version, legacy.session.protocol_version)
            tg.cancel_scope.cancel()
    assert change == ToolsListChanged()
    assert protocols == (MODERN, "2025-11-25")


async def test_a_client_on_2026_07_28_over_stdio_is_told_on_its_listen_stream(tmp_path: Path) -> None:
    args = ["-m", "toolscout.cli", "serve", "--registry", str(_registry(tmp_path, "session")), "--model", "none"]
    # The state folders of this test travel in the environment (see conftest.py).
    toolscout = StdioServerParameters(command=sys.executable, args=args, env=dict(os.environ))
    with anyio.fail_after(60):
        async with Client(toolscout, mode="auto") as client:
            async with client.listen(tools_list_changed=True) as subscription:
                await _add_report_tool(client)
                change = await anext(subscription)
            after = await _servers_answered(client)
            protocol = client.session.protocol_version
    assert protocol == MODERN
    assert change == ToolsListChanged()
    assert "reports (3 tools" in after


async def test_stopping_the_http_server_closes_listen_streams_gracefully(tmp_path: Path) -> None:
    args = [sys.executable, "-m", "toolscout.cli", "serve", "--transport", "http", "--port", "0",
            "--registry", str(_registry(tmp_path, "session")), "--model", "none"]
    with anyio.fail_after(60):
        process = await anyio.open_process(
            args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, env=dict(os.environ)
        )
        async with process, anyio.create_task_group() as tg:
            assert process.stderr is not None
            stderr = BufferedByteReceiveStream(process.stderr)
            address = None
            while address is None:
                line = await stderr.receive_until(b"\n", 65536)
                address = re.search(rb"serving MCP over streamable HTTP at (\S+)", line)
            tg.start_soon(_drain, stderr)
            async with Client(address.group(1).decode(), mode="auto") as client:
                async with client.listen(tools_list_changed=True) as subscription:
                    process.send_signal(signal.SIGINT)
                    # The loop ends without SubscriptionLost: the server closed the stream on purpose.
                    changes = [change async for change in subscription]
            await process.wait()
    assert changes == []


async def _drain(stream: BufferedByteReceiveStream) -> None:
    """Keep reading the server's stderr so that it never blocks on a full pipe."""
    try:
        while True:
            await stream.receive()
    except (anyio.EndOfStream, anyio.ClosedResourceError):
        pass


@pytest.mark.parametrize("announce", ["listen", "session"])
async def test_the_gateway_hears_an_upstream_announce_new_tools_on_either_protocol(
    tmp_path: Path, announce: str
) -> None:
    grown = anyio.Event()

    async def on_change(catalog: Catalog) -> None:
        if "reports__export_report" in catalog.by_id:
            grown.set()

    with anyio.fail_after(30):
        async with _gateway(tmp_path, announce) as gateway, Client(build_server(gateway), mode="legacy") as client:
            gateway.add_listener(on_change)
            await _add_report_tool(client)
            await grown.wait()
            found = await client.call_tool("search_tools", {"query": "export the quarterly sales report"})
    assert found.structured_content is not None
    assert found.structured_content["tools"][0]["id"] == "reports__export_report"


async def test_the_gateway_listens_again_after_an_upstream_closes_its_listen_stream(tmp_path: Path) -> None:
    changed = anyio.Event()

    async def on_change(catalog: Catalog) -> None:
        changed.set()

    async def catalog_gains(gateway: Gateway, tool_id: str) -> None:
        nonlocal changed
        while tool_id not in gateway.catalog.by_id:
            await changed.wait()
            changed = anyio.Event()

    with anyio.fail_after(30):
        async with _gateway(tmp_path, "listen") as gateway, Client(build_server(gateway), mode="legacy") as client:
            gateway.add_listener(on_change)
            # Closed as by an upstream that restarts: the tool added meanwhile is found by the
            # listing that follows the opening of the next stream...
            await _execute(client, "reports__end_listen_streams")
            await _add_report_tool(client)
            await catalog_gains(gateway, "reports__export_report")
            # ...and the next change is announced on that stream.
            await _add_report_tool(client)
            await catalog_gains(gateway, "reports__archive_report")
