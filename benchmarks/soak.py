"""Soak: many clients calling through `toolscout serve --transport http` while an upstream is killed.

    .venv/bin/python benchmarks/soak.py [--clients 8] [--calls 150] [--kill-every 2] [--update-docs FILE]

Two copies of a one-tool echo upstream (`soak_upstream.py`, stdio) sit behind the gateway,
`steady` and `victim`. Everything runs on 127.0.0.1.

1. overhead: the same echo call made three ways, interleaved call by call so that every way
   sees the same machine load: straight to the upstream over stdio (what a host does without
   toolscout), straight to the upstream served over streamable HTTP (the transport the gateway's
   clients use here), and as execute_tool through the gateway. First by one client, then by
   CLIENTS concurrent ones.
2. soak: CLIENTS sessions x CALLS calls through the gateway, every fourth on the victim, whose
   process is SIGKILLed every few seconds (the gateway restarts it).

Added latency = gateway latency - direct latency at the same percentile and concurrency; the
target (p95 <= 5 ms) is judged against the direct call over the same transport (HTTP). Errors
must all be calls on the victim; a wrong (corrupted) echo counts as an error of its own kind.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import anyio
import psutil
from docs_blocks import machine, revision, update_block
from mcp import Client, StdioServerParameters

HERE = Path(__file__).resolve().parent
UPSTREAM = HERE / "soak_upstream.py"
WAYS = ("stdio", "http", "gateway")


@dataclass
class Tally:
    latencies: list[float] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)  # server -> failed calls
    wrong: int = 0
    calls: int = 0
    # CPU time the serving process (the gateway, or the upstream served over HTTP) spent per call.
    server_cpu: float | None = None

    def record(self, server: str, ok: bool, elapsed: float) -> None:
        self.calls += 1
        if ok:
            self.latencies.append(elapsed)
        else:
            self.errors[server] = self.errors.get(server, 0) + 1


def percentile(values: list[float], q: int) -> float:
    if len(values) < 2:
        return values[0] if values else float("nan")
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f}"


def cpu_seconds(pid: int) -> float:
    times = psutil.Process(pid).cpu_times()
    return times.user + times.system


Call = Callable[[int], Awaitable[tuple[str, bool]]]


def echo_call(client: Client, tally: Tally, *, via_gateway: bool, victim_every: int = 0) -> Call:
    """A call of echo `m<i>`; returns (server, whether the right text came back)."""

    async def call(i: int) -> tuple[str, bool]:
        server = "victim" if victim_every and i % victim_every == 0 else "steady"
        if via_gateway:
            result = await client.call_tool("execute_tool", {"name": f"{server}__echo", "arguments": {"text": f"m{i}"}})
        else:
            result = await client.call_tool("echo", {"text": f"m{i}"})
        if result.is_error:
            return server, False
        if result.content[0].text != f"m{i}":
            tally.wrong += 1
            return server, False
        return server, True

    return call


async def served_url(process: Any, pattern: str) -> str:
    seen = ""
    async for chunk in process.stderr:
        seen += chunk.decode(errors="replace")
        match = re.search(pattern, seen)
        if match:
            return match.group(1)
    raise RuntimeError(f"process exited without serving:\n{seen}")


async def drain_to(stream: Any, path: Path) -> None:
    with path.open("ab") as out:
        async for chunk in stream:
            out.write(chunk)


@asynccontextmanager
async def served(command: list[str], pattern: str, log: Path, env: dict[str, str] | None = None) -> AsyncIterator[tuple[Any, str]]:
    """A server process, its URL once it logs one, its stderr drained to `log` (a full pipe would stall it)."""
    async with await anyio.open_process(command, env=env) as process:
        try:
            url = await served_url(process, pattern)
            async with anyio.create_task_group() as tg:
                tg.start_soon(drain_to, process.stderr, log)
                yield process, url
                tg.cancel_scope.cancel()
        finally:
            process.terminate()
            with anyio.move_on_after(20):
                await process.wait()
            if process.returncode is None:
                process.kill()


async def overhead(clients: dict[str, Client], pids: dict[str, int], concurrency: int, calls: int) -> dict[str, Tally]:
    """Each of `concurrency` tasks makes `calls` rounds of one call each way, in a rotating order."""
    tallies = {way: Tally() for way in WAYS}
    calls_of = {way: echo_call(clients[way], tallies[way], via_gateway=way == "gateway") for way in WAYS}
    cpu_before = {way: cpu_seconds(pid) for way, pid in pids.items()}

    async def task(t: int) -> None:
        for k in range(calls):
            i = t * calls + k
            for j in range(len(WAYS)):
                way = WAYS[(i + j) % len(WAYS)]
                start = time.perf_counter()
                server, ok = await calls_of[way](i)
                tallies[way].record(server, ok, time.perf_counter() - start)

    async with anyio.create_task_group() as tg:
        for t in range(concurrency):
            tg.start_soon(task, t)
    for way, pid in pids.items():
        tallies[way].server_cpu = (cpu_seconds(pid) - cpu_before[way]) / tallies[way].calls
    return tallies


async def killer(gateway_pid: int, every: float, kills: list[float]) -> None:
    while True:
        await anyio.sleep(every)
        for child in psutil.Process(gateway_pid).children():
            if "victim" in child.cmdline():
                os.kill(child.pid, signal.SIGKILL)
                kills.append(time.perf_counter())


async def soak(url: str, gateway_pid: int, args: argparse.Namespace) -> tuple[Tally, float, int]:
    tally, kills = Tally(), []

    async def run(c: int) -> None:
        async with Client(url, mode="legacy") as session:
            call = echo_call(session, tally, via_gateway=True, victim_every=4)
            for k in range(args.calls):
                start = time.perf_counter()
                server, ok = await call(c * args.calls + k)
                tally.record(server, ok, time.perf_counter() - start)

    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        tg.start_soon(killer, gateway_pid, args.kill_every, kills)
        async with anyio.create_task_group() as clients:
            for c in range(args.clients):
                clients.start_soon(run, c)
        tg.cancel_scope.cancel()
    return tally, time.perf_counter() - started, len(kills)


async def measure(args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    entry = {"command": sys.executable, "args": [str(UPSTREAM)]}
    registry = folder / "servers.json"
    registry.write_text(json.dumps({"mcpServers": {"steady": entry, "victim": {**entry, "args": [str(UPSTREAM), "victim"]}}}))
    env = {**os.environ, "TOOLSCOUT_PINS": str(folder / "pins.json"), "TOOLSCOUT_DATA_DIR": str(folder)}
    gateway_command = [sys.executable, "-m", "toolscout.cli", "serve", "--transport", "http", "--port", "0",
                       "--registry", str(registry), "--model", "none", "--ready-wait", "30"]
    async with AsyncExitStack() as stack:
        upstream, upstream_url = await stack.enter_async_context(
            served([sys.executable, str(UPSTREAM), "--http"], r"serving at (http://\S+/mcp)", folder / "upstream.log")
        )
        gateway, gateway_url = await stack.enter_async_context(
            served(gateway_command, r"streamable HTTP at (http://\S+/mcp)", folder / "serve.log", env)
        )
        clients = {
            "stdio": Client(StdioServerParameters(command=sys.executable, args=[str(UPSTREAM)]), mode="legacy"),
            "http": Client(upstream_url, mode="legacy"),
            "gateway": Client(gateway_url, mode="legacy"),
        }
        for client in clients.values():
            await stack.enter_async_context(client)
        pids = {"http": upstream.pid, "gateway": gateway.pid}
        await overhead(clients, pids, 1, 30)  # warm-up
        sequential = await overhead(clients, pids, 1, args.calls)
        concurrent = await overhead(clients, pids, args.clients, args.calls)
        soaked, wall, kills = await soak(gateway_url, gateway.pid, args)
    log_lines = len((folder / "serve.log").read_text(errors="replace").splitlines())
    return {"sequential": sequential, "concurrent": concurrent, "soak": soaked, "wall": wall, "kills": kills,
            "log_lines": log_lines}


def _row(name: str, tally: Tally, clients: int, *baselines: Tally) -> str:
    p50, p95 = percentile(tally.latencies, 50), percentile(tally.latencies, 95)
    added = [ms(p - percentile(base.latencies, q)) for base in baselines for p, q in ((p50, 50), (p95, 95))]
    added += [""] * (4 - len(added))
    rate = clients / statistics.mean(tally.latencies)
    errors = sum(tally.errors.values()) + tally.wrong
    cpu = ms(tally.server_cpu) if tally.server_cpu is not None else ""
    return f"| {name} | {tally.calls} | {rate:,.0f} | {ms(p50)} | {ms(p95)} | {' | '.join(added)} | {cpu} | {errors} |"


def table(results: dict[str, Any], args: argparse.Namespace) -> str:
    rows = [
        "| calls | n | calls/s | p50 ms | p95 ms | added p50 vs HTTP | added p95 vs HTTP "
        "| added p50 vs stdio | added p95 vs stdio | server CPU ms/call | errors |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for key, label, clients in (("sequential", "1 client", 1), ("concurrent", f"{args.clients} concurrent", args.clients)):
        tallies = results[key]
        rows.append(_row(f"direct over stdio, {label}", tallies["stdio"], clients))
        rows.append(_row(f"direct over HTTP, {label}", tallies["http"], clients))
        rows.append(_row(f"**execute_tool through toolscout (HTTP), {label}**", tallies["gateway"], clients,
                         tallies["http"], tallies["stdio"]))
    soaked = results["soak"]
    errors = ", ".join(f"{server}: {n}" for server, n in sorted(soaked.errors.items())) or "none"
    rows.append(
        f"| soak: {args.clients} clients x {args.calls} calls, 1 in 4 on the victim, victim killed "
        f"{results['kills']}x | {soaked.calls} | {soaked.calls / results['wall']:,.0f} | "
        f"{ms(percentile(soaked.latencies, 50))} | {ms(percentile(soaked.latencies, 95))} | | | | | | "
        f"{errors}; wrong results: {soaked.wrong} |"
    )
    rows.append(f"\nThe gateway wrote {results['log_lines']} log lines at the default level during the run.")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--calls", type=int, default=150, help="calls per client and way (default 150)")
    parser.add_argument("--kill-every", type=float, default=2.0, metavar="SECONDS")
    parser.add_argument("--update-docs", type=Path, help="markdown file whose soak block to rewrite")
    args = parser.parse_args(argv)
    load = os.getloadavg()[0]

    async def run() -> dict[str, Any]:
        with anyio.fail_after(900), tempfile.TemporaryDirectory() as folder:
            return await measure(args, Path(folder))

    results = anyio.run(run)
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    block = f"{table(results, args)}\n\n_{stamp}, {revision()}, {machine()}, load average {load:.2f} at start._"
    print(block)
    if args.update_docs:
        update_block(args.update_docs, "soak", block)
    unexpected = {s: n for s, n in results["soak"].errors.items() if s != "victim"}
    return 1 if unexpected or results["soak"].wrong else 0


if __name__ == "__main__":
    sys.exit(main())
