"""Profiles: one gateway, clients that each see only their own servers (and tools), through
`toolscout serve` over real HTTP sessions (/mcp/<profile>) and over stdio (--profile)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from support.registries import python_server
from support.serve_process import serve_command, served_over_http

from toolscout.errors import ConfigError, UnknownToolError
from toolscout.profiles import load_profiles

pytestmark = pytest.mark.anyio

PROFILES = {
    "desk": {"servers": ["weather"]},
    "notes-read": {"servers": ["notes"], "tools": ["notes__search", "notes__enable_*"]},
}


def write_registry(path: Path, profiles: Any = PROFILES) -> Path:
    path.write_text(json.dumps({
        "mcpServers": {"notes": python_server("notes_server.py"), "weather": python_server("weather_server.py")},
        "profiles": profiles,
    }))
    return path


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_registry(tmp_path_factory.mktemp("profiles") / "servers.json")


@pytest.fixture(scope="module")
async def served(registry: Path) -> AsyncIterator[str]:
    async with served_over_http(serve_command(registry, "--transport", "http", "--port", "0")) as url:
        yield url


async def search_ids(client: Client, query: str, **arguments: Any) -> list[str]:
    found = await client.call_tool("search_tools", {"query": query, "limit": 10, **arguments})
    assert not found.is_error, found.content
    return [entry["id"] for entry in found.structured_content["tools"]]


def text(result: types.CallToolResult) -> str:
    return " ".join(block.text for block in result.content if isinstance(block, types.TextContent))


async def test_two_clients_on_two_profile_paths_see_only_their_own_servers(served: str) -> None:
    with anyio.fail_after(60):
        async with Client(f"{served}/desk", mode="legacy") as desk, Client(f"{served}/notes-read", mode="legacy") as notes:
            # Instructions and the search tool's description name the profile's servers only.
            assert "weather" in (desk.instructions or "") and "notes" not in (desk.instructions or "")
            assert "notes" in (notes.instructions or "") and "weather" not in (notes.instructions or "")
            listed = {tool.name: tool for tool in (await desk.list_tools()).tools}
            assert listed["search_tools"].input_schema["properties"]["servers"]["items"]["enum"] == ["weather"]

            assert {i.split("__")[0] for i in await search_ids(desk, "note weather search city")} == {"weather"}
            # A tool list narrows the profile further: notes-read never sees create or delete.
            assert sorted(await search_ids(notes, "delete a note, create a note, search notes")) == [
                "notes__enable_archive_tools", "notes__search"]

            # Outside the profile a tool is unknown, and so is a server.
            refused = await notes.call_tool("execute_tool", {"name": "weather__get_current_weather", "arguments": {"city": "Oslo"}})
            assert refused.is_error and "weather__get_current_weather" in text(refused)
            refused = await notes.call_tool("execute_tool", {"name": "notes__delete_note", "arguments": {"note_id": 1}})
            assert refused.is_error
            refused = await desk.call_tool("search_tools", {"query": "notes", "servers": ["notes"]})
            assert refused.is_error and "Known servers: weather" in text(refused)

            allowed = await desk.call_tool("execute_tool", {"name": "weather__get_current_weather", "arguments": {"city": "Oslo"}})
            assert text(allowed).startswith("Oslo: 18 C")

        # The plain path serves the whole gateway (no --profile given).
        async with Client(served, mode="legacy") as everything:
            assert {i.split("__")[0] for i in await search_ids(everything, "note weather search city")} == {"notes", "weather"}


MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "probe", "version": "1"}}}


async def test_a_session_cannot_change_profile_by_changing_the_path(served: str) -> None:
    with anyio.fail_after(30):
        async with httpx2.AsyncClient(timeout=20) as http:
            opened = await http.post(f"{served}/desk", json=INITIALIZE, headers=MCP_HEADERS)
            assert opened.status_code == 200
            session = {"mcp-session-id": opened.headers["mcp-session-id"], **MCP_HEADERS}
            listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
            assert (await http.post(f"{served}/notes-read", json=listing, headers=session)).status_code == 404
            assert (await http.post(served, json=listing, headers=session)).status_code == 404
            assert (await http.post(f"{served}/nobody", json=INITIALIZE, headers=MCP_HEADERS)).status_code == 404


async def test_over_stdio_the_profile_is_a_flag(registry: Path) -> None:
    command, *args = serve_command(registry, "--profile", "desk")
    private = {key: os.environ[key] for key in ("TOOLSCOUT_PINS", "TOOLSCOUT_DATA_DIR", "PYTHONPATH") if key in os.environ}
    with anyio.fail_after(60):
        async with Client(StdioServerParameters(command=command, args=args, env=private), mode="legacy") as client:
            assert "notes" not in (client.instructions or "")
            assert {i.split("__")[0] for i in await search_ids(client, "note weather search city")} == {"weather"}
            refused = await client.call_tool("execute_tool", {"name": "notes__search", "arguments": {"text": "x"}})
            assert refused.is_error


def test_profile_mistakes_are_clear_errors(tmp_path: Path) -> None:
    servers = ["notes", "weather"]
    for profiles, message in (
        ({"x": {"servers": ["wether"]}}, "profile 'x': no server named 'wether' in the registries (servers: notes, weather)"),
        ({"x": {"servers": []}}, "'servers' must be a non-empty list of server names"),
        ({"x": {"servers": ["notes"], "tools": "notes__*"}}, "'tools' must be a list of tool id patterns"),
        ({"a b": {"servers": ["notes"]}}, "a profile name is 1-64 letters"),
        ([], "'profiles' must be an object"),
    ):
        with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
            load_profiles([write_registry(tmp_path / "servers.json", profiles)], servers)
    result = subprocess.run(
        serve_command(write_registry(tmp_path / "servers.json"), "--profile", "ide"),
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 2
    assert "toolscout serve: error: no profile 'ide'; the registries define: desk, notes-read" in result.stderr
    assert "Traceback" not in result.stderr


async def test_a_sampling_client_is_asked_about_its_own_profiles_tools_only(tmp_path: Path, registry: Path) -> None:
    from support.registries import fast_search_settings
    from support.wiring import catalog_where

    from toolscout.gateway import Gateway
    from toolscout.learning import ExpansionCache
    from toolscout.learning.sources import LearningSources
    from toolscout.registry.loading import load_registries
    from toolscout.search import ToolSearch
    from toolscout.serving.learning_hooks import Learning, SamplingExpansion
    from toolscout.serving.scoped import ProfileChooser, ScopedGateway
    from toolscout.serving.server import build_server

    specs = load_registries([registry])
    profiles = load_profiles([registry], [spec.name for spec in specs])
    chooser = ProfileChooser(profiles, profiles.get("desk"))
    cache = ExpansionCache(tmp_path / "expansions.sqlite3")
    prompts: list[str] = []

    async def model(context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        prompts.append(params.messages[0].content.text)
        return types.CreateMessageResult(role="assistant", content=types.TextContent(text='["a phrase"]'), model="m")

    gateway = Gateway(specs, ToolSearch(fast_search_settings()), enrich=LearningSources(cache=cache))
    with anyio.fail_after(60):
        async with gateway:
            await gateway.ready(30)
            expansion = SamplingExpansion(gateway, cache, requests_per_minute=60_000, profiles=chooser)
            async with Learning(gateway, expansion=expansion) as learning:
                server = build_server(gateway, observers=learning.observers, profiles=chooser)
                learning.install(server)
                async with Client(server, mode="legacy", sampling_callback=model):
                    await catalog_where(gateway, lambda c: all(t.expansion for t in c.tools if t.server == "weather"))
            # Below the name lookup, the profile's view refuses a tool outside it a second time.
            outside = next(t for t in gateway.catalog.tools if t.server == "notes")
            with pytest.raises(UnknownToolError):
                await ScopedGateway(gateway, profiles.get("desk")).call(outside, {"text": "x"})
    cache.close()
    assert len(prompts) == 3
    assert not any(name in prompt for prompt in prompts for name in ("create_note", "delete_note", "archive"))
