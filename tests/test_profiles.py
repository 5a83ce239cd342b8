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
from support.registries import python_server, time_server
from support.serve_process import serve_command, served_over_http

from toolscout.errors import ConfigError, UnknownToolError
from toolscout.registry.profiles import load_profiles

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
            # The instructions name the profile's servers only; the meta-tools' definitions are the
            # same for every client (they never name a server).
            assert "weather" in (desk.instructions or "") and "notes" not in (desk.instructions or "")
            assert "notes" in (notes.instructions or "") and "weather" not in (notes.instructions or "")
            assert (await desk.list_tools()).tools == (await notes.list_tools()).tools

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
    private = {key: os.environ[key] for key in ("TOOLSCOUT_PINS", "TOOLSCOUT_STATE", "TOOLSCOUT_DATA_DIR", "PYTHONPATH") if key in os.environ}
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


LIBRARY_PROFILES = {
    "desk": {"servers": ["weather"]},
    "reading": {"servers": ["library"]},
    "clock": {"servers": ["time"], "tools": ["time__get_current_time"]},
}
IDE_TOKEN, CI_TOKEN = "ide-token-0123456789abcdef", "ci-token-0123456789abcdef"
WALL_TOKEN = "wall-token-0123456789abcdef"


@pytest.fixture(scope="module")
async def served_with_tokens(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[str]:
    folder = tmp_path_factory.mktemp("bound")
    registry = folder / "servers.json"
    registry.write_text(json.dumps({
        "mcpServers": {
            "library": python_server("library_server.py"), "weather": python_server("weather_server.py"),
            "time": time_server(),  # gives no instructions: its summary is made from its tools
        },
        "profiles": LIBRARY_PROFILES,
    }))
    tokens = folder / "tokens.json"
    tokens.write_text(json.dumps({"clients": [
        {"name": "ide", "token": IDE_TOKEN, "profile": "desk"},
        {"name": "ci", "token": CI_TOKEN},
        {"name": "wall", "token": WALL_TOKEN, "profile": "clock"},
    ]}))
    tokens.chmod(0o600)
    command = serve_command(registry, "--transport", "http", "--port", "0", "--tokens", str(tokens))
    async with served_over_http(command) as url:
        yield url


def bearer(token: str) -> Any:
    from mcp.shared._httpx_utils import create_mcp_http_client

    return create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})


async def test_a_token_bound_to_a_profile_decides_the_profile_whatever_the_path(served_with_tokens: str) -> None:
    from mcp.client.streamable_http import streamable_http_client

    url = served_with_tokens
    with anyio.fail_after(60):
        async with bearer(IDE_TOKEN) as http:
            # On the plain path the token's profile applies, not the whole gateway.
            async with Client(streamable_http_client(url, http_client=http), mode="legacy") as ide:
                assert "library" not in (ide.instructions or "")
                assert {i.split("__")[0] for i in await search_ids(ide, "weather in a city, read a book")} == {"weather"}
                refused = await ide.call_tool("execute_tool", {"name": "library__chatter", "arguments": {"count": 1}})
                assert refused.is_error
            # Another profile's path is refused outright.
            answer = await http.post(f"{url}/reading", json=INITIALIZE, headers=MCP_HEADERS)
            assert answer.status_code == 403 and "bound to profile 'desk'" in answer.text
        async with bearer(CI_TOKEN) as http:
            # A token without a profile follows the path, as before.
            async with Client(streamable_http_client(f"{url}/reading", http_client=http), mode="legacy") as ci:
                assert {i.split("__")[0] for i in await search_ids(ci, "weather in a city, read a book")} == {"library"}


@pytest.mark.filterwarnings("ignore:resources/subscribe is removed")
async def test_a_profile_lists_reads_and_completes_only_its_own_servers_resources_and_prompts(served_with_tokens: str) -> None:
    from mcp import MCPError
    from mcp.client.streamable_http import streamable_http_client

    url = served_with_tokens
    with anyio.fail_after(60):
        async with bearer(CI_TOKEN) as http:
            async with Client(streamable_http_client(f"{url}/reading", http_client=http), mode="legacy") as reading, \
                    Client(streamable_http_client(f"{url}/desk", http_client=http), mode="legacy") as desk:
                readme = "toolscout://library/library://readme"
                assert readme in [str(r.uri) for r in (await reading.list_resources()).resources]
                assert (await reading.list_prompts()).prompts
                assert "books" in (await reading.read_resource(readme)).contents[0].text

                # The desk profile has no library: its resources and prompts do not exist for it.
                assert (await desk.list_resources()).resources == []
                assert (await desk.list_resource_templates()).resource_templates == []
                assert (await desk.list_prompts()).prompts == []
                for attempt in (
                    desk.read_resource(readme),
                    desk.read_resource("library://readme"),  # the upstream's own URI too
                    desk.get_prompt("library__discuss", {"title": "dune"}),
                    desk.complete(types.PromptReference(name="library__discuss"), {"name": "title", "value": "d"}),
                    desk.subscribe_resource(readme),
                ):
                    with pytest.raises(MCPError) as refused:
                        await attempt
                    assert refused.value.error.message.startswith("Unknown"), refused.value.error.message


async def test_a_token_bound_to_a_profile_sees_nothing_beyond_it_over_http(served_with_tokens: str) -> None:
    from mcp.client.streamable_http import streamable_http_client

    url = served_with_tokens
    base = url.removesuffix("/mcp")
    with anyio.fail_after(60):
        async with bearer(WALL_TOKEN) as http:
            async with Client(streamable_http_client(url, http_client=http), mode="legacy") as wall:
                instructions = wall.instructions or ""
                found = await wall.call_tool("search_tools", {"query": "what time is it, convert a time zone"})
            metrics = await http.get(f"{base}/metrics")
            unknown = await http.post(f"{url}/no-such-profile", json=INITIALIZE, headers=MCP_HEADERS)
        async with bearer(CI_TOKEN) as http:
            operator_metrics = await http.get(f"{base}/metrics")
    seen = instructions + json.dumps(found.structured_content)
    # The profile shows the time server's get_current_time only: no word of the tool it hides.
    assert "time (1 tool)" in instructions
    assert [entry["id"] for entry in found.structured_content["tools"]] == ["time__get_current_time"]
    assert "convert" not in seen.lower()
    assert "library" not in seen and "weather" not in seen
    # /metrics counts every server: an operator's token reads it, a profile's does not.
    assert metrics.status_code == 403 and "bound to profile 'clock'" in metrics.text
    assert operator_metrics.status_code == 200 and 'server="library"' in operator_metrics.text
    # A wrong profile path names no profile.
    assert unknown.status_code == 404
    assert not any(name in unknown.text for name in ("desk", "reading", "clock"))
