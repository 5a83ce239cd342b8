"""Wall time of the first minutes on the bundled registry: the CLI with a cached catalog against
`--refresh`, and `toolscout serve` from spawn to its first semantic answer with a warm cache.

    python benchmarks/cli_latency.py --toolscout .venv/bin/toolscout --runs 3

Every run is a fresh process, timed from spawn to exit (or to the answer). Pins and the cached
catalog are kept in a temporary folder; embeddings use the user's cache (as do uvx and npx, whose
package caches XDG_CACHE_HOME would also move). One untimed `toolscout search --refresh` warms
both, so "cached" and "warm" mean what every later start finds:

- search, cached catalog: `toolscout search QUERY` answers from the catalog last seen;
- search --refresh: connects to every upstream of the bundled registry first (uvx/npx servers);
- tools, cached catalog / --refresh: the same for `toolscout tools`;
- serve, first answer: spawn `toolscout serve` (stdio), initialize, call search_tools once it
  answers; the time until that first answer, and whether it was already semantic (no "still being
  built" notice); if not, the search is repeated until it is, and that time is reported too.

It speaks MCP's JSON-RPC over stdio directly, so it needs no client library.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

QUERY = "what changed in my repository since the last commit"
PENDING = "still being built"


def run_timed(command: list[str], env: dict[str, str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=300)
    return time.perf_counter() - started


def serve_first_answer(toolscout: str, env: dict[str, str]) -> tuple[float, bool, float]:
    """(seconds to the first search answer, was it semantic, seconds to the first semantic one)."""
    started = time.perf_counter()
    process = subprocess.Popen(
        [toolscout, "serve"], env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        text=True, bufsize=1,
    )
    assert process.stdin is not None and process.stdout is not None
    next_id = 0

    def request(method: str, params: dict) -> dict:
        nonlocal next_id
        next_id += 1
        process.stdin.write(json.dumps({"jsonrpc": "2.0", "id": next_id, "method": method, "params": params}) + "\n")
        process.stdin.flush()
        for line in process.stdout:
            message = json.loads(line)
            if message.get("id") == next_id:
                return message
        raise RuntimeError("toolscout serve exited")

    try:
        request("initialize", {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "cli-latency-benchmark", "version": "1"},
        })
        process.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
        process.stdin.flush()
        first = semantic = None
        first_semantic = False
        while semantic is None:
            answer = request("tools/call", {"name": "search_tools", "arguments": {"query": QUERY}})
            notice = (answer["result"].get("structuredContent") or {}).get("notice") or ""
            now = time.perf_counter() - started
            if first is None:
                first, first_semantic = now, PENDING not in notice
            if PENDING not in notice:
                semantic = now
        return first, first_semantic, semantic
    finally:
        process.stdin.close()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--toolscout", default="toolscout", help="the toolscout executable to measure")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="toolscout-cli-latency-") as folder:
        state = Path(folder)
        env = {
            **os.environ,
            "TOOLSCOUT_DATA_DIR": str(state / "data"),
            "TOOLSCOUT_PINS": str(state / "pins.json"),
        }
        # Untimed: embeds the bundled registry's tools (and exports a model that needs it) and
        # leaves the catalog on disk, as any earlier run of toolscout would.
        run_timed([args.toolscout, "search", QUERY, "--refresh"], env)
        rows: list[tuple[str, list[float], str]] = []
        for label, command in (
            ("search, cached catalog", [args.toolscout, "search", QUERY]),
            ("search --refresh", [args.toolscout, "search", QUERY, "--refresh"]),
            ("tools, cached catalog", [args.toolscout, "tools"]),
            ("tools --refresh", [args.toolscout, "tools", "--refresh"]),
        ):
            rows.append((label, [run_timed(command, env) for _ in range(args.runs)], ""))
        serves = [serve_first_answer(args.toolscout, env) for _ in range(args.runs)]
        semantic_first = sum(1 for _, was_semantic, _ in serves if was_semantic)
        rows.append(("serve, spawn to first answer (warm cache)", [first for first, _, _ in serves],
                     f"semantic in {semantic_first}/{len(serves)}"))
        rows.append(("serve, spawn to first semantic answer", [semantic for _, _, semantic in serves], ""))
    print(f"| measurement ({args.runs} runs each) | median s | min s | max s | note |")
    print("|---|---:|---:|---:|---|")
    for label, times, note in rows:
        print(f"| {label} | {statistics.median(times):.2f} | {min(times):.2f} | {max(times):.2f} | {note} |")


if __name__ == "__main__":
    main()
