"""The gateway's hooks for other features: screens withhold tools (pinning, poisoning scan) and
observers see every meta-tool call with its result (learning from use)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import anyio
import pytest
from support.gateway_session import here_over
from support.registries import fast_search_settings, python_server, write_registry
from mcp import Client

from toolscout.catalog import ToolRecord
from toolscout.gateway import Gateway
from toolscout.registry.loading import load_registries
from toolscout.search import ToolSearch
from toolscout.serving.server import build_server

pytestmark = pytest.mark.anyio


async def test_a_withheld_tool_is_left_out_of_search_and_refused_with_the_screens_reason(tmp_path: Path) -> None:
    registry = write_registry(tmp_path / "servers.json", {"weather": python_server("weather_server.py")})
    withhold = {"weather__get_forecast": "its definition changed since it was approved; run toolscout approve"}

    def screen(tools: Sequence[ToolRecord]) -> dict[str, str]:
        return {tool.id: reason for tool in tools if (reason := withhold.get(tool.id))}

    specs = load_registries([registry])
    with anyio.fail_after(30):
        async with Gateway(specs, ToolSearch(fast_search_settings()), here_over(registry), screens=[screen]) as gateway:
            await gateway.ready(20)
            async with Client(build_server(gateway), mode="legacy") as client:
                found = await client.call_tool("search_tools", {"query": "weather forecast for a city"})
                refused = await client.call_tool(
                    "execute_tool", {"name": "weather__get_forecast", "arguments": {"city": "Oslo"}}
                )
                withhold.clear()
                gateway.rescreen()
                await gateway.sync()
                allowed = await client.call_tool(
                    "execute_tool", {"name": "weather__get_forecast", "arguments": {"city": "Oslo"}}
                )
    assert "weather__get_forecast" not in [tool["id"] for tool in found.structured_content["tools"]]
    assert refused.is_error and "run toolscout approve" in refused.content[0].text
    assert not allowed.is_error


async def test_observers_see_each_meta_tool_call_with_its_arguments_and_result(tmp_path: Path) -> None:
    registry = write_registry(tmp_path / "servers.json", {"weather": python_server("weather_server.py")})
    seen: list[tuple[str, dict, bool]] = []

    def observe(ctx: object, name: str, arguments: dict, result: object) -> None:
        seen.append((name, arguments, result.is_error))
        raise RuntimeError("an observer's failure must not reach the agent")

    with anyio.fail_after(30):
        async with Gateway(load_registries([registry]), ToolSearch(fast_search_settings()), here_over(registry)) as gateway:
            await gateway.ready(20)
            async with Client(build_server(gateway, observers=[observe]), mode="legacy") as client:
                await client.call_tool("search_tools", {"query": "current weather"})
                result = await client.call_tool("execute_tool", {"name": "weather__get_current_weather", "arguments": {"city": "Oslo"}})
    assert not result.is_error
    assert seen == [
        ("search_tools", {"query": "current weather"}, False),
        ("execute_tool", {"name": "weather__get_current_weather", "arguments": {"city": "Oslo"}}, False),
    ]
