"""Wall time from starting `toolscout serve` (stdio) to its first semantic answer, cold and warm.

The gateway answers search_tools from the keyword signals (with a `notice`) until the embedding
model is loaded and the catalog embedded; this measures how long an agent waits for the first
answer without that notice, from the moment the process is spawned. Each run is a fresh process:

- cold: an empty cache folder (XDG_CACHE_HOME): no cached embeddings (and, for a model that must
  be exported to ONNX, no export yet);
- warm: the same cache folder again, as every later start finds it.

    python benchmarks/serve_first_answer.py --toolscout .venv/bin/toolscout --runs 3

The registry is the two small test upstreams (tests/upstreams/weather_server.py and
notes_server.py), run with the Python next to `--toolscout`, so model loading dominates. It
speaks MCP's JSON-RPC over stdio directly, so it needs no client library.
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


def first_semantic_answer(toolscout: Path, cache: Path) -> tuple[float, float]:
    """Seconds from spawn to the first answer of any kind, and to the first without a notice."""
    python = toolscout.parent / "python"
    upstreams = ROOT / "tests" / "upstreams"
    registry = cache / "registry.json"
    registry.write_text(json.dumps({"mcpServers": {
        name: {"command": str(python), "args": [str(upstreams / f"{name}_server.py")]} for name in ("weather", "notes")
    }}))
    env = {
        **os.environ, "XDG_CACHE_HOME": str(cache / "xdg"),
        # Pins and learned state stay in the scratch folder, not the user's.
        "TOOLSCOUT_PINS": str(cache / "pins.json"), "TOOLSCOUT_DATA_DIR": str(cache / "data"),
    }
    start = time.perf_counter()
    session = _Session([str(toolscout), "serve", "--registry", str(registry), "--no-learn"], env)
    try:
        session.send("initialize", {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "serve_first_answer", "version": "1"},
        })
        session.send("notifications/initialized", notify=True)
        first_any = None
        while True:
            reply = session.send("tools/call", {"name": "search_tools", "arguments": {"query": QUERY}})
            assert reply is not None and "result" in reply, reply
            result = reply["result"].get("structuredContent") or json.loads(reply["result"]["content"][0]["text"])
            now = time.perf_counter() - start
            if result["tools"] and first_any is None:
                first_any = now
            if result["tools"] and not result.get("notice"):
                return first_any or now, now
            time.sleep(0.02)
    finally:
        session.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--toolscout", required=True, help="the toolscout executable of the venv to measure")
    parser.add_argument("--name", help="the row's label (default: the executable's path)")
    parser.add_argument("--runs", type=int, default=3, help="cold/warm pairs, each with a new cache folder")
    args = parser.parse_args()
    toolscout = Path(args.toolscout).absolute()
    cold, warm, any_cold, any_warm = [], [], [], []
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory() as scratch:
            first, semantic = first_semantic_answer(toolscout, Path(scratch))
            any_cold.append(first)
            cold.append(semantic)
            first, semantic = first_semantic_answer(toolscout, Path(scratch))
            any_warm.append(first)
            warm.append(semantic)
    print("| venv | first answer, cold s | first semantic answer, cold s | first answer, warm s | first semantic answer, warm s |")
    print("| --- | ---: | ---: | ---: | ---: |")
    median = statistics.median
    print(
        f"| {args.name or toolscout} | {median(any_cold):.2f} | {median(cold):.2f} | "
        f"{median(any_warm):.2f} | {median(warm):.2f} |"
    )


if __name__ == "__main__":
    main()
