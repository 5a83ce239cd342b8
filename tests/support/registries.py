"""Registries of test upstream servers, and the search settings gateway tests use.

The upstream servers in tests/upstreams/ are real MCP servers, run as stdio subprocesses, or in
this process (`in_process`) where a test is not about the process: the same server over the
SDK's in-memory transport, with no process to start.
"""

from __future__ import annotations

import importlib.util
import itertools
import json
import sys
from pathlib import Path
from typing import Any

from toolscout.search import SearchSettings

__all__ = [
    "UPSTREAMS", "bundled_lookalikes", "failing_server", "fast_search_settings", "in_process", "in_process_entries", "python_server", "time_server",
    "write_registry",
]

UPSTREAMS = Path(__file__).parent.parent / "upstreams"
# The bundled registry's tools as its servers list them (benchmarks/data/bundled/SOURCE.md).
BUNDLED_TOOLS = Path(__file__).parents[2] / "benchmarks" / "data" / "bundled" / "tools.jsonl"


def fast_search_settings() -> SearchSettings:
    """What gateway tests search with: keyword signals only, no embedding model to load."""
    return SearchSettings.lexical_only()


def python_server(script: str, *args: str, **extra: Any) -> dict[str, Any]:
    """A registry entry running one of tests/upstreams/ with this interpreter."""
    return {"command": sys.executable, "args": [str(UPSTREAMS / script), *args], **extra}


_loads = itertools.count()


def in_process(script: str, *args: str) -> Any:
    """The MCP server object of one of tests/upstreams/, loaded afresh (module state of its own, as
    a new process would have), for `GatewayOptions(in_process={name: ...})`: its `server`, or
    `build(*args)` for a server made from its arguments (scripted_server.py). The registry entry
    keeps `python_server(script, *args)`: it names the server, and pins judge it as usual."""
    spec = importlib.util.spec_from_file_location(f"upstream_{Path(script).stem}_{next(_loads)}", UPSTREAMS / script)
    assert spec is not None and spec.loader is not None, script
    module = importlib.util.module_from_spec(spec)
    # Registered, as an imported module is: the SDK reads a tool's annotations through its module.
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    if hasattr(module, "build"):
        return module.build(*args)
    assert not args, f"{script} takes no arguments in this process"
    return module.server


def in_process_entries(entries: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Of these registry entries, each that runs a server of tests/upstreams/ with this
    interpreter and nothing the process itself would carry (an environment, or arguments other than
    a scripted server's), as its server object in this process (`GatewayOptions.in_process`)."""
    here: dict[str, Any] = {}
    for name, entry in entries.items():
        args = [str(arg) for arg in entry.get("args", [])]
        if entry.get("command") != sys.executable or not args or Path(args[0]).parent != UPSTREAMS or entry.get("env"):
            continue
        script, rest = Path(args[0]).name, args[1:]
        if rest and script != "scripted_server.py":
            continue
        here[name] = in_process(script, *rest)
    return here


def failing_server(message: str, code: int = 3) -> dict[str, Any]:
    """A registry entry whose process writes `message` to stderr and exits before any MCP."""
    script = f"import sys; sys.stderr.write({message!r} + '\\n'); sys.exit({code})"
    return {"command": sys.executable, "args": ["-c", script]}


def time_server() -> dict[str, Any]:
    """The third-party mcp-server-time from PyPI (a dev dependency)."""
    return {"command": sys.executable, "args": ["-m", "mcp_server_time", "--local-timezone", "UTC"]}


def write_registry(path: Path, servers: dict[str, dict[str, Any]]) -> Path:
    path.write_text(json.dumps({"mcpServers": servers}, indent=2), encoding="utf-8")
    return path


def bundled_lookalikes(folder: Path) -> dict[str, dict[str, Any]]:
    """Registry entries of local servers listing exactly the bundled registry's tools, one server
    each as there (scripted_server.py), without starting the real ones through uvx."""
    servers: dict[str, list[dict[str, Any]]] = {}
    for line in BUNDLED_TOOLS.read_text(encoding="utf-8").splitlines():
        tool = json.loads(line)
        listed = {"name": tool["name"], "description": tool["description"], "inputSchema": tool["input_schema"]}
        for field, key in (("title", "title"), ("annotations", "annotations"), ("output_schema", "outputSchema")):
            if tool.get(field) is not None:
                listed[key] = tool[field]
        servers.setdefault(tool["server"], []).append(listed)
    entries = {}
    for server, tools in servers.items():
        spec = folder / f"{server}.tools.json"
        spec.write_text(json.dumps({"tools": tools}), encoding="utf-8")
        entries[server] = python_server("scripted_server.py", str(spec), server)
    return entries
