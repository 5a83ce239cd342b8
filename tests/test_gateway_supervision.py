"""An upstream that dies mid-call: the call fails naming it, and the pool starts it again."""

from __future__ import annotations

import logging
from pathlib import Path

import anyio
import pytest
from support.registries import fast_search_settings, python_server, write_registry
from support.waiting import wait_until
from mcp import Client

from toolscout.catalog import Catalog
from toolscout.gateway import Gateway, GatewayOptions
from toolscout.registry.loading import load_registries
from toolscout.search import ToolSearch
from toolscout.serving.server import build_server

pytestmark = pytest.mark.anyio


async def test_a_call_on_an_upstream_that_dies_fails_naming_it_and_the_upstream_comes_back(tmp_path: Path) -> None:
    registry = write_registry(tmp_path / "servers.json", {"fragile": python_server("fragile_server.py")})
    listed: list[bool] = []  # after each catalog change: is the server's tool in it?
    changed = anyio.Event()

    async def on_catalog(catalog: Catalog) -> None:
        nonlocal changed
        listed.append("fragile__echo" in catalog.by_id)
        changed.set()
        changed = anyio.Event()

    with anyio.fail_after(40):
        async with Gateway(load_registries([registry]), ToolSearch(fast_search_settings()), GatewayOptions(max_restarts=2)) as gateway:
            await gateway.ready(20)
            gateway.add_listener(on_catalog)
            async with Client(build_server(gateway), mode="legacy") as client:
                crashed = await client.call_tool("execute_tool", {"name": "fragile__crash_now", "arguments": {}})
                while listed[-2:] != [False, True]:
                    await changed.wait()
                echoed = await client.call_tool("execute_tool", {"name": "fragile__echo", "arguments": {"text": "hi"}})
    assert crashed.is_error
    assert "upstream 'fragile'" in crashed.content[0].text and "crash_now" in crashed.content[0].text
    assert not echoed.is_error and echoed.content[0].text == "hi"


@pytest.mark.parametrize(("stable_uptime", "expected_delay"), [(0.0, "0.1 s"), (3600.0, "1 s")])
async def test_an_upstream_that_was_up_for_long_is_restarted_at_once_one_that_just_started_after_a_second(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, stable_uptime: float, expected_delay: str
) -> None:
    # The threshold is moved instead of waiting for it: 0 makes any session "long", an hour none.
    registry = write_registry(tmp_path / "servers.json", {"fragile": python_server("fragile_server.py")})
    with anyio.fail_after(40), caplog.at_level(logging.INFO, logger="toolscout.upstream.pool"):
        options = GatewayOptions(max_restarts=2, stable_uptime=stable_uptime)
        async with Gateway(load_registries([registry]), ToolSearch(fast_search_settings()), options) as gateway:
            await gateway.ready(20)
            async with Client(build_server(gateway), mode="legacy") as client:
                await client.call_tool("execute_tool", {"name": "fragile__crash_now", "arguments": {}})
                await wait_until(lambda: any("restarting in" in record.getMessage() for record in caplog.records), timeout=30)
    restarts = [record.getMessage() for record in caplog.records if "restarting in" in record.getMessage()]
    assert restarts[0] == f"upstream 'fragile': restarting in {expected_delay}"


async def test_a_call_that_outlasts_the_registry_timeout_fails_naming_the_upstream(tmp_path: Path) -> None:
    registry = write_registry(tmp_path / "servers.json", {"fragile": python_server("fragile_server.py", timeout=1)})
    with anyio.fail_after(30):
        async with Gateway(load_registries([registry]), ToolSearch(fast_search_settings()), GatewayOptions(max_restarts=0)) as gateway:
            await gateway.ready(20)
            async with Client(build_server(gateway), mode="legacy") as client:
                hung = await client.call_tool("execute_tool", {"name": "fragile__wait_forever", "arguments": {}})
                echoed = await client.call_tool("execute_tool", {"name": "fragile__echo", "arguments": {"text": "ok"}})
    assert hung.is_error
    assert "upstream 'fragile': did not answer 'wait_forever' within 1 s" in hung.content[0].text
    assert echoed.content[0].text == "ok"


async def test_progress_is_forwarded_and_keeps_a_long_call_alive_past_the_timeout(tmp_path: Path) -> None:
    registry = write_registry(tmp_path / "servers.json", {"fragile": python_server("fragile_server.py", timeout=2)})
    seen: list[tuple[float, float | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total))

    with anyio.fail_after(30):
        async with Gateway(load_registries([registry]), ToolSearch(fast_search_settings()), GatewayOptions(max_restarts=0)) as gateway:
            await gateway.ready(20)
            async with Client(build_server(gateway), mode="legacy") as client:
                # 8 steps of 0.4 s outlast the 2 s timeout; each progress report restarts it.
                result = await client.call_tool(
                    "execute_tool",
                    {"name": "fragile__work_with_progress", "arguments": {"steps": 8, "step_seconds": 0.4}},
                    progress_callback=on_progress,
                )
    assert not result.is_error, result.content
    assert result.content[0].text == "done after 8 steps"
    assert seen == [(float(step), 8.0) for step in range(1, 9)]
