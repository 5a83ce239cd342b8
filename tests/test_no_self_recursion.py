"""A gateway never serves itself: a host's configuration that lists toolscout beside real servers
can be given to `toolscout serve` as a registry without toolscout starting itself."""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

import anyio
import psutil
import pytest
from mcp import Client
from support.gateway_session import text_of
from support.registries import fast_search_settings, python_server, write_registry
from support.serve_process import serve_command, served_over_http

import toolscout
from toolscout.gateway import Gateway, GatewayOptions
from toolscout.registry.spec import ServerSpec
from toolscout.search import ToolSearch
from toolscout.upstream.self_reference import self_reference

pytestmark = pytest.mark.anyio

# Where this checkout's toolscout lives: a toolscout started by a wrapper script must be this one.
SOURCE = str(Path(toolscout.__file__).resolve().parents[1])


def _starts_toolscout(command: str, *args: str) -> bool:
    spec = ServerSpec(name="x", transport="stdio", command=command, args=args, source="config.json")
    return self_reference(spec, command) is not None


@pytest.mark.parametrize("argv", [
    ["/home/me/.local/bin/toolscout", "serve"],
    ["toolscout.exe"],
    ["python3.12", "-m", "toolscout", "serve"],
    ["python", "-u", "-m", "toolscout.cli", "serve"],
    ["python", "-mtoolscout"],
    ["uvx", "toolscout", "serve"],
    ["uvx", "toolscout@latest", "serve"],
    ["uvx", "--from", "toolscout[train]", "toolscout", "serve"],
    ["uvx", "--python", "3.12", "toolscout==0.1.0"],
    ["uv", "run", "--directory", "/src/toolscout", "toolscout", "serve"],
    ["uv", "run", "python", "-m", "toolscout"],
    ["uv", "tool", "run", "toolscout", "serve"],
    ["pipx", "run", "toolscout", "serve"],
])
def test_commands_that_start_toolscout_are_recognised(argv: list[str]) -> None:
    assert _starts_toolscout(*argv)


@pytest.mark.parametrize("argv", [
    ["uvx", "mcp-server-time", "--local-timezone", "UTC"],
    ["uvx", "--from", "mcp-server-git", "mcp-server-git", "--repository", "toolscout"],
    ["python", "server.py", "toolscout"],
    ["python", "-m", "mcp_server_time"],
    ["python", "-c", "import toolscout"],
    ["npx", "-y", "@modelcontextprotocol/server-filesystem", "/src/toolscout"],
    ["uv", "pip", "install", "toolscout"],
])
def test_other_commands_are_not_mistaken_for_toolscout(argv: list[str]) -> None:
    assert not _starts_toolscout(*argv)


def _gateways_below(pid: int) -> list[str]:
    """Command lines of toolscout processes among the descendants of `pid`."""
    found = []
    for child in psutil.Process(pid).children(recursive=True):
        try:
            cmdline = child.cmdline()
        except psutil.Error:
            continue  # it exited meanwhile
        if any(part.endswith(("toolscout", "toolscout.cli")) for part in cmdline) and child.status() != psutil.STATUS_ZOMBIE:
            found.append(shlex.join(cmdline))
    return found


async def test_serve_over_a_desktop_config_that_lists_toolscout_serves_the_other_servers_and_never_itself(
    tmp_path: Path,
) -> None:
    config = tmp_path / "claude_desktop_config.json"
    wrapped = f"exec {shlex.quote(sys.executable)} -m toolscout.cli serve --registry {shlex.quote(str(config))} --model none"
    write_registry(config, {
        # What the README tells a user to add to claude_desktop_config.json, in its three spellings.
        "toolscout": {"command": "toolscout", "args": ["serve"]},
        "toolscout-module": {"command": sys.executable, "args": ["-m", "toolscout.cli", "serve"]},
        "toolscout-uvx": {"command": "uvx", "args": ["toolscout", "serve"]},
        # Started through a shell: only the marker in its environment can tell.
        "toolscout-wrapped": {"command": "sh", "args": ["-c", wrapped], "env": {"PYTHONPATH": SOURCE}},
        "notes": python_server("notes_server.py"),
    })
    command = serve_command(config, "--transport", "http", "--port", "0", "--max-restarts", "3")
    with anyio.fail_after(90):
        async with served_over_http(command) as url, Client(url, mode="legacy") as client:
            serving_pid = next(p.pid for p in psutil.Process().children() if "serve" in p.cmdline())
            found = await client.call_tool("search_tools", {"query": "create a note with a title and body"})
            assert found.structured_content["tools"][0]["id"] == "notes__create_note"
            assert not (await client.call_tool(
                "execute_tool", {"name": "notes__create_note", "arguments": {"title": "a", "body": "b"}}
            )).is_error
            for name in ("toolscout", "toolscout-module", "toolscout-uvx", "toolscout-wrapped"):
                refused = await client.call_tool("execute_tool", {"name": f"{name}__search_tools"})
                assert refused.is_error and "skipped" in text_of(refused) and "never serves itself" in text_of(refused)
                assert "Try again later" not in text_of(refused)
            assert _gateways_below(serving_pid) == []


async def test_a_toolscout_gateway_of_this_machine_reached_by_url_is_skipped_at_initialize(tmp_path: Path) -> None:
    inner = write_registry(tmp_path / "inner.json", {"notes": python_server("notes_server.py")})
    with anyio.fail_after(90):
        async with served_over_http(serve_command(inner, "--transport", "http", "--port", "0")) as url:
            specs = [
                ServerSpec(name="gateway", transport="http", url=url, source="outer.json"),
                ServerSpec(name="weather", transport="stdio", command=sys.executable,
                           args=(str(Path(__file__).parent / "upstreams" / "weather_server.py"),), source="outer.json"),
            ]
            options = GatewayOptions(start_timeout=20, max_restarts=3)
            async with Gateway(specs, ToolSearch(fast_search_settings()), options) as gateway:
                await gateway.ready(30)
                await gateway.wait_finished("gateway")  # not retried, although restarts are allowed
                statuses = {s.name: s for s in gateway.statuses()}
                served = {tool.server for tool in gateway.catalog.tools}
    assert served == {"weather"}
    skipped = statuses["gateway"]
    assert skipped.configuration_error and skipped.skipped
    assert "introduced itself as toolscout" in skipped.reason and "remove server 'gateway' from outer.json" in skipped.reason
