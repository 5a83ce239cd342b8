"""`toolscout search` and `toolscout tools` answer from the catalog a gateway last saw, without
starting any upstream: here one that would never finish starting (it blocks once a flag file exists),
so an answer that comes at all came from the cache."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import anyio
import pytest
from mcp import Client
from support.registries import python_server, write_registry
from support.serve_process import serve_command, served_over_http

pytestmark = pytest.mark.anyio

QUERY = "ring an alarm at seven"


# Runs the command line, then says on stderr which of these it imported.
_REPORT_IMPORTS = """
import json, sys
from toolscout.cli import main
code = main(sys.argv[1:])
print("imported:", json.dumps(sorted({name.split(".")[0] for name in sys.modules} & {"mcp", "mcp_types", "sklearn"})), file=sys.stderr)
sys.exit(code)
"""


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


async def test_a_cached_search_imports_neither_the_mcp_sdk_nor_scikit_learn(tmp_path: Path) -> None:
    registry, flag = blocking_registry(tmp_path)
    search = ["search", QUERY, "--registry", str(registry), "--start-timeout", "3600", "--model", "none", "--json"]
    # Its own cache folder: the fit kept there is the one the refreshing run made.
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    with anyio.fail_after(180):
        refreshed = await anyio.run_process(toolscout(*search, "--refresh"), env=env)
        flag.touch()
        cached = await anyio.run_process([sys.executable, "-c", _REPORT_IMPORTS, *search], env=env)
    assert json.loads(cached.stdout) == json.loads(refreshed.stdout)
    assert cached.stderr.decode().splitlines()[-1] == "imported: []"


async def test_a_catalog_seen_with_every_upstream_down_is_not_answered_from(tmp_path: Path) -> None:
    # The upstream's script is missing at first (as uvx is before uv is installed), so the first
    # look sees no tool; once it is there, a search without --refresh must look again.
    script = tmp_path / "weather_server.py"
    registry = write_registry(tmp_path / "servers.json", {"weather": {"command": sys.executable, "args": [str(script)]}})
    search = ["search", "weather forecast for Oslo", "--registry", str(registry), "--model", "none", "--json"]
    with anyio.fail_after(180):
        first = await anyio.run_process(toolscout(*search), check=False)
        shutil.copy(python_server("weather_server.py")["args"][0], script)
        second = await anyio.run_process(toolscout(*search))
    assert json.loads(first.stdout)["tools"] == []
    assert "had no tools; connecting" in second.stderr.decode()
    assert json.loads(second.stdout)["tools"][0]["server"] == "weather"
