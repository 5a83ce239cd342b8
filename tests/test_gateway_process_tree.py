"""No upstream process outlives the gateway, grandchildren included; a dead leader ends its session.

The upstream here starts a helper process that inherits its stdout, as `uvx` -> python and
`npx` -> node do: the pipe stays open after the server itself is gone.
"""

from __future__ import annotations

from contextlib import suppress
from pathlib import Path

import anyio
import psutil
import pytest
from support.processes import alive
from support.registries import fast_search_settings, python_server, write_registry
from support.waiting import wait_until
from mcp import Client

from toolscout.gateway import Gateway, GatewayOptions
from toolscout.registry.loading import load_registries
from toolscout.search import ToolSearch
from toolscout.serving.server import build_server

pytestmark = pytest.mark.anyio


def _helpers(pidfile: Path) -> list[int]:
    return [int(line) for line in pidfile.read_text().split()] if pidfile.exists() else []


async def _wait_gone(pids: list[int]) -> list[int]:
    """The pids still alive once they all died or 10 s passed (kills are asynchronous)."""
    with suppress(TimeoutError):
        await wait_until(lambda: not any(alive(pid) for pid in pids), timeout=10)
    return [pid for pid in pids if alive(pid)]


async def test_stopping_the_gateway_leaves_no_process_of_an_upstream_behind_grandchildren_included(tmp_path: Path) -> None:
    pidfile = tmp_path / "helpers.txt"
    registry = write_registry(tmp_path / "servers.json", {"spawning": python_server("spawning_server.py", str(pidfile))})
    with anyio.fail_after(40):
        async with Gateway(load_registries([registry]), ToolSearch(fast_search_settings()), GatewayOptions(max_restarts=0)) as gateway:
            await gateway.ready(20)
            helpers = _helpers(pidfile)
            assert helpers and all(alive(pid) for pid in helpers)
            leader = psutil.Process(helpers[0]).ppid()
        assert await _wait_gone([*helpers, leader]) == []


async def test_a_call_fails_naming_the_upstream_when_it_dies_while_its_child_holds_the_pipe(tmp_path: Path) -> None:
    pidfile = tmp_path / "helpers.txt"
    registry = write_registry(
        tmp_path / "servers.json", {"spawning": python_server("spawning_server.py", str(pidfile), timeout=300)}
    )
    with anyio.fail_after(60):
        async with Gateway(load_registries([registry]), ToolSearch(fast_search_settings()), GatewayOptions(max_restarts=0)) as gateway:
            await gateway.ready(20)
            first_helper = _helpers(pidfile)[0]
            async with Client(build_server(gateway), mode="legacy") as client:
                # The call timeout is 300 s: only noticing the leader's exit can end this call in time.
                with anyio.fail_after(15):
                    crashed = await client.call_tool("execute_tool", {"name": "spawning__crash", "arguments": {}})
            # The dead leader's helper is killed with it, not left running until shutdown.
            assert await _wait_gone([first_helper]) == []
    assert crashed.is_error
    assert "upstream 'spawning'" in crashed.content[0].text and "'crash'" in crashed.content[0].text
    assert "exited with code 3" in crashed.content[0].text


async def test_an_upstream_process_that_ignores_sigterm_is_killed_when_the_gateway_stops(tmp_path: Path) -> None:
    pidfile = tmp_path / "helpers.txt"
    entry = python_server("spawning_server.py", str(pidfile), "--ignore-sigterm")
    registry = write_registry(tmp_path / "servers.json", {"stubborn": entry})
    with anyio.fail_after(40):
        async with Gateway(load_registries([registry]), ToolSearch(fast_search_settings()), GatewayOptions(max_restarts=0)) as gateway:
            await gateway.ready(20)
            helpers = _helpers(pidfile)
            assert helpers and all(alive(pid) for pid in helpers)
        survivors = await _wait_gone(helpers)
    for pid in survivors:  # not left running for 10 minutes when this fails
        psutil.Process(pid).kill()
    assert survivors == []
