"""A registry edited while the gateway runs is followed: a fixed entry starts, a removed one
stops, the untouched ones go on as they were. Given-up configuration errors are mended this way,
without restarting the gateway."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from support.gateway_session import text_of
from support.registries import fast_search_settings, python_server, write_registry
from support.serve_process import serve_command
from support.waiting import wait_until

from toolscout.gateway import Gateway, GatewayOptions
from toolscout.registry.loading import load_registries
from toolscout.search import ToolSearch
from toolscout.upstream import State

pytestmark = pytest.mark.anyio


def _typo(tmp_path: Path) -> dict:
    return {"command": str(tmp_path / "no-such-weather-server")}


async def test_a_changed_entry_is_restarted_a_removed_one_stopped_and_the_others_left_alone(tmp_path: Path) -> None:
    registry = write_registry(tmp_path / "servers.json", {
        "weather": python_server("weather_server.py"), "notes": python_server("notes_server.py"), "fixed": _typo(tmp_path),
    })
    with anyio.fail_after(90):
        async with Gateway(load_registries([registry]), ToolSearch(fast_search_settings()), GatewayOptions(max_restarts=0)) as gateway:
            await gateway.ready(30)
            weather_before = gateway.status_of("weather")
            assert gateway.status_of("fixed").state is State.DOWN
            write_registry(registry, {"weather": python_server("weather_server.py"), "fixed": python_server("weather_server.py")})
            affected = await gateway.reconfigure(load_registries([registry]))
            await wait_until(lambda: "fixed__get_current_weather" in gateway.catalog.by_id, timeout=30)
            names = gateway.server_names()
            tools = set(gateway.catalog.by_id)
            weather_after = gateway.status_of("weather")
    assert sorted(affected) == ["fixed", "notes"]
    assert names == ["fixed", "weather"] and not any(tool.startswith("notes__") for tool in tools)
    assert weather_before.state is weather_after.state is State.UP and weather_after.restarts == 0


async def test_serve_follows_an_edit_of_its_registry_file(tmp_path: Path) -> None:
    registry = write_registry(tmp_path / "servers.json", {"weather": _typo(tmp_path)})
    command = serve_command(registry)
    params = StdioServerParameters(command=command[0], args=command[1:], env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    call = {"name": "weather__get_current_weather", "arguments": {"city": "Oslo"}}
    with anyio.fail_after(90):
        async with Client(stdio_client(params), mode="legacy") as client:
            before = await client.call_tool("execute_tool", call)
            write_registry(registry, {"weather": python_server("weather_server.py")})

            async def found() -> bool:
                result = await client.call_tool("search_tools", {"query": "current weather in a city"})
                return "weather__get_current_weather" in text_of(result)

            while not await found():
                await anyio.sleep(0.5)
            after = await client.call_tool("execute_tool", call)
    assert before.is_error and "weather" in text_of(before)
    assert not after.is_error and text_of(after).startswith("Oslo: 18 C")
