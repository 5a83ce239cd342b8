"""A call to an upstream that is not up is answered promptly with its state, in words a person can
act on: down until a given time, still starting (a start under way is waited for a few seconds,
and the answer says so), crashed in the middle of the call. Real MCP sessions through toolscout as
`serve` assembles it, over real upstream processes."""

from __future__ import annotations

import socket
from contextlib import suppress
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from support.gateway_session import app_config, gateway_session, text_of
from support.registries import UPSTREAMS, failing_server, python_server, write_registry

from toolscout.app import App
from toolscout.gateway import GatewayOptions

pytestmark = pytest.mark.anyio

# A process that starts but never speaks MCP: its start stays under way until the start timeout.
SILENT = {"command": sys.executable, "args": ["-c", "import time; time.sleep(120)"]}


async def refused_call(registry: Path, tool_id: str, **options: Any) -> str:
    """The error text of a call of `tool_id` through a gateway over `registry` (`options`: of
    `GatewayOptions`), answered far below the start timeout (30 s) a call used to wait through."""
    async with gateway_session(registry, **options) as (gateway, client):
        with anyio.fail_after(10):
            result = await client.call_tool("execute_tool", {"name": tool_id, "arguments": {}})
    assert result.is_error
    return text_of(result)


async def test_a_call_to_a_down_server_says_at_once_why_and_when_it_is_tried_next(tmp_path: Path) -> None:
    registry = write_registry(tmp_path / "servers.json", {
        "invoices": failing_server("error: cannot open database /srv/invoices.db"),
        "weather": python_server("weather_server.py"),
    })
    text = await refused_call(registry, "invoices__list_invoices", max_restarts=1, retry_interval=3600.0)
    assert "upstream 'invoices': not available (down: failed to start: " in text
    assert "cannot open database /srv/invoices.db" in text
    assert "; next attempt in " in text and " UTC)" in text


async def test_a_call_to_a_misconfigured_server_names_the_setting_to_change(tmp_path: Path) -> None:
    registry = write_registry(tmp_path / "servers.json", {"mail": {"command": "toolscout-test-no-such-command"}})
    text = await refused_call(registry, "mail__send")
    assert "upstream 'mail': not available (misconfigured): server 'mail' (" in text
    assert "command 'toolscout-test-no-such-command' not found on the upstream PATH; install it or fix 'command'" in text
    assert "not retried until the entry changes" in text and "A person must change" in text


async def test_a_call_waits_a_few_seconds_for_a_start_under_way_and_says_it_did(tmp_path: Path) -> None:
    registry = write_registry(tmp_path / "servers.json", {"slow": SILENT})
    async with App(app_config(registry, gateway=GatewayOptions(start_timeout=60))) as app:
        async with Client(app.server, mode="legacy") as client:
            with anyio.fail_after(15):
                result = await client.call_tool("execute_tool", {"name": "slow__anything", "arguments": {}})
    text = text_of(result)
    assert result.is_error
    assert "upstream 'slow': not available (still starting: a start is under way; waited " in text
    assert "Try again later" in text


async def test_an_upstream_that_exits_during_a_call_is_reported_at_once(tmp_path: Path) -> None:
    registry = write_registry(tmp_path / "servers.json", {"fragile": python_server("fragile_server.py")})
    async with gateway_session(registry) as (gateway, client):
        with anyio.fail_after(4):  # the crash is known when the process exits, not after a timeout
            result = await client.call_tool("execute_tool", {"name": "fragile__crash_now", "arguments": {}})
    assert result.is_error
    assert "upstream 'fragile': closed the connection during 'crash_now' (the upstream process exited with code 1)" in text_of(result)


async def test_an_http_upstream_that_exits_during_a_call_is_reported_at_once(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, str(UPSTREAMS / "fragile_server.py"), "--http", str(port)]
    async with await anyio.open_process(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) as server:
        try:
            with anyio.fail_after(20):
                while True:  # until it listens
                    try:
                        await (await anyio.connect_tcp("127.0.0.1", port)).aclose()
                        break
                    except OSError:
                        await anyio.sleep(0.1)
            registry = write_registry(tmp_path / "servers.json", {"remote": {"url": f"http://127.0.0.1:{port}/mcp"}})
            async with gateway_session(registry, max_restarts=0) as (gateway, client):
                with anyio.fail_after(4):  # its connections close when it exits: no resumption to wait for
                    result = await client.call_tool("execute_tool", {"name": "remote__crash_midway", "arguments": {}})
        finally:
            with suppress(ProcessLookupError):  # it exited, as it was told to
                server.kill()
    assert result.is_error
    assert "upstream 'remote': closed the connection during 'crash_midway'" in text_of(result)
