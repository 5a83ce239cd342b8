"""Upstream lifecycle: a slow start blocks nobody, repeated failures end in a visible give-up, and
an agent's cancellation, or a timeout, reaches the upstream."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from support.registries import failing_server, fast_search_settings, python_server, write_registry
from support.gateway_session import gateway_session
from support.waiting import wait_until

from toolscout.catalog import Catalog
from toolscout.gateway import Gateway, GatewayOptions
from toolscout.registry.loading import load_registries
from toolscout.search import ToolSearch
from toolscout.upstream import State

pytestmark = pytest.mark.anyio


async def test_a_slow_upstream_blocks_neither_startup_nor_the_others_and_joins_the_index_when_ready(tmp_path: Path) -> None:
    gate = tmp_path / "start-now"
    registry = write_registry(tmp_path / "servers.json", {
        "slow": python_server("hostile_server.py", "--start-after", str(gate)),
        "weather": python_server("weather_server.py"),
    })
    catalogs: list[Catalog] = []
    changed = anyio.Event()

    async def on_change(catalog: Catalog) -> None:
        nonlocal changed
        catalogs.append(catalog)
        changed.set()
        changed = anyio.Event()

    with anyio.fail_after(60):
        async with Gateway(load_registries([registry]), ToolSearch(fast_search_settings()), GatewayOptions(start_timeout=50)) as gateway:
            gateway.add_listener(on_change)
            while "weather__get_forecast" not in gateway.catalog.by_id:
                await changed.wait()
            # Served while the slow one is still starting:
            assert {s.name: s.state for s in gateway.statuses()} == {"slow": State.STARTING, "weather": State.UP}
            found = await gateway.search("weather forecast", limit=1)
            gate.write_text("go")
            while "slow__echo" not in gateway.catalog.by_id:
                await changed.wait()
            late = await gateway.search("return the given text unchanged", limit=1)
    assert found.hits[0].tool.id == "weather__get_forecast"
    assert late.hits[0].tool.id == "slow__echo"


async def test_an_upstream_that_keeps_failing_is_given_up_on_without_slow_retries_and_its_status_says_so(tmp_path: Path) -> None:
    registry = write_registry(tmp_path / "servers.json", {"broken": failing_server("fatal: no database")})
    options = GatewayOptions(max_restarts=1, retry_interval=None)
    with anyio.fail_after(60):
        async with Gateway(load_registries([registry]), ToolSearch(fast_search_settings()), options) as gateway:
            await gateway.wait_finished("broken")
            (status,) = gateway.statuses()
    assert status.state is State.DOWN
    assert "fatal: no database" in (status.reason or "")
    assert "gave up after 2 failed attempts" in (status.reason or "")


async def test_an_agents_cancellation_of_a_call_reaches_the_upstream(tmp_path: Path) -> None:
    marker = tmp_path / "cancelled.txt"
    registry = write_registry(tmp_path / "servers.json", {"hostile": python_server("hostile_server.py", timeout=300)})
    running = anyio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        running.set()

    with anyio.fail_after(60):
        async with gateway_session(registry) as (_, client):
            async with anyio.create_task_group() as tg:
                tg.start_soon(lambda: client.call_tool(
                    "execute_tool",
                    {"name": "hostile__hang_until_cancelled", "arguments": {"marker": str(marker)}},
                    progress_callback=on_progress,
                ))
                await running.wait()
                tg.cancel_scope.cancel()  # the agent gives up on the call
            # The upstream's tool sees the cancellation and leaves the marker.
            await wait_until(marker.exists, timeout=30)
    assert marker.read_text() == "cancelled"


async def test_a_call_that_times_out_is_cancelled_at_the_upstream_too(tmp_path: Path) -> None:
    marker = tmp_path / "cancelled.txt"
    registry = write_registry(tmp_path / "servers.json", {"hostile": python_server("hostile_server.py", timeout=1)})
    with anyio.fail_after(60):
        async with gateway_session(registry) as (_, client):
            result = await client.call_tool(
                "execute_tool", {"name": "hostile__hang_until_cancelled", "arguments": {"marker": str(marker)}}
            )
            # The gateway stopped waiting; the upstream must stop working on it too.
            await wait_until(marker.exists, timeout=30)
    assert result.is_error and "did not answer 'hang_until_cancelled' within 1 s" in result.content[0].text
    assert marker.read_text() == "cancelled"
