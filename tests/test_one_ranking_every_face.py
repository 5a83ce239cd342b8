"""`toolscout search` (from the cached catalog and with --refresh) and `search_tools` over stdio and
HTTP rank the same tools with the same scores for the same request: the bundled registry's tools,
served by local upstreams, searched with the shipped model and ranker."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters
from support.registries import bundled_lookalikes, write_registry
from support.serve_process import served_over_http

pytestmark = pytest.mark.anyio

REQUESTS = (
    # The cached catalog came back with its schemas' keys sorted, so the parameters the dense
    # document names came in another order: the CLI said import_csv first, search_tools export_csv.
    "bringing a CSV file into a workbook",
    # Several sentences: each is searched too, and the best one's share joins the whole's score.
    "I have a sales.csv export. Bring it into a new workbook and make the header row bold.",
    "Commit my staged changes with a message. Then show me the log of the last commits.",
    # Not in English: the multilingual vote joins where its extra is installed (as scripts/setup.sh does).
    "Zeig mir die letzten Commits im Git-Log",
)
REFRESHED = (REQUESTS[0],)


def toolscout(*args: str) -> list[str]:
    return [sys.executable, "-m", "toolscout.cli", *args]


def ranking(answer: dict[str, Any]) -> list[tuple[str, float]]:
    assert answer["notice"] is None, answer["notice"]  # every signal ready, nothing withheld
    return [(tool["id"], tool["score"]) for tool in answer["tools"]]


async def cli_search(request: str, registry: Path, env: dict[str, str], *extra: str) -> list[tuple[str, float]]:
    done = await anyio.run_process(toolscout("search", request, "--registry", str(registry), "--json", *extra), env=env)
    return ranking(json.loads(done.stdout))


async def mcp_searches(client: Client) -> dict[str, list[tuple[str, float]]]:
    found = {}
    for request in REQUESTS:
        while True:
            answer = (await client.call_tool("search_tools", {"query": request, "limit": 5})).structured_content
            assert answer is not None
            # The first answers may come while the catalog is still being embedded.
            if answer["notice"] is None:
                break
            await anyio.sleep(0.2)
        found[request] = ranking(answer)
    return found


async def test_the_command_line_and_search_tools_over_stdio_and_http_rank_alike(tmp_path: Path) -> None:
    registry = write_registry(tmp_path / "servers.json", bundled_lookalikes(tmp_path))
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "TOOLSCOUT_MULTILINGUAL": "auto"}
    serve = toolscout("serve", "--registry", str(registry))
    with anyio.fail_after(600):
        # The first refreshed search keeps the catalog it saw; the others answer from it.
        refreshed = {request: await cli_search(request, registry, env, "--refresh") for request in REFRESHED}
        cached = {request: await cli_search(request, registry, env) for request in REQUESTS}
        async with Client(StdioServerParameters(command=serve[0], args=serve[1:], env=env), mode="legacy") as client:
            over_stdio = await mcp_searches(client)
        async with served_over_http([*serve, "--transport", "http", "--port", "0"], env=env) as url:
            async with Client(url, mode="legacy") as client:
                over_http = await mcp_searches(client)
    assert cached == over_stdio == over_http
    assert refreshed == {request: cached[request] for request in REFRESHED}
    assert all(len(found) == 5 for found in cached.values())
