"""Regenerate benchmarks/data/bundled/tools.jsonl: the tools of the bundled registry's servers.

Starts every server of registry/default.json over stdio with the registry's own command (uvx at the
pinned version; the first run downloads them from PyPI), lists its tools with the MCP SDK client,
and writes one line per tool in the shared bench format:

    {"id", "name", "server", "description", "input_schema", "title", "annotations"}

`id` is the id toolscout exposes (`toolscout.naming.assign_ids`: `<server>__<tool>`); `title` and
`annotations` are extra keys (the bench loader ignores them; `bundled_top1.py` passes them on, as
the gateway does). The sqlite server gets a throw-away `--db-path`, so no user state is touched.

    .venv/bin/python benchmarks/snapshot_bundled.py            # progress on stderr
    .venv/bin/python benchmarks/snapshot_bundled.py --out /tmp/tools.jsonl
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

ROOT = Path(__file__).resolve().parent.parent
REGISTRY = ROOT / "registry" / "default.json"
OUT = ROOT / "benchmarks" / "data" / "bundled" / "tools.jsonl"


def log(message: str) -> None:
    print(f"[snapshot] {message}", file=sys.stderr, flush=True)


def exposed_ids(pairs: list[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """toolscout's own id assignment; `<server>__<tool>` if the module has moved."""
    try:
        from toolscout.naming import assign_ids
    except ImportError:
        log("toolscout.naming.assign_ids not importable; using <server>__<tool>")
        return {(server, name): f"{server}__{name}" for server, name in pairs}
    return assign_ids(pairs)


def resolve_command(command: str) -> str:
    found = shutil.which(command) or shutil.which(command, path=str(Path(sys.executable).parent))
    if not found:
        raise SystemExit(f"{command!r} not found on PATH nor next to {sys.executable}")
    return found


async def list_server(name: str, entry: dict, db_dir: str, timeout: float) -> list:
    args = list(entry.get("args", []))
    if "--db-path" in args:
        args[args.index("--db-path") + 1] = os.path.join(db_dir, f"{name}.db")
    params = StdioServerParameters(command=resolve_command(entry["command"]), args=args,
                                   env={**os.environ, **entry.get("env", {})})
    started = time.monotonic()
    log(f"{name}: starting {entry['command']} {' '.join(args)}")
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await asyncio.wait_for(session.initialize(), timeout)
        tools, cursor = [], None
        while True:
            page = await asyncio.wait_for(
                session.list_tools(params={"cursor": cursor} if cursor else None), timeout)
            tools.extend(page.tools)
            cursor = page.next_cursor if hasattr(page, "next_cursor") else page.nextCursor
            if not cursor:
                break
    log(f"{name}: {len(tools)} tools in {time.monotonic() - started:.1f} s")
    return tools


def row(tool_id: str, server: str, tool) -> dict:
    annotations = None
    if tool.annotations is not None:
        annotations = tool.annotations.model_dump(by_alias=True, exclude_none=True, mode="json") or None
    schema = getattr(tool, "input_schema", None)
    if schema is None:
        schema = getattr(tool, "inputSchema", None)
    return {"id": tool_id, "name": tool.name, "server": server, "description": tool.description or "",
            "input_schema": dict(schema or {}), "title": tool.title, "annotations": annotations}


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--registry", type=Path, default=REGISTRY)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--timeout", type=float, default=300.0,
                        help="seconds per server for start + listing (the first uvx run downloads)")
    args = parser.parse_args()
    servers = json.loads(args.registry.read_text())["mcpServers"]
    by_server: dict[str, list] = {}
    with tempfile.TemporaryDirectory(prefix="toolscout-snapshot-") as db_dir:
        for number, (name, entry) in enumerate(servers.items(), 1):
            log(f"server {number}/{len(servers)}")
            by_server[name] = await list_server(name, entry, db_dir, args.timeout)
    pairs = [(server, tool.name) for server, tools in by_server.items() for tool in tools]
    ids = exposed_ids(pairs)
    rows = [row(ids[(server, tool.name)], server, tool)
            for server in sorted(by_server) for tool in by_server[server]]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", encoding="utf-8") as out:
        for item in rows:
            out.write(json.dumps(item, ensure_ascii=False) + "\n")
    log(f"wrote {len(rows)} tools of {len(by_server)} servers to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
