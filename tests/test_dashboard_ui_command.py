"""`toolscout ui`: a local HTTP face with the dashboard for a stdio deployment, over the same
registry and state store, signed into by its one-time link; its MCP endpoint stays closed."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import anyio
import httpx2 as httpx
import pytest
from support.registries import python_server, write_registry
from support.serve_process import served_over_http

pytestmark = pytest.mark.anyio


async def test_toolscout_ui_serves_the_dashboard_behind_a_one_time_link_and_keeps_mcp_closed(tmp_path: Path) -> None:
    registry = write_registry(tmp_path / "servers.json", {"weather": python_server("weather_server.py")})
    command = [sys.executable, "-m", "toolscout.cli", "ui", "--registry", str(registry), "--model", "none",
               "--state", str(tmp_path / "state.sqlite3"), "--no-browser"]
    log: list[str] = []
    with anyio.fail_after(90):
        async with served_over_http(command, log=log) as url:
            link = re.search(r"dashboard: open (http://\S+/ui\?token=\S+)", "".join(log))
            assert link is not None, "".join(log)
            async with httpx.AsyncClient() as http:
                signed_in = await http.get(link.group(1))
                servers = await http.get(url.removesuffix("/mcp") + "/ui")  # with the cookie the link set
                again = await http.get(link.group(1))
                mcp = await http.post(url, json={})
    assert url.startswith("http://127.0.0.1:")
    assert signed_in.status_code == 303 and signed_in.headers["location"] == "/ui"
    assert servers.status_code == 200 and 'data-server="weather"' in servers.text
    assert again.status_code == 401
    assert mcp.status_code == 401
