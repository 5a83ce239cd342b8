"""The first search is answered before the slowest upstream is up: on a restart from the catalog the
last gateway stored (the tools of an upstream still starting are those it listed last time, marked
as starting, and a call to one waits for the start), and on a first start from the upstreams that
have listed so far, naming the ones still starting. Real MCP sessions through toolscout as `serve`
assembles it, over real upstream processes; the slow one starts when the test opens its gate."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import os

import anyio
import pytest
from mcp import Client, StdioServerParameters
from support.gateway_session import app_config, text_of
from support.registries import python_server, write_registry
from support.serve_process import serve_command
from support.waiting import wait_until

from toolscout.app import App
from toolscout.gateway import GatewayOptions
from toolscout.serving.options import ServingOptions
from toolscout.upstream.status import State

pytestmark = pytest.mark.anyio


def registry_with_a_slow_upstream(folder: Path, gate: Path) -> Path:
    return write_registry(folder / "servers.json", {
        "weather": python_server("weather_server.py"),
        "sleepy": python_server("sleepy_server.py", "--until", str(gate)),
    })


async def search(client: Client, query: str) -> dict[str, Any]:
    result = await client.call_tool("search_tools", {"query": query})
    assert not result.is_error, text_of(result)
    return result.structured_content


async def test_a_restart_answers_from_the_stored_catalog_before_the_slow_upstream_is_up(tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    gate.touch()
    config = app_config(registry_with_a_slow_upstream(tmp_path, gate), gateway=GatewayOptions(start_timeout=60))
    async with App(config) as app:  # the first run: every upstream lists its tools, and the catalog is stored
        with anyio.fail_after(30):
            assert await app.ready_to_serve()
    gate.unlink()

    async with App(config) as app:
        assert app.gateway.answers_from_store
        with anyio.fail_after(10):
            assert not await app.ready_to_serve()  # it does not wait for the slow upstream
        async with Client(app.server, mode="legacy") as client:
            with anyio.fail_after(10):
                answer = await search(client, "take a short nap")
            assert app.gateway.status_of("sleepy").state is State.STARTING  # its gate is still closed
            # Described as it was when it was last up, and marked as starting.
            assert "- sleepy (2 tools, starting): Sets alarms and naps" in (client.instructions or "")
            assert "sleepy (2 tools, starting): Sets alarms and naps" in answer["servers"]
            nap = next(entry for entry in answer["tools"] if entry["upstream_name"] == "take_nap")
            assert nap["server"] == "sleepy" and nap["server_state"] == "starting"
            assert "Still starting, searched in the tools they listed last time: sleepy" in answer["notice"]
            assert all("server_state" not in entry for entry in answer["tools"] if entry["server"] == "weather")

            gate.touch()
            with anyio.fail_after(40):
                called = await client.call_tool("execute_tool", {"name": nap["name"], "arguments": {"minutes": 5}})
            assert not called.is_error, text_of(called)
            assert "napped 5 min" in text_of(called)
            with anyio.fail_after(10):
                answer = await search(client, "take a short nap")
            assert all("server_state" not in entry for entry in answer["tools"])


async def test_a_call_to_a_tool_of_a_start_that_fails_waits_no_longer_than_the_start_timeout(tmp_path: Path) -> None:
    flag = tmp_path / "never-answer"
    registry = write_registry(tmp_path / "servers.json", {"sleepy": python_server("sleepy_server.py", str(flag))})
    config = app_config(registry, gateway=GatewayOptions(start_timeout=3, max_restarts=0))
    async with App(config) as app:  # the first run lists its tools, and the catalog is stored
        with anyio.fail_after(30):
            assert await app.ready_to_serve()
    flag.touch()  # from now on it never speaks MCP: its start times out

    async with App(config) as app, Client(app.server, mode="legacy") as client:
        with anyio.fail_after(20):
            assert not await app.ready_to_serve()
            called = await client.call_tool("execute_tool", {"name": "sleepy__take_nap", "arguments": {"minutes": 5}})
    assert called.is_error
    # Waited for the start (bounded by the start timeout), and says so.
    assert "upstream 'sleepy': not available (still starting: a start is under way; waited " in text_of(called)


async def test_a_first_start_answers_from_the_upstreams_listed_so_far_and_names_the_one_still_starting(
    tmp_path: Path,
) -> None:
    gate = tmp_path / "gate"  # never opened: the slow upstream stays starting
    config = app_config(
        registry_with_a_slow_upstream(tmp_path, gate),
        gateway=GatewayOptions(start_timeout=60), serving=ServingOptions(ready_wait=0.5),
    )
    async with App(config) as app, Client(app.server, mode="legacy") as client:
        assert not app.gateway.answers_from_store
        await wait_until(lambda: app.gateway.status_of("weather").state is State.UP, timeout=30)
        with anyio.fail_after(10):
            assert not await app.ready_to_serve()
            answer = await search(client, "weather forecast for a city")
        assert answer["tools"] and {entry["server"] for entry in answer["tools"]} == {"weather"}
        assert "Still starting (their tools join the search when ready): sleepy." in answer["notice"]


async def test_toolscout_serve_restarted_over_stdio_answers_before_the_slow_upstream_is_up(tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    gate.touch()
    command, *args = serve_command(registry_with_a_slow_upstream(tmp_path, gate))
    # Like a desktop host: the SDK's minimal environment, plus the test's private state folders.
    private = {key: os.environ[key] for key in ("TOOLSCOUT_STATE", "TOOLSCOUT_PINS", "TOOLSCOUT_DATA_DIR", "PYTHONPATH")
               if key in os.environ}
    params = StdioServerParameters(command=command, args=args, env=private)
    with anyio.fail_after(60):
        async with Client(params, mode="legacy") as client:  # the first run stores what it lists
            assert "Still starting" not in ((await search(client, "take a short nap"))["notice"] or "")
    gate.unlink()

    with anyio.fail_after(60):
        async with Client(params, mode="legacy") as client:
            answer = await search(client, "take a short nap")
            nap = next(entry for entry in answer["tools"] if entry["upstream_name"] == "take_nap")
            assert nap["server_state"] == "starting"  # answered before the slow upstream was up
            gate.touch()
            called = await client.call_tool("execute_tool", {"name": nap["name"], "arguments": {"minutes": 5}})
            assert "napped 5 min" in text_of(called)

