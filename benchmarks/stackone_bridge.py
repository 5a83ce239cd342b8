"""Serve StackOne's local BM25 + TF-IDF tool search over a benchmark catalog, one query per line.

Runs inside a virtualenv that has `stackone-ai` (its dependencies would add langchain-core and
httpx 0.x to toolscout's environment, so it lives apart; see benchmarks/README.md):

    python stackone_bridge.py TOOLS_JSONL < requests > answers

Each request line is `{"query": str, "k": int}`; each answer line is
`{"ids": [dataset tool ids, best first], "ms": search time inside this process}`. The first line
written is `{"ready": true, "index_seconds": float}` once the index is built.

StackOne keys its index by tool name and reads a connector from the name's first `_` part
(`bamboohr_list_employees`), so each tool gets the name `<server>_<tool>` in that style, made
unique; answers map those names back to the dataset ids.
"""

from __future__ import annotations

import json
import re
import sys
import time

from stackone_ai.local_search import ToolIndex
from stackone_ai.models import ExecuteConfig, StackOneTool, ToolParameters


def stackone_name(server: str, name: str, taken: set[str]) -> str:
    base = re.sub(r"[^a-z0-9]+", "_", f"{server}_{name}".lower()).strip("_") or "tool"
    candidate, suffix = base, 2
    while candidate in taken:
        candidate, suffix = f"{base}_{suffix}", suffix + 1
    taken.add(candidate)
    return candidate


def load_tools(path: str) -> tuple[list[StackOneTool], dict[str, str]]:
    tools, ids, taken = [], {}, set()
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            if not line.strip():
                continue
            row = json.loads(line)
            name = stackone_name(row["server"], row["name"], taken)
            schema = row.get("input_schema") or {}
            tools.append(
                StackOneTool(
                    description=row.get("description") or "",
                    parameters=ToolParameters(type="object", properties=schema.get("properties") or {}),
                    _execute_config=ExecuteConfig(method="GET", url="http://localhost/unused", name=name),
                    _api_key="unused",
                )
            )
            ids[name] = row["id"]
    return tools, ids


def main() -> int:
    tools, ids = load_tools(sys.argv[1])
    start = time.perf_counter()
    index = ToolIndex(tools)
    print(json.dumps({"ready": True, "index_seconds": time.perf_counter() - start}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        start = time.perf_counter()
        results = index.search(request["query"], limit=request["k"])
        elapsed = (time.perf_counter() - start) * 1000.0
        print(json.dumps({"ids": [ids[r.name] for r in results], "ms": elapsed}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
