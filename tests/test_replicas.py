"""Two `toolscout serve --transport http` replicas over one real Postgres state store.

A tool whose definition changed since it was pinned is quarantined by both; calls to the other
tools go on while Postgres is down; `toolscout approve` against the store releases the tool on
both replicas, with no restart, once Postgres is back. Behind a load balancer (tests/support/
balancer.py, in the client), a 2026-07-28 client is served whichever replica each request reaches;
a client of the initialize handshake needs session affinity, and works with it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
import httpx2 as httpx
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from support.balancer import Balancer
from support.postgres import PostgresServer
from support.registries import write_registry
from support.serve_process import serve_command, served_over_http
from support.wiring import NOTE, SEND, echoed, scripted

from toolscout.catalog import ToolRecord
from toolscout.cli import main
from toolscout.security.pinning import PinStore

pytestmark = pytest.mark.anyio


@pytest.fixture
def postgres() -> Iterator[PostgresServer]:
    with PostgresServer() as server:
        yield server


async def _call(url: str, name: str) -> Any:
    async with Client(url, mode="legacy") as client:
        return await client.call_tool("execute_tool", {"name": name, "arguments": {"to": "a", "title": "t"}})


async def _released(url: str) -> float:
    """Seconds until the replica at `url` runs send_report (polled every 0.1 s)."""
    started = time.perf_counter()
    while (await _call(url, "office__send_report")).is_error:
        await anyio.sleep(0.1)
    return time.perf_counter() - started


async def _through_balancer(first: str, second: str, mode: str, affinity: bool) -> tuple[str, set[int]]:
    """Three calls through a balancer over both replicas: ("ok" or "failed", servers reached)."""
    balancer = Balancer([first, second], affinity=affinity)
    try:
        async with httpx.AsyncClient(transport=balancer, timeout=30) as http:
            connect_mode = "legacy" if mode.startswith("legacy") else mode
            async with Client(streamable_http_client(first, http_client=http), mode=connect_mode) as client:
                for _ in range(3):
                    result = await client.call_tool("execute_tool", {"name": "office__read_note", "arguments": {"title": "t"}})
                    assert echoed(result)["tool"] == "read_note"
    except Exception:  # noqa: BLE001 - a session one replica never issued: the other refuses it
        return "failed", set(balancer.routed)
    return "ok", set(balancer.routed)


async def test_replicas_share_pins_keep_serving_while_postgres_restarts_and_honour_one_approval(
    tmp_path: Path, postgres: PostgresServer
) -> None:
    entry, _ = scripted(tmp_path, "office", [SEND, NOTE])
    registry = write_registry(tmp_path / "servers.json", {"office": entry})
    # Approved long ago with another description: the listed one is a change awaiting review.
    PinStore(postgres.url).check([ToolRecord(id="", name="send_report", server="office",
                                             description="Send a report.", input_schema=SEND["inputSchema"])])
    command = serve_command(registry, "--transport", "http", "--port", "0", "--state", postgres.url)
    env = {**os.environ}
    with anyio.fail_after(120):
        async with served_over_http(command, env=env) as first, served_over_http(command, env=env) as second:
            refused = [await _call(url, "office__send_report") for url in (first, second)]
            postgres.stop()
            # Calls to upstreams need no state: both replicas go on serving them.
            while_down = [await _call(url, "office__read_note") for url in (first, second)]
            postgres.start_again()
            approve = ["approve", "--state", postgres.url, "--server", "office", "send_report", "--yes"]
            code = await anyio.to_thread.run_sync(main, approve)
            delays = [await _released(url) for url in (first, second)]
            balanced = {mode: await _through_balancer(first, second, mode, affinity) for mode, affinity in (
                ("2026-07-28", False), ("legacy", True), ("legacy-without-affinity", False))}
    assert balanced["2026-07-28"] == ("ok", {0, 1})
    # Every request of the session went to the replica that issued it.
    assert balanced["legacy"] == ("ok", {0})
    assert balanced["legacy-without-affinity"][0] == "failed"
    assert all(r.is_error and "quarantined" in r.content[0].text for r in refused)
    assert [echoed(r)["tool"] for r in while_down] == ["read_note", "read_note"]
    assert code == 0
    assert all(delay < 30 for delay in delays)
