"""An upstream that failed every fast restart is not lost: the gateway keeps trying it at a capped
interval, at once when a search or a call needs it, and says when the next attempt is. A
configuration error (a command that does not exist) is given up on instead of retried blindly."""

from __future__ import annotations

import socket
import sys
import time
from pathlib import Path

import anyio
import pytest
import uvicorn
from mcp import Client
from support.gateway_session import text_of
from support.registries import UPSTREAMS, fast_search_settings, write_registry
from support.waiting import wait_until
from upstreams import weather_server

from toolscout.gateway import Gateway, GatewayOptions
from toolscout.registry.loading import load_registries
from toolscout.registry.spec import ServerSpec
from toolscout.search import ToolSearch
from toolscout.serving.server import build_server
from toolscout.upstream import State

pytestmark = pytest.mark.anyio

# Far beyond any test: only a search or a call can make the next attempt happen in time.
HOURLY = 3600.0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def _serve_weather(port: int, tg: anyio.abc.TaskGroup) -> uvicorn.Server:
    """A remote MCP server coming (back) up on `port`."""
    sock = socket.create_server(("127.0.0.1", port))
    server = uvicorn.Server(uvicorn.Config(weather_server.server.streamable_http_app(), log_level="critical"))
    tg.start_soon(server.serve, [sock])
    await wait_until(lambda: server.started, timeout=10, interval=0.01)
    return server


async def _waiting_for_next_attempt(gateway: Gateway, name: str) -> None:
    """Wait until the fast restarts are spent and the supervisor waits for its next slow attempt."""

    def waiting() -> bool:
        status = gateway.status_of(name)
        return status.next_attempt is not None and "trying again" in (status.reason or "")

    await wait_until(waiting, timeout=30)


async def test_a_remote_server_that_comes_back_is_reconnected_by_the_call_that_needs_it() -> None:
    port = _free_port()
    spec = ServerSpec(name="remote", transport="http", url=f"http://127.0.0.1:{port}/mcp")
    options = GatewayOptions(max_restarts=1, retry_interval=HOURLY, start_timeout=10)
    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            async with Gateway([spec], ToolSearch(fast_search_settings()), options) as gateway:
                await _waiting_for_next_attempt(gateway, "remote")
                waiting = gateway.status_of("remote")
                down = await _call(gateway, "remote__get_current_weather")
                server = await _serve_weather(port, tg)
                result = await _call(gateway, "remote__get_current_weather")
                server.should_exit = True
            tg.cancel_scope.cancel()
    assert waiting.state is State.DOWN and not waiting.gave_up
    assert "2 failed attempts; trying again every 3600 s" in (waiting.reason or "")
    assert time.time() + HOURLY - 60 < waiting.next_attempt <= time.time() + HOURLY
    # While it is down the agent learns that the server is the problem, not that no such tool exists.
    assert down.is_error and "upstream 'remote'" in text_of(down) and "No tool is called" not in text_of(down)
    assert not result.is_error and text_of(result).startswith("Oslo: 18 C")


async def test_a_search_tries_a_server_waiting_for_its_next_attempt(tmp_path: Path) -> None:
    port = _free_port()
    spec = ServerSpec(name="remote", transport="http", url=f"http://127.0.0.1:{port}/mcp")
    options = GatewayOptions(max_restarts=0, retry_interval=HOURLY, start_timeout=10)
    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            async with Gateway([spec], ToolSearch(fast_search_settings()), options) as gateway:
                await _waiting_for_next_attempt(gateway, "remote")
                server = await _serve_weather(port, tg)
                await gateway.search("weather in a city", limit=3)
                await wait_until(lambda: "remote__get_current_weather" in gateway.catalog.by_id, timeout=30)
                server.should_exit = True
            tg.cancel_scope.cancel()


async def test_a_failing_server_is_retried_on_its_own_at_the_retry_interval(tmp_path: Path) -> None:
    gate = tmp_path / "fixed"
    # Exits at once until the gate file exists (a package not yet downloaded, a disk not mounted).
    script = (
        f"import os, runpy, sys; os.path.exists({str(gate)!r}) or sys.exit('not ready'); "
        f"runpy.run_path({str(UPSTREAMS / 'weather_server.py')!r}, run_name='__main__')"
    )
    registry = write_registry(tmp_path / "servers.json", {"flaky": {"command": sys.executable, "args": ["-c", script]}})
    options = GatewayOptions(max_restarts=1, retry_interval=0.5)
    with anyio.fail_after(60):
        async with Gateway(load_registries([registry]), ToolSearch(fast_search_settings()), options) as gateway:
            await _waiting_for_next_attempt(gateway, "flaky")
            gate.write_text("ok")
            await wait_until(lambda: "flaky__get_current_weather" in gateway.catalog.by_id, timeout=30)
            status = gateway.status_of("flaky")
    assert status.state is State.UP and status.restarts >= 2 and status.next_attempt is None


async def test_a_command_that_does_not_exist_is_not_retried_on_a_timer(tmp_path: Path) -> None:
    registry = write_registry(tmp_path / "servers.json", {"typo": {"command": str(tmp_path / "no-such-command")}})
    options = GatewayOptions(max_restarts=1, retry_interval=0.1)
    with anyio.fail_after(60):
        async with Gateway(load_registries([registry]), ToolSearch(fast_search_settings()), options) as gateway:
            await gateway.wait_finished("typo")
            status = gateway.status_of("typo")
    # A configuration error: tried once, neither restarted nor tried again on the retry interval.
    assert status.configuration_error and status.next_attempt is None and status.restarts == 0
    assert "not retried until the entry changes" in (status.reason or "")


async def _call(gateway: Gateway, tool_id: str):
    async with Client(build_server(gateway), mode="legacy") as client:
        return await client.call_tool("execute_tool", {"name": tool_id, "arguments": {"city": "Oslo"}})
