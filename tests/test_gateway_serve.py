"""`toolscout serve` as a real subprocess: an MCP client over stdio and over streamable HTTP."""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from conftest import python_server, write_registry
from mcp import Client, StdioServerParameters

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_registry(
        tmp_path_factory.mktemp("serve") / "servers.json",
        {"notes": python_server("notes_server.py"), "weather": python_server("weather_server.py")},
    )


def _serve_command(registry: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "toolscout.cli", "serve", "--registry", str(registry), "--model", "none", *extra]


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
    command, *args = _serve_command(registry)
    with anyio.fail_after(60):
        # Like a desktop host: the SDK's minimal environment, plus the test's private state folders.
        private = {key: os.environ[key] for key in ("TOOLSCOUT_PINS", "TOOLSCOUT_DATA_DIR")}
        params = StdioServerParameters(command=command, args=args, env=private)
        async with Client(params, mode="legacy") as client:
            await _search_and_execute(client)


async def test_an_agent_searches_and_executes_through_toolscout_serve_over_http(registry: Path) -> None:
    with anyio.fail_after(60):
        async with await anyio.open_process(_serve_command(registry, "--transport", "http", "--port", "0")) as process:
            try:
                url = await _served_url(process)
                async with Client(url, mode="legacy") as client:
                    await _search_and_execute(client)
            finally:
                process.terminate()
                with anyio.move_on_after(15):
                    await process.wait()
                if process.returncode is None:
                    process.kill()


async def _served_url(process: Any) -> str:
    """Read the server's stderr until it logs the address it listens on."""
    seen = ""
    assert process.stderr is not None
    async for chunk in process.stderr:
        seen += chunk.decode(errors="replace")
        match = re.search(r"streamable HTTP at (http://\S+/mcp)", seen)
        if match:
            return match.group(1)
    raise AssertionError(f"toolscout serve exited without serving:\n{seen}")
