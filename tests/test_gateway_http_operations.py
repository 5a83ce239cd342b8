"""What operators ask a served gateway over real HTTP: /healthz, /readyz, /metrics, request ids.

`toolscout serve --transport http` runs as a subprocess over two real upstreams (the weather and
notes servers of tests/upstreams); a real MCP client searches and calls through it, and plain HTTP
requests read the operations routes.
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import httpx2 as httpx
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from prometheus_client.parser import text_string_to_metric_families
from support.registries import fast_search_settings, python_server, write_registry
from support.serve_process import serve_command, served_over_http

from toolscout.gateway import Gateway, GatewayOptions
from toolscout.search import ToolSearch
from toolscout.serving.operations import readiness

pytestmark = pytest.mark.anyio

TOKEN = "ops-token-1f9e2a"


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of a Prometheus exposition by (name, sorted labels)."""
    return {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


async def test_metrics_health_and_request_ids_over_http(tmp_path: Path) -> None:
    registry = write_registry(tmp_path / "servers.json", {
        "weather": python_server("weather_server.py"),
        "notes": python_server("notes_server.py"),
    })
    command = serve_command(registry, "--transport", "http", "--port", "0")
    log: list[str] = []
    with anyio.fail_after(90):
        async with served_over_http(command, env={**os.environ, "TOOLSCOUT_AUTH_TOKEN": TOKEN}, log=log) as url:
            base = url.removesuffix("/mcp")
            async with httpx.AsyncClient() as http:
                # Probes carry no token; metrics need it.
                live = await http.get(f"{base}/healthz")
                ready = await http.get(f"{base}/readyz")
                refused = await http.get(f"{base}/metrics")
                headers = {"Authorization": f"Bearer {TOKEN}", "X-Request-Id": "trace-42"}
                async with create_mcp_http_client(headers=headers) as mcp_http:
                    async with Client(streamable_http_client(url, http_client=mcp_http), mode="legacy") as client:
                        await client.call_tool("search_tools", {"query": "weather forecast"})
                        await client.call_tool("search_tools", {"query": "delete a note"})
                        ok = await client.call_tool(
                            "execute_tool", {"name": "weather__get_current_weather", "arguments": {"city": "Oslo"}}
                        )
                        error = await client.call_tool(
                            "execute_tool", {"name": "notes__delete_note", "arguments": {"note_id": 404}}
                        )
                scraped = await http.get(f"{base}/metrics", headers={"Authorization": f"Bearer {TOKEN}"})
                generated = await http.get(f"{base}/healthz")
                hostile = await http.get(f"{base}/healthz", headers={"X-Request-Id": "evil\tid"})
    assert live.status_code == 200 and live.json() == {"live": True}
    assert ready.status_code == 200
    assert ready.json() == {"ready": True, "upstreams_up": 2, "upstreams": 2, "tools": 7, "embedding_backlog": 0}
    assert refused.status_code == 401
    assert not ok.is_error and error.is_error

    assert scraped.status_code == 200 and scraped.headers["content-type"].startswith("text/plain")
    found = samples(scraped.text)
    assert found[("toolscout_searches_total", ())] == 2
    assert found[("toolscout_search_seconds_count", ())] == 2
    assert found[("toolscout_tool_calls_total", (("outcome", "ok"), ("server", "weather")))] == 1
    assert found[("toolscout_tool_calls_total", (("outcome", "error"), ("server", "notes")))] == 1
    assert found[("toolscout_tool_call_seconds_count", (("server", "notes"),))] == 1
    assert found[("toolscout_upstream_state", (("server", "weather"), ("state", "up")))] == 1
    assert found[("toolscout_upstream_state", (("server", "weather"), ("state", "down")))] == 0
    assert found[("toolscout_upstream_restarts_total", (("server", "notes"),))] == 0
    assert found[("toolscout_upstream_gave_up", (("server", "notes"),))] == 0
    assert found[("toolscout_upstream_tools", (("server", "weather"),))] == 3
    assert found[("toolscout_tools_indexed", ())] == 7
    assert found[("toolscout_tools_withheld", ())] == 0
    assert found[("toolscout_embedding_backlog", ())] == 0

    # A client's own id is kept, echoed, and named by the log lines of its calls; else one is made.
    assert scraped.headers["x-request-id"] and scraped.headers["x-request-id"] != "trace-42"
    assert len(generated.headers["x-request-id"]) == 32
    assert hostile.headers["x-request-id"] != "evil\tid"
    written = "".join(log)
    assert "[request=trace-42]: execute_tool failed in" in written
    assert "[request=trace-42]: search_tools answered in" in written


async def test_a_gateway_is_not_ready_until_its_first_start_settled() -> None:
    with anyio.fail_after(30):
        async with Gateway([], ToolSearch(fast_search_settings()), GatewayOptions(max_restarts=0)) as gateway:
            before = readiness(gateway)
            await gateway.ready(5)
            after = readiness(gateway)
    assert before[0] is False and after[0] is True
