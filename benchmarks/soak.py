"""Soak: many clients calling through `toolscout serve --transport http` while an upstream is killed.

    .venv/bin/python benchmarks/soak.py [--clients 8] [--calls 150] [--kill-every 2] [--update-docs FILE]

Two copies of a one-tool echo upstream (`soak_upstream.py`, stdio) sit behind the gateway,
`steady` and `victim`; the victim's process is SIGKILLed every few seconds and the gateway
restarts it. Three phases, all on 127.0.0.1:

1. direct: the same upstream reached directly, over stdio (what a host would do without
   toolscout) and over streamable HTTP (the transport the gateway's clients use here):
   sequential calls, then CLIENTS concurrent calls on one session;
2. gateway: the same calls as execute_tool through the gateway's HTTP endpoint;
3. soak: CLIENTS sessions x CALLS calls, every fourth on the victim, while it is being killed.

Added latency = gateway latency - direct latency, at the same percentile and concurrency; the
target (p95 <= 5 ms) is judged against the direct call over the same transport (HTTP). Errors
must all be calls on the victim; a wrong (corrupted) echo counts as an error of its own kind.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
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


@dataclass
class Tally:
    latencies: list[float] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)  # server -> failed calls
    wrong: int = 0
    calls: int = 0
    # CPU time the serving process (gateway, or the upstream served over HTTP) spent per call.
    server_cpu: float | None = None


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else values[0]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f}"


def cpu_seconds(pid: int | None) -> float:
    if pid is None:
        return 0.0
    times = psutil.Process(pid).cpu_times()
    return times.user + times.system


async def timed_calls(
    call: Callable[[int], Awaitable[tuple[str, bool]]], clients: int, calls: int, tally: Tally, server_pid: int | None = None
) -> float:
    """`clients` tasks each making `calls` calls; returns the wall time. `call(i)` -> (server, ok)."""
    cpu_before = cpu_seconds(server_pid)

    async def client_task(c: int) -> None:
        for k in range(calls):
            i = c * calls + k
            start = time.perf_counter()
            server, ok = await call(i)
            elapsed = time.perf_counter() - start
            tally.calls += 1
            if ok:
                tally.latencies.append(elapsed)
            else:
                tally.errors[server] = tally.errors.get(server, 0) + 1

    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for c in range(clients):
            tg.start_soon(client_task, c)
    if server_pid is not None:
        tally.server_cpu = (cpu_seconds(server_pid) - cpu_before) / max(tally.calls, 1)
    return time.perf_counter() - started


async def direct_phase(target: Any, clients: int, calls: int, server_pid: int | None = None) -> tuple[Tally, Tally]:
    """Sequential, then `clients` concurrent, echo calls straight to the upstream."""
    async with Client(target, mode="legacy") as client:

        async def call(i: int) -> tuple[str, bool]:
            result = await client.call_tool("echo", {"text": f"m{i}"})
            return "direct", not result.is_error and result.content[0].text == f"m{i}"

        await timed_calls(call, 1, 50, Tally())  # warm-up
        sequential, concurrent = Tally(), Tally()
        await timed_calls(call, 1, calls, sequential, server_pid)
        await timed_calls(call, clients, calls, concurrent, server_pid)
    return sequential, concurrent


async def direct_phases(clients: int, calls: int) -> dict[str, tuple[Tally, Tally]]:
    stdio = await direct_phase(StdioServerParameters(command=sys.executable, args=[str(UPSTREAM)]), clients, calls)
    async with await anyio.open_process([sys.executable, str(UPSTREAM), "--http"]) as process:
        try:
            url = await served_url(process, r"serving at (http://\S+/mcp)")
            http = await direct_phase(url, clients, calls, process.pid)
        finally:
            process.terminate()
            await process.wait()
    return {"stdio": stdio, "http": http}


def gateway_call(client: Client, tally: Tally, victim_every: int = 0) -> Callable[[int], Awaitable[tuple[str, bool]]]:
    async def call(i: int) -> tuple[str, bool]:
        server = "victim" if victim_every and i % victim_every == 0 else "steady"
        result = await client.call_tool("execute_tool", {"name": f"{server}__echo", "arguments": {"text": f"m{i}"}})
        if result.is_error:
            return server, False
        if result.content[0].text != f"m{i}":
            tally.wrong += 1
            return server, False
        return server, True

    return call


async def killer(gateway_pid: int, every: float, kills: list[float]) -> None:
    while True:
        await anyio.sleep(every)
        for child in psutil.Process(gateway_pid).children():
            if "victim" in child.cmdline():
                os.kill(child.pid, signal.SIGKILL)
                kills.append(time.perf_counter())


async def gateway_phases(args: argparse.Namespace, registry: Path) -> dict[str, Any]:
    env = {**os.environ, "TOOLSCOUT_PINS": str(registry.parent / "pins.json"), "TOOLSCOUT_DATA_DIR": str(registry.parent)}
    command = [sys.executable, "-m", "toolscout.cli", "serve", "--transport", "http", "--port", "0",
               "--registry", str(registry), "--model", "none", "--ready-wait", "30"]
    async with await anyio.open_process(command, env=env) as process:
        try:
            url = await served_url(process)
            log = registry.parent / "serve.log"
            async with anyio.create_task_group() as drain:
                # The gateway's log must keep flowing, or a full pipe would stall it mid-benchmark.
                drain.start_soon(drain_to, process.stderr, log)
                result = await measure_gateway(args, process, url)
                drain.cancel_scope.cancel()
            lines = log.read_text(errors="replace").splitlines()
            result["log_lines"] = len(lines)
            return result
        finally:
            process.terminate()
            with anyio.move_on_after(20):
                await process.wait()
            if process.returncode is None:
                process.kill()


async def drain_to(stream: Any, path: Path) -> None:
    with path.open("ab") as out:
        async for chunk in stream:
            out.write(chunk)


async def measure_gateway(args: argparse.Namespace, process: Any, url: str) -> dict[str, Any]:
    async with Client(url, mode="legacy") as client:
        await timed_calls(gateway_call(client, Tally()), 1, 50, Tally())  # warm-up
        sequential, concurrent = Tally(), Tally()
        await timed_calls(gateway_call(client, sequential), 1, args.calls, sequential, process.pid)
        await timed_calls(gateway_call(client, concurrent), args.clients, args.calls, concurrent, process.pid)
    soak, kills = Tally(), []
    sessions = [Client(url, mode="legacy") for _ in range(args.clients)]
    async with anyio.create_task_group() as tg:
        tg.start_soon(killer, process.pid, args.kill_every, kills)
        wall = await soak_clients(sessions, args.calls, soak)
        tg.cancel_scope.cancel()
    return {"sequential": sequential, "concurrent": concurrent, "soak": soak, "wall": wall, "kills": len(kills)}


async def soak_clients(sessions: list[Client], calls: int, tally: Tally) -> float:
    started = time.perf_counter()

    async def run(session: Client, c: int) -> None:
        async with session:
            call = gateway_call(session, tally, victim_every=4)
            for k in range(calls):
                i = c * calls + k
                start = time.perf_counter()
                server, ok = await call(i)
                tally.calls += 1
                if ok:
                    tally.latencies.append(time.perf_counter() - start)
                else:
                    tally.errors[server] = tally.errors.get(server, 0) + 1

    async with anyio.create_task_group() as tg:
        for c, session in enumerate(sessions):
            tg.start_soon(run, session, c)
    return time.perf_counter() - started


async def served_url(process: Any, pattern: str = r"streamable HTTP at (http://\S+/mcp)") -> str:
    seen = ""
    async for chunk in process.stderr:
        seen += chunk.decode(errors="replace")
        match = re.search(pattern, seen)
        if match:
            return match.group(1)
    raise RuntimeError(f"toolscout serve exited without serving:\n{seen}")


def _row(name: str, tally: Tally, clients: int, *baselines: Tally) -> str:
    p50, p95 = percentile(tally.latencies, 50), percentile(tally.latencies, 95)
    added = [ms(p - percentile(base.latencies, q)) for base in baselines for p, q in ((p50, 50), (p95, 95))]
    added += [""] * (4 - len(added))
    rate = clients / statistics.mean(tally.latencies)
    errors = sum(tally.errors.values()) + tally.wrong
    cpu = ms(tally.server_cpu) if tally.server_cpu is not None else ""
    return f"| {name} | {tally.calls} | {rate:,.0f} | {ms(p50)} | {ms(p95)} | {' | '.join(added)} | {cpu} | {errors} |"


def table(direct: dict[str, tuple[Tally, Tally]], gateway: dict[str, Any], args: argparse.Namespace) -> str:
    rows = [
        "| calls | n | calls/s | p50 ms | p95 ms | added p50 vs HTTP | added p95 vs HTTP "
        "| added p50 vs stdio | added p95 vs stdio | server CPU ms/call | errors |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for index, label, clients in ((0, "1 client", 1), (1, f"{args.clients} concurrent", args.clients)):
        http, stdio = direct["http"][index], direct["stdio"][index]
        rows.append(_row(f"direct over stdio, {label}", stdio, clients))
        rows.append(_row(f"direct over HTTP, {label}", http, clients))
        key = "sequential" if index == 0 else "concurrent"
        rows.append(_row(f"**execute_tool through toolscout (HTTP), {label}**", gateway[key], clients, http, stdio))
    soak = gateway["soak"]
    errors = ", ".join(f"{server}: {n}" for server, n in sorted(soak.errors.items())) or "none"
    rows.append(
        f"| soak: {args.clients} clients x {args.calls} calls, 1 in 4 on the victim, victim killed "
        f"{gateway['kills']}x | {soak.calls} | {soak.calls / gateway['wall']:,.0f} | {ms(percentile(soak.latencies, 50))} "
        f"| {ms(percentile(soak.latencies, 95))} | | | | | | {errors}; wrong results: {soak.wrong} |"
    )
    rows.append(f"\nThe gateway wrote {gateway['log_lines']} log lines at the default level during the run.")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--calls", type=int, default=150, help="calls per client (default 150)")
    parser.add_argument("--kill-every", type=float, default=2.0, metavar="SECONDS")
    parser.add_argument("--update-docs", type=Path, help="markdown file whose soak block to rewrite")
    args = parser.parse_args(argv)
    load = os.getloadavg()[0]

    async def run() -> tuple[dict[str, tuple[Tally, Tally]], dict[str, Any]]:
        with anyio.fail_after(600):
            direct = await direct_phases(args.clients, args.calls)
            with tempfile.TemporaryDirectory() as folder:
                registry = Path(folder) / "servers.json"
                entry = {"command": sys.executable, "args": [str(UPSTREAM)]}
                registry.write_text(
                    '{"mcpServers": {"steady": %s, "victim": %s}}'
                    % (_json(entry), _json({**entry, "args": [*entry["args"], "victim"]}))
                )
                return direct, await gateway_phases(args, registry)

    direct, gateway = anyio.run(run)
    text = table(direct, gateway, args)
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    block = f"{text}\n\n_{stamp}, {revision()}, {machine()}, load average {load:.2f} at start._"
    print(block)
    if args.update_docs:
        update_block(args.update_docs, "soak", block)
    unexpected = {s: n for s, n in gateway["soak"].errors.items() if s != "victim"}
    return 1 if unexpected or gateway["soak"].wrong else 0


def _json(value: object) -> str:
    import json

    return json.dumps(value)


if __name__ == "__main__":
    sys.exit(main())
