"""`toolscout search` and `toolscout tools` answer from the catalog a gateway last saw, without
starting any upstream: here one that would never finish starting (it blocks once a flag file exists),
so an answer that comes at all came from the cache."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client
from support.registries import python_server, write_registry
from support.serve_process import serve_command, served_over_http

pytestmark = pytest.mark.anyio

QUERY = "ring an alarm at seven"


def toolscout(*args: str) -> list[str]:
    return [sys.executable, "-m", "toolscout.cli", *args]


def blocking_registry(tmp_path: Path) -> tuple[Path, Path]:
    flag = tmp_path / "block-start"
    registry = write_registry(
        tmp_path / "servers.json",
        {"weather": python_server("weather_server.py"), "sleepy": python_server("sleepy_server.py", str(flag))},
    )
    return registry, flag


async def test_search_and_tools_answer_from_the_catalog_seen_while_an_upstream_would_never_start(tmp_path: Path) -> None:
    registry, flag = blocking_registry(tmp_path)
    # Connecting would wait for the blocked upstream for an hour.
    options = ["--registry", str(registry), "--start-timeout", "3600"]
    search = ["search", QUERY, *options, "--model", "none", "--json"]
    with anyio.fail_after(180):
        refreshed = await anyio.run_process(toolscout(*search, "--refresh"))
        flag.touch()
        cached = await anyio.run_process(toolscout(*search))
        listed = await anyio.run_process(toolscout("tools", *options, "--json", "--list"))
    answer = json.loads(cached.stdout)
    assert answer == json.loads(refreshed.stdout)
    assert answer["tools"][0]["id"] == "sleepy__set_alarm"
    assert "from the catalog seen" in cached.stderr.decode() and "--refresh" in cached.stderr.decode()
    rows = {row["name"]: row for row in json.loads(listed.stdout)}
    assert rows["sleepy"]["state"] == "up" and rows["sleepy"]["tools"] == ["sleepy__set_alarm", "sleepy__take_nap"]
    assert rows["weather"]["tool_count"] == 3


async def test_search_answers_as_a_running_serve_does_from_the_catalog_it_keeps(tmp_path: Path) -> None:
    registry, flag = blocking_registry(tmp_path)
    with anyio.fail_after(180):
        async with served_over_http(serve_command(registry, "--transport", "http", "--port", "0")) as url:
            # Nothing was cached before: this serve wrote what it sees once its upstreams were up.
            flag.touch()
            cli = await anyio.run_process(
                toolscout("search", QUERY, "--registry", str(registry), "--model", "none", "--json", "--start-timeout", "3600")
            )
            async with Client(url, mode="legacy") as client:
                served = (await client.call_tool("search_tools", {"query": QUERY, "limit": 5})).structured_content
    assert served is not None
    assert json.loads(cli.stdout)["tools"] == served["tools"]
