"""`toolscout serve` as a real subprocess: an MCP client over stdio and over streamable HTTP."""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from support.registries import python_server, write_registry
from mcp import Client, StdioServerParameters
from support.serve_process import serve_command, served_over_http

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_registry(
        tmp_path_factory.mktemp("serve") / "servers.json",
        {"notes": python_server("notes_server.py"), "weather": python_server("weather_server.py")},
    )


async def _search_and_execute(client: Client) -> None:
    assert "notes (4 tools)" in (client.instructions or "")
    assert "weather (3 tools)" in (client.instructions or "")
    assert {tool.name for tool in (await client.list_tools()).tools} == {"search_tools", "execute_tool"}
    found = await client.call_tool("search_tools", {"query": "current weather conditions in a city", "limit": 3})
    assert found.structured_content["tools"][0]["id"] == "weather__get_current_weather"
    result = await client.call_tool("execute_tool", {"name": "weather__get_current_weather", "arguments": {"city": "Oslo"}})
    assert not result.is_error
    assert isinstance(result.content[0], types.TextContent) and result.content[0].text.startswith("Oslo: 18 C")


async def test_an_agent_searches_and_executes_through_toolscout_serve_over_stdio(registry: Path) -> None:
    command, *args = serve_command(registry)
    with anyio.fail_after(60):
        # Like a desktop host: the SDK's minimal environment, plus the test's private state folders.
        private = {key: os.environ[key] for key in ("TOOLSCOUT_STATE", "TOOLSCOUT_PINS", "TOOLSCOUT_DATA_DIR", "PYTHONPATH")
                   if key in os.environ}
        params = StdioServerParameters(command=command, args=args, env=private)
        async with Client(params, mode="legacy") as client:
            await _search_and_execute(client)


async def test_an_agent_searches_and_executes_through_toolscout_serve_over_http(registry: Path) -> None:
    with anyio.fail_after(60):
        async with served_over_http(serve_command(registry, "--transport", "http", "--port", "0")) as url:
            async with Client(url, mode="legacy") as client:
                await _search_and_execute(client)

