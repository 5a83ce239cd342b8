"""How long an approval takes to reach every replica sharing one Postgres state store.

Two `toolscout serve --transport http --state postgresql://...` processes serve one scripted
upstream whose tools all changed since they were pinned, so both quarantine them. Each round,
`toolscout approve` (in this process, against the store) approves one tool; the time from its
return until each replica runs the tool is measured by calling it every 50 ms through a real MCP
client. Replicas notice by polling the store's revision of the pins (PinScreen.follow_approvals,
every second), so the expected delay is up to about one second plus a re-index.

    PYTHONPATH=src python benchmarks/replica_approval.py --rounds 5

Postgres is a fresh cluster of Debian's postgresql package, started as the tests start it
(tests/support/postgres.py). Prints one table.
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

import anyio
import anyio.to_thread

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from mcp import Client  # noqa: E402
from support.postgres import PostgresServer  # noqa: E402
from support.serve_process import serve_command, served_over_http  # noqa: E402

from toolscout.catalog import ToolRecord  # noqa: E402
from toolscout.cli import main  # noqa: E402
from toolscout.security.pinning import PinStore  # noqa: E402

SCHEMA = {"type": "object", "properties": {"to": {"type": "string"}}}


async def _runs(url: str, tool: str) -> bool:
    async with Client(url, mode="legacy") as client:
        result = await client.call_tool("execute_tool", {"name": f"office__{tool}", "arguments": {"to": "a"}})
    return not result.is_error


async def _delay(url: str, tool: str, since: float) -> float:
    while not await _runs(url, tool):
        await anyio.sleep(0.05)
    return time.perf_counter() - since


async def measure(rounds: int) -> list[tuple[float, float]]:
    tools = [f"send_report_{i}" for i in range(rounds)]
    with tempfile.TemporaryDirectory() as folder, PostgresServer() as postgres:
        spec = Path(folder) / "office.spec.json"
        spec.write_text(json.dumps({"instructions": "Office.", "tools": [
            {"name": name, "description": f"Send status report number {i} by email.", "inputSchema": SCHEMA}
            for i, name in enumerate(tools)
        ]}))
        registry = Path(folder) / "servers.json"
        script = ROOT / "tests" / "upstreams" / "scripted_server.py"
        registry.write_text(json.dumps({"mcpServers": {"office": {"command": sys.executable, "args": [str(script), str(spec), "office"]}}}))
        PinStore(postgres.url).check([
            ToolRecord(id="", name=name, server="office", description="An older description.", input_schema=SCHEMA)
            for name in tools
        ])
        command = serve_command(registry, "--transport", "http", "--port", "0", "--state", postgres.url)
        env = {**os.environ}
        delays = []
        logs: tuple[list[str], list[str]] = ([], [])
        async with served_over_http(command, env=env, log=logs[0]) as first, \
                served_over_http(command, env=env, log=logs[1]) as second:
            for tool in tools:
                assert not await _runs(first, tool) and not await _runs(second, tool)
                approve = ["-q", "approve", "--state", postgres.url, "--server", "office", tool, "--yes"]
                code = await anyio.to_thread.run_sync(main, approve)
                assert code == 0
                since = time.perf_counter()
                async with anyio.create_task_group() as tg:
                    found: dict[str, float] = {}

                    async def wait(name: str, url: str) -> None:
                        found[name] = await _delay(url, tool, since)

                    tg.start_soon(wait, "first", first)
                    tg.start_soon(wait, "second", second)
                delays.append((found["first"], found["second"]))
                if max(found.values()) > 5:
                    print(f"slow round at {time.strftime('%H:%M:%S')}:", file=sys.stderr)
                    for log in logs:
                        print("".join(log)[-3000:], file=sys.stderr)
    return delays


def main_() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    delays = anyio.run(measure, args.rounds)
    print("rounds (first, second):", ", ".join(f"({a:.2f}, {b:.2f})" for a, b in delays), file=sys.stderr)
    both = [max(pair) for pair in delays]
    print("| replicas | rounds | approval -> released on both: median | max | per replica median |")
    print("| --- | --- | --- | --- | --- |")
    per_replica = statistics.median([d for pair in delays for d in pair])
    print(f"| 2 | {len(delays)} | {statistics.median(both):.2f} s | {max(both):.2f} s | {per_replica:.2f} s |")


if __name__ == "__main__":
    main_()
