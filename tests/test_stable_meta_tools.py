"""search_tools and execute_tool keep the same definitions whatever upstreams are connected: a
client that pins tool definitions (toolscout in front of toolscout, for one) sees no change when an
upstream joins or leaves. The servers are named in the instructions and in every search answer."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client, StdioServerParameters
from support.registries import python_server, write_registry

pytestmark = pytest.mark.anyio


async def _definitions_and_servers(registry: Path) -> tuple[list[str], list[str], str]:
    args = ["-m", "toolscout.cli", "serve", "--registry", str(registry), "--model", "none"]
    params = StdioServerParameters(command=sys.executable, args=args, env=dict(os.environ))
    async with Client(params, mode="legacy") as client:
        tools = (await client.list_tools()).tools
        answer = (await client.call_tool("search_tools", {"query": "anything at all"})).structured_content
        return [tool.model_dump_json(by_alias=True) for tool in tools], answer["servers"], client.instructions or ""


async def test_two_serves_over_different_registries_list_byte_identical_meta_tools(tmp_path: Path) -> None:
    notes = write_registry(tmp_path / "notes.json", {"notes": python_server("notes_server.py")})
    weather = write_registry(tmp_path / "weather.json", {
        "weather": python_server("weather_server.py"), "paged": python_server("paged_server.py"),
    })
    with anyio.fail_after(90):
        first, first_servers, first_instructions = await _definitions_and_servers(notes)
        second, second_servers, second_instructions = await _definitions_and_servers(weather)
    assert first == second
    assert [line.split(" (")[0] for line in first_servers] == ["notes"]
    assert sorted(line.split(" (")[0] for line in second_servers) == ["paged", "weather"]
    assert "- notes (" in first_instructions and "- weather (" in second_instructions
    for definition in first:
        assert "notes" not in definition and "weather" not in definition
