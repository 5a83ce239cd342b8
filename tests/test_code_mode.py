"""run_code, the third meta-tool: an agent's script over the tools, run in the sandbox, through the
same execute path as execute_tool; over in-memory, stdio and HTTP sessions."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from support.code_mode import COMBINING_SCRIPT, calls_seen, crm_and_mail
from support.gateway_session import text_of
from support.registries import fast_search_settings
from support.serve_process import serve_command, served_over_http

from toolscout.catalog import ToolRecord
from toolscout.gateway import Gateway
from toolscout.registry.loading import load_registries
from toolscout.registry.profiles import load_profiles
from toolscout.search import ToolSearch
from toolscout.serving.options import CodeModeLimits
from toolscout.serving.scoped import ProfileChooser
from toolscout.serving.server import build_server

pytestmark = pytest.mark.anyio

COMBINED = {"customers_from": "crm", "mail_from": "mail", "body": "region north"}
EXPECTED_CALLS = {
    "crm": [{"server": "crm", "tool": "list_customers", "arguments": {"region": "north"}}],
    "mail": [{"server": "mail", "tool": "send_message", "arguments": {"to": "ops@example.com", "body": "region north"}}],
}


def _private_env() -> dict[str, str]:
    keys = ("TOOLSCOUT_PINS", "TOOLSCOUT_STATE", "TOOLSCOUT_DATA_DIR", "PYTHONPATH", "PATH")
    return {key: os.environ[key] for key in keys if key in os.environ}


async def test_a_script_searches_calls_two_servers_and_returns_the_combined_answer_in_memory(tmp_path: Path) -> None:
    registry = crm_and_mail(tmp_path)
    with anyio.fail_after(60):
        async with Gateway(load_registries([registry]), ToolSearch(fast_search_settings())) as gateway:
            await gateway.ready(30)
            async with Client(build_server(gateway, code_mode=CodeModeLimits()), mode="legacy") as client:
                listed = [tool.name for tool in (await client.list_tools()).tools]
                result = await client.call_tool("run_code", {"code": COMBINING_SCRIPT})
    assert listed == ["search_tools", "execute_tool", "run_code"]
    assert not result.is_error, text_of(result)
    assert result.structured_content == {"printed": "searched: crm__list_customers\n", "value": COMBINED, "tool_calls": 3}
    assert '"customers_from": "crm"' in text_of(result)
    assert {server: calls_seen(tmp_path, server) for server in ("crm", "mail")} == EXPECTED_CALLS


async def test_run_code_is_not_listed_and_not_run_when_code_mode_is_off(tmp_path: Path) -> None:
    registry = crm_and_mail(tmp_path)
    with anyio.fail_after(60):
        async with Gateway(load_registries([registry]), ToolSearch(fast_search_settings())) as gateway:
            await gateway.ready(30)
            async with Client(build_server(gateway), mode="legacy") as client:
                listed = [tool.name for tool in (await client.list_tools()).tools]
                result = await client.call_tool("run_code", {"code": COMBINING_SCRIPT})
    assert listed == ["search_tools", "execute_tool"]
    assert result.is_error and "Unknown tool 'run_code'" in text_of(result)
    assert calls_seen(tmp_path, "crm") == []


async def test_a_script_over_stdio_serve_with_code_mode_returns_the_combined_answer(tmp_path: Path) -> None:
    command, *args = serve_command(crm_and_mail(tmp_path), "--code-mode")
    with anyio.fail_after(90):
        async with Client(StdioServerParameters(command=command, args=args, env=_private_env()), mode="legacy") as client:
            result = await client.call_tool("run_code", {"code": COMBINING_SCRIPT})
    assert not result.is_error, text_of(result)
    assert result.structured_content["value"] == COMBINED
    assert {server: calls_seen(tmp_path, server) for server in ("crm", "mail")} == EXPECTED_CALLS


async def test_a_script_over_http_serve_with_code_mode_returns_the_combined_answer(tmp_path: Path) -> None:
    command = serve_command(crm_and_mail(tmp_path), "--transport", "http", "--port", "0", "--code-mode")
    with anyio.fail_after(90):
        async with served_over_http(command, env=_private_env()) as url, Client(url, mode="legacy") as client:
            result = await client.call_tool("run_code", {"code": COMBINING_SCRIPT})
    assert not result.is_error, text_of(result)
    assert result.structured_content["value"] == COMBINED
    assert {server: calls_seen(tmp_path, server) for server in ("crm", "mail")} == EXPECTED_CALLS


async def _refusals(client: Client, tool_id: str, arguments: dict[str, Any]) -> tuple[str, str]:
    """(what execute_tool answers, what a script calling the same tool is told)."""
    direct = await client.call_tool("execute_tool", {"name": tool_id, "arguments": arguments})
    scripted = await client.call_tool("run_code", {"code": f"call_tool({tool_id!r}, {arguments!r})"})
    assert direct.is_error and scripted.is_error
    return text_of(direct), text_of(scripted)


async def test_withheld_tools_and_arguments_failing_the_schema_are_refused_in_a_script_as_by_execute_tool(tmp_path: Path) -> None:
    registry = crm_and_mail(tmp_path)

    def screen(tools: Sequence[ToolRecord]) -> dict[str, str]:
        return {tool.id: "its definition changed since it was approved; run toolscout approve"
                for tool in tools if tool.id == "mail__send_message"}

    with anyio.fail_after(60):
        async with Gateway(load_registries([registry]), ToolSearch(fast_search_settings()), screens=[screen]) as gateway:
            await gateway.ready(30)
            async with Client(build_server(gateway, code_mode=CodeModeLimits()), mode="legacy") as client:
                withheld = await _refusals(client, "mail__send_message", {"to": "a", "body": "b"})
                invalid = await _refusals(client, "crm__list_customers", {"region": 7})
    for direct, scripted in (withheld, invalid):
        assert direct in scripted, (direct, scripted)
    assert "run toolscout approve" in withheld[1]
    assert calls_seen(tmp_path, "mail") == [] and calls_seen(tmp_path, "crm") == []


async def test_a_profile_bound_client_calls_and_finds_only_its_profiles_tools_in_a_script(tmp_path: Path) -> None:
    registry = crm_and_mail(tmp_path)
    specs = load_registries([registry])
    registry_with_profile = registry.with_name("profiled.json")
    registry_with_profile.write_text(
        registry.read_text().rstrip()[:-1] + ', "profiles": {"sales": {"servers": ["crm"]}}}', encoding="utf-8"
    )
    profiles = load_profiles([registry_with_profile], [spec.name for spec in specs])
    chooser = ProfileChooser(profiles, profiles.get("sales"))
    found_script = "[tool['id'] for tool in search_tools('send an email message', k=5)]"
    with anyio.fail_after(60):
        async with Gateway(specs, ToolSearch(fast_search_settings())) as gateway:
            await gateway.ready(30)
            server = build_server(gateway, profiles=chooser, code_mode=CodeModeLimits())
            async with Client(server, mode="legacy") as client:
                outside = await _refusals(client, "mail__send_message", {"to": "a", "body": "b"})
                found = await client.call_tool("run_code", {"code": found_script})
    assert outside[0] in outside[1]
    assert all(tool_id.startswith("crm__") for tool_id in found.structured_content["value"])
    assert calls_seen(tmp_path, "mail") == []


async def test_observers_see_each_call_a_script_makes_as_if_the_agent_made_it(tmp_path: Path) -> None:
    seen: list[tuple[str, dict[str, Any]]] = []

    def observe(ctx: object, name: str, arguments: dict[str, Any], result: types.CallToolResult) -> None:
        seen.append((name, arguments))

    with anyio.fail_after(60):
        async with Gateway(load_registries([crm_and_mail(tmp_path)]), ToolSearch(fast_search_settings())) as gateway:
            await gateway.ready(30)
            async with Client(build_server(gateway, observers=[observe], code_mode=CodeModeLimits()), mode="legacy") as client:
                await client.call_tool("run_code", {"code": COMBINING_SCRIPT})
    assert [name for name, _ in seen] == ["search_tools", "execute_tool", "execute_tool", "run_code"]
    assert seen[1][1] == {"name": "crm__list_customers", "arguments": {"region": "north"}}


def test_nothing_of_code_mode_is_imported_when_it_is_off() -> None:
    probe = (
        "import sys, toolscout.app, toolscout.commands.serve, toolscout.serving.server\n"
        "print(sorted(m for m in sys.modules if m.startswith(('pydantic_monty', 'toolscout.serving.code_mode', "
        "'toolscout.serving.sandbox'))))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True)
    assert done.stdout.strip() == "[]"


def test_a_limit_of_zero_or_less_stops_serve_with_an_error_naming_the_option(tmp_path: Path) -> None:
    registry = tmp_path / "servers.json"
    registry.write_text('{"mcpServers": {}}', encoding="utf-8")
    done = subprocess.run(
        [*serve_command(registry, "--code-mode", "--code-wall-time", "0")],
        capture_output=True, text=True, timeout=120, env=_private_env(),
    )
    assert done.returncode != 0
    assert "--code-wall-time must be more than 0, got 0" in done.stderr
    assert "Traceback" not in done.stderr


async def test_serve_exits_cleanly_when_its_client_leaves_right_after_a_script(tmp_path: Path) -> None:
    # pydantic-monty's closed pools may wake the event loop for a few ms more (serving/sandbox.py).
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "run_code", "arguments": {"code": "6 * 7"}}},
    ]
    command = serve_command(crm_and_mail(tmp_path), "--code-mode")
    with anyio.fail_after(90):
        async with await anyio.open_process(command, env=_private_env(), stderr=subprocess.DEVNULL) as process:
            assert process.stdin is not None and process.stdout is not None
            await process.stdin.send("".join(json.dumps(m) + "\n" for m in messages).encode())
            received = b""
            async for chunk in process.stdout:
                received += chunk
                if b'"id":2' in received.replace(b" ", b""):
                    break
            await process.stdin.aclose()
            returncode = await process.wait()
    assert b'"value":42' in received.replace(b" ", b"")
    assert returncode == 0
