"""Code mode against execute_tool on one multi-step workflow: tokens through the agent's context,
wall time, and the sandbox's start-up and per-call overhead.

    python benchmarks/code_mode.py --runs 5 [--rows 200]

The workflow: read the orders table from a SQLite server, keep the open orders of the north region
over 1,000, write a summary note and a follow-up note naming the largest customers. Done once as
an agent does it with execute_tool (every row passes through its context, and it writes each
note's text itself) and once as one run_code script (only the script and its short answer do).
Both start with the same two search_tools calls, which find the tools and their schemas.

The upstreams are local (tests/upstreams/sqlite_server.py, shaped like the bundled registry's
mcp-server-sqlite, and notes_server.py), started as stdio subprocesses by a real gateway; the
agent is an in-memory MCP client session. Tokens are counted with cl100k_base on what the agent
writes (each call's name and arguments) and what it reads (each result's text). Times leave out
the model: each execute_tool call would also cost the agent a model turn, run_code one in all.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import Client

from docs_blocks import machine

from toolscout.gateway import Gateway
from toolscout.registry.loading import load_registries
from toolscout.search import SearchSettings, ToolSearch
from toolscout.serving.options import CodeModeLimits
from toolscout.serving.packing import count_tokens
from toolscout.serving.sandbox import run_script
from toolscout.serving.server import build_server

UPSTREAMS = Path(__file__).resolve().parents[1] / "tests" / "upstreams"
SEARCHES = ("run a SQL query on the orders database", "create a text note")
QUERY = "SELECT * FROM orders"
SCRIPT = """
rows = call_tool("sqlite__read_query", {"query": "SELECT * FROM orders"})["result"]
kept = [r for r in rows if r["region"] == "north" and r["status"] == "open" and r["amount"] > 1000]
total = sum(r["amount"] for r in kept)
call_tool("notes__create_note", {"title": "Open north orders over 1000",
          "body": f"{len(kept)} orders, {total:.2f} in all: " + ", ".join(str(r["id"]) for r in kept)})
by_customer = {}
for r in kept:
    by_customer[r["customer"]] = by_customer.get(r["customer"], 0) + r["amount"]
top = sorted(by_customer, key=lambda c: -by_customer[c])[:3]
call_tool("notes__create_note", {"title": "Follow up", "body": "Call " + ", ".join(top)})
f"{len(kept)} orders, {total:.2f}; follow up with {', '.join(top)}"
"""


class Context:
    """The tokens the agent writes and reads, as its context would hold them."""

    def __init__(self) -> None:
        self.tokens = 0

    async def call(self, client: Client, name: str, arguments: dict[str, Any]) -> types.CallToolResult:
        self.tokens += count_tokens(name + json.dumps(arguments))
        result = await client.call_tool(name, arguments)
        if result.is_error:
            raise SystemExit(f"{name} failed: {_text(result)}")
        self.tokens += count_tokens(_text(result))
        return result


def _text(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


async def by_execute_tool(client: Client, context: Context) -> str:
    """The agent's own steps: read every row, filter and sum them itself, write both notes."""
    read = await context.call(client, "execute_tool", {"name": "sqlite__read_query", "arguments": {"query": QUERY}})
    rows = read.structured_content["result"]
    kept = [r for r in rows if r["region"] == "north" and r["status"] == "open" and r["amount"] > 1000]
    total = sum(r["amount"] for r in kept)
    body = f"{len(kept)} orders, {total:.2f} in all: " + ", ".join(str(r["id"]) for r in kept)
    await context.call(client, "execute_tool", {"name": "notes__create_note",
                                                "arguments": {"title": "Open north orders over 1000", "body": body}})
    by_customer: dict[str, float] = {}
    for r in kept:
        by_customer[r["customer"]] = by_customer.get(r["customer"], 0) + r["amount"]
    top = sorted(by_customer, key=lambda c: -by_customer[c])[:3]
    await context.call(client, "execute_tool", {"name": "notes__create_note",
                                                "arguments": {"title": "Follow up", "body": "Call " + ", ".join(top)}})
    return f"{len(kept)} orders, {total:.2f}; follow up with {', '.join(top)}"


async def by_run_code(client: Client, context: Context) -> str:
    result = await context.call(client, "run_code", {"code": SCRIPT})
    return result.structured_content["value"]


async def _timed(work: Any, *args: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    value = await work(*args)
    return time.perf_counter() - started, value


async def workflow(client: Client, runs: int) -> list[list[str]]:
    rows = []
    for label, way in (("execute_tool (3 calls)", by_execute_tool), ("run_code (1 call)", by_run_code)):
        seconds, tokens, searched, answers = [], 0, 0, set()
        for _ in range(runs):
            context = Context()
            for query in SEARCHES:
                await context.call(client, "search_tools", {"query": query, "limit": 3})
            searched = context.tokens
            took, answer = await _timed(way, client, context)
            seconds.append(took)
            tokens, answers = context.tokens, answers | {answer}
        assert len(answers) == 1, answers
        rows.append([label, f"{tokens:,}", f"{searched:,}", f"{statistics.median(seconds) * 1000:.0f}", next(iter(answers))])
    return rows


async def overhead(client: Client, runs: int, calls: int = 20) -> list[list[str]]:
    """Sandbox start-up alone, and one tool call inside a script against one execute_tool call."""
    limits, slots = CodeModeLimits(), anyio.CapacityLimiter(1)
    loop = f"for _ in range({calls}):\n    call_tool('sqlite__list_tables', {{}})"
    timings: dict[str, list[float]] = {"start": [], "empty": [], "loop": [], "execute": []}
    for _ in range(runs):
        timings["start"].append((await _timed(run_script, "None", {}, limits, slots))[0])
        timings["empty"].append((await _timed(client.call_tool, "run_code", {"code": "None"}))[0])
        timings["loop"].append((await _timed(client.call_tool, "run_code", {"code": loop}))[0])
        timings["execute"].append((await _timed(client.call_tool, "execute_tool", {"name": "sqlite__list_tables"}))[0])
    ms = {key: statistics.median(values) * 1000 for key, values in timings.items()}
    return [
        ["sandbox start-up (a worker process, one empty script, no MCP)", f"{ms['start']:.1f}"],
        ["run_code of an empty script, through MCP", f"{ms['empty']:.1f}"],
        [f"one tool call inside a script ({calls} calls, less the empty script, per call)",
         f"{(ms['loop'] - ms['empty']) / calls:.2f}"],
        ["one execute_tool call of the same tool", f"{ms['execute']:.2f}"],
    ]


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


async def main(runs: int, rows: int) -> None:
    with tempfile.TemporaryDirectory() as folder:
        registry = Path(folder) / "servers.json"
        registry.write_text(json.dumps({"mcpServers": {
            "sqlite": {"command": sys.executable, "args": [str(UPSTREAMS / "sqlite_server.py"), str(rows)]},
            "notes": {"command": sys.executable, "args": [str(UPSTREAMS / "notes_server.py")]},
        }}), encoding="utf-8")
        search = ToolSearch(SearchSettings.lexical_only())
        async with Gateway(load_registries([registry]), search) as gateway:
            await gateway.ready(60)
            server = build_server(gateway, code_mode=CodeModeLimits())
            async with Client(server, mode="legacy") as client:
                flow = await workflow(client, runs)
                costs = await overhead(client, runs)
    load = ", ".join(f"{value:.2f}" for value in os.getloadavg())
    print(f"{machine()}; load average {load} (1, 5, 15 min)\n")
    print(f"Workflow over {rows} order rows, median of {runs} runs (searches not timed, same in both):\n")
    print(_table(["way", "tokens through the agent's context", "of which the two searches", "wall ms", "answer"], flow))
    print("\nOverhead, median of", runs, "runs:\n")
    print(_table(["what", "ms"], costs))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--rows", type=int, default=200)
    options = parser.parse_args()
    anyio.run(main, options.runs, options.rows)
