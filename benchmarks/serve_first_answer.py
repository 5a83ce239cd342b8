"""Wall time from starting `toolscout serve` (stdio) to its first semantic answer, cold and warm.

The gateway answers search_tools from the keyword signals (with a `notice`) until the embedding
model is loaded and the catalog embedded; this measures how long an agent waits for the first
answer without that notice, from the moment the process is spawned. Each run is a fresh process:

- cold: an empty cache folder (XDG_CACHE_HOME) and state store: no cached embeddings (and, for a
  model that must be exported to ONNX, no export yet), no stored catalog, and for `--bundled` an
  empty uv cache (every server is fetched);
- warm: the same folders again, as every later start finds them: the catalog the first run stored
  answers for the upstreams still starting.

It also says when the last upstream came up, as the client sees it (the first answer whose
`servers` name it): the first answer should come before that.

    python benchmarks/serve_first_answer.py --toolscout .venv/bin/toolscout --runs 3
    python benchmarks/serve_first_answer.py --toolscout .venv/bin/toolscout --runs 1 --slow
    python benchmarks/serve_first_answer.py --toolscout .venv/bin/toolscout --runs 1 --bundled

The registry is the two small test upstreams (tests/upstreams/weather_server.py and
notes_server.py), run with the Python next to `--toolscout`, so model loading dominates; `--slow`
adds tests/upstreams/sleepy_server.py taking 20 s to start; `--bundled` is the bundled registry
(its servers started with the uvx next to `--toolscout`). It speaks MCP's JSON-RPC over stdio
directly, so it needs no client library.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import statistics
import subprocess
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
QUERY = "will it rain tomorrow in Oslo"
# Searches go out this often once the first answer came (a tight loop would slow the starts it waits for).
_POLL = 0.1


class _Session:
    def __init__(self, command: list[str], env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, text=True
        )
        self._lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()
        self._next_id = 0

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self._lines.put(line)

    def send(self, method: str, params: dict | None = None, *, notify: bool = False) -> dict | None:
        message: dict = {"jsonrpc": "2.0", "method": method, "params": params or {}}
        if not notify:
            self._next_id += 1
            message["id"] = self._next_id
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps(message) + "\n")
        self.process.stdin.flush()
        if notify:
            return None
        while True:
            reply = json.loads(self._lines.get(timeout=300))
            if reply.get("id") == self._next_id:
                return reply

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()


def _registry(toolscout: Path, scratch: Path, *, slow: bool, bundled: bool) -> list[str]:
    """`serve`'s registry arguments: none for the bundled registry, else a file of test upstreams."""
    if bundled:
        return []
    python = toolscout.parent / "python"
    upstreams = ROOT / "tests" / "upstreams"
    servers = {name: {"command": str(python), "args": [str(upstreams / f"{name}_server.py")]} for name in ("weather", "notes")}
    if slow:  # never opened: it starts after 20 s
        servers["sleepy"] = {"command": str(python), "args": [str(upstreams / "sleepy_server.py"), "--until", str(scratch / "gate")]}
    registry = scratch / "registry.json"
    registry.write_text(json.dumps({"mcpServers": servers}))
    return ["--registry", str(registry)]


def first_answers(toolscout: Path, scratch: Path, *, slow: bool = False, bundled: bool = False) -> dict[str, float]:
    """Seconds from spawn to the answer to `initialize`, to the first search answer with tools ("any"),
    to the first without the keyword-only notice ("semantic"), and to the first answer that names the
    last upstream to come up ("all_up")."""
    env = {
        **os.environ, "XDG_CACHE_HOME": str(scratch / "xdg"),
        # Pins, learned state and the stored catalog stay in the scratch folder, not the user's.
        "TOOLSCOUT_PINS": str(scratch / "pins.json"), "TOOLSCOUT_DATA_DIR": str(scratch / "data"),
        "TOOLSCOUT_STATE": str(scratch / "state.sqlite3"),
        "PATH": f"{toolscout.parent}{os.pathsep}{os.environ.get('PATH', '')}",
    }
    start = time.perf_counter()
    session = _Session([str(toolscout), "serve", *_registry(toolscout, scratch, slow=slow, bundled=bundled), "--no-learn"], env)
    try:
        session.send("initialize", {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "serve_first_answer", "version": "1"},
        })
        found: dict[str, float] = {"initialize": time.perf_counter() - start}
        session.send("notifications/initialized", notify=True)
        while True:
            reply = session.send("tools/call", {"name": "search_tools", "arguments": {"query": QUERY}})
            assert reply is not None and "result" in reply, reply
            result = reply["result"].get("structuredContent") or json.loads(reply["result"]["content"][0]["text"])
            now = time.perf_counter() - start
            notice = result.get("notice") or ""
            if result["tools"]:
                found.setdefault("any", now)
                if "keyword" not in notice:
                    found.setdefault("semantic", now)
            if "Still starting" not in notice and "all_up" not in found:
                found["all_up"] = now
                # Which servers came up, and any that failed instead (they are not waited for).
                print(f"  up: {len(result['servers'])} server line(s); notice: {notice or 'none'}", flush=True)
            if len(found) == 4:
                return found
            time.sleep(_POLL)
    finally:
        session.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--toolscout", required=True, help="the toolscout executable of the venv to measure")
    parser.add_argument("--name", help="the row's label (default: the executable's path)")
    parser.add_argument("--runs", type=int, default=3, help="cold/warm pairs, each with a new cache folder")
    parser.add_argument("--slow", action="store_true", help="add an upstream that takes 20 s to start")
    parser.add_argument("--bundled", action="store_true", help="serve the bundled registry (fetched with uvx)")
    args = parser.parse_args()
    toolscout = Path(args.toolscout).absolute()
    runs: dict[str, list[dict[str, float]]] = {"cold": [], "warm": []}
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory() as scratch:
            for kind in ("cold", "warm"):
                runs[kind].append(first_answers(toolscout, Path(scratch), slow=args.slow, bundled=args.bundled))
                print(kind, {key: round(value, 2) for key, value in runs[kind][-1].items()}, flush=True)
    print("| venv | start | initialize answered s | first answer s | first semantic answer s | last upstream up s |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for kind, found in runs.items():
        cells = " | ".join(f"{statistics.median([run[key] for run in found]):.2f}" for key in ("initialize", "any", "semantic", "all_up"))
        print(f"| {args.name or toolscout} | {kind} | {cells} |")


if __name__ == "__main__":
    main()
