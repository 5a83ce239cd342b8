"""How fast the dashboard's pages answer at the bundled registry's size.

    .venv/bin/python benchmarks/dashboard_latency.py                 # 69 tools, 6 servers
    .venv/bin/python benchmarks/dashboard_latency.py --copies 10     # 690 tools, 60 servers

Serves the tools of the bundled registry (benchmarks/data/bundled/tools.jsonl, as its servers list
them) from local scripted servers (tests/upstreams/scripted_server.py: no download, no network),
runs `toolscout serve --transport http` over them with the default search (bundled embedding
model), waits until it is ready and every tool is embedded, makes a few agent searches and calls
so that the activity page has something to draw, then asks each page `--runs` times with an
operator's Bearer token and prints the time to a full answer (median, 95th percentile, max).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import httpx2 as httpx

ROOT = Path(__file__).resolve().parents[1]
TOOLS = ROOT / "benchmarks" / "data" / "bundled" / "tools.jsonl"
SCRIPTED = ROOT / "tests" / "upstreams" / "scripted_server.py"
TOKEN = "dashboard-benchmark-token-8c1d"
PAGES = [
    ("servers", "/ui"),
    ("tools", "/ui/tools"),
    ("tools, filtered", "/ui/tools?q=sheet"),
    ("search playground", "/ui/search?q=add+a+row+to+a+spreadsheet&k=10"),
    ("learning", "/ui/learning"),
    ("activity", "/ui/activity"),
]
AGENT_QUERIES = ["what changed in my repository", "convert a time zone", "run an sql query", "read a pdf as markdown"]


def write_registry(folder: Path, copies: int) -> tuple[Path, int]:
    by_server: dict[str, list[dict]] = defaultdict(list)
    for line in TOOLS.read_text(encoding="utf-8").splitlines():
        tool = json.loads(line)
        by_server[tool["server"]].append(
            {"name": tool["name"], "description": tool["description"], "inputSchema": tool["input_schema"]}
        )
    servers = {}
    for copy in range(copies):
        for server, tools in by_server.items():
            name = server if copies == 1 else f"{server}-{copy}"
            spec = folder / f"{name}.json"
            spec.write_text(json.dumps({"tools": tools}), encoding="utf-8")
            servers[name] = {"command": sys.executable, "args": [str(SCRIPTED), str(spec), name]}
    registry = folder / "servers.json"
    registry.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    return registry, sum(len(tools) for tools in by_server.values()) * copies


def wait_served(log: Path, process: subprocess.Popen[bytes]) -> str:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        found = re.search(r"streamable HTTP at (http://\S+)/mcp", log.read_text(errors="replace"))
        if found:
            return found.group(1)
        if process.poll() is not None:
            raise SystemExit(f"toolscout serve exited:\n{log.read_text()}")
        time.sleep(0.2)
    raise SystemExit("toolscout serve did not start in 300 s")


def wait_ready(http: httpx.Client, base: str) -> dict:
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        ready = http.get(f"{base}/readyz")
        if ready.status_code == 200 and ready.json()["embedding_backlog"] == 0:
            return ready.json()
        time.sleep(0.5)
    raise SystemExit("not ready in 600 s")


def agent_traffic(base: str) -> None:
    """A few searches and calls over MCP, counted by /metrics (and the activity page)."""
    import anyio
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async def talk() -> None:
        async with create_mcp_http_client(headers={"Authorization": f"Bearer {TOKEN}"}) as client_http:
            async with Client(streamable_http_client(f"{base}/mcp", http_client=client_http), mode="legacy") as client:
                for query in AGENT_QUERIES:
                    found = await client.call_tool("search_tools", {"query": query})
                    best = found.structured_content["tools"][0]["id"]
                    await client.call_tool("execute_tool", {"name": best, "arguments": {}})

    anyio.run(talk)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=50, help="requests per page (default 50)")
    parser.add_argument("--copies", type=int, default=1, help="serve the bundled catalog this many times over")
    parser.add_argument("--model", default=None, help="serve's --model (default: the bundled embedding model)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        registry, tools = write_registry(folder, args.copies)
        command = [sys.executable, "-m", "toolscout.cli", "serve", "--registry", str(registry), "--transport", "http",
                   "--port", "0", "--auth-token", TOKEN, "--state", str(folder / "state.sqlite3")]
        if args.model:
            command += ["--model", args.model]
        log = folder / "serve.log"
        with log.open("wb") as sink:
            process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=sink, env=os.environ)
        try:
            base = wait_served(log, process)
            with httpx.Client(headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30) as http:
                ready = wait_ready(http, base)
                agent_traffic(base)
                print(f"{tools} tools from {ready['upstreams']} servers; {args.runs} requests per page; "
                      f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}")
                print(f"{'page':<20} {'median ms':>10} {'p95 ms':>8} {'max ms':>8} {'KiB':>6}")
                for name, path in PAGES:
                    times, size = [], 0
                    for _ in range(args.runs):
                        started = time.perf_counter()
                        answer = http.get(base + path)
                        times.append((time.perf_counter() - started) * 1000)
                        if answer.status_code != 200:
                            raise SystemExit(f"{path}: {answer.status_code} {answer.text[:300]}")
                        size = len(answer.content)
                    times.sort()
                    p95 = times[min(len(times) - 1, round(0.95 * (len(times) - 1)))]
                    print(f"{name:<20} {statistics.median(times):>10.1f} {p95:>8.1f} {times[-1]:>8.1f} {size / 1024:>6.1f}")
        finally:
            process.terminate()
            try:
                process.wait(20)
            except subprocess.TimeoutExpired:
                process.kill()


if __name__ == "__main__":
    main()
