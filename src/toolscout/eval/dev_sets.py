"""The dev sets every ranking change is selected and checked on, loaded one way for every script.

Dev sets choose and check; nothing is ever fitted on their requests. Each set carries, per query,
the extra keys it can be sliced by that `Query` does not keep (everyday's `source` and `lang`, the
bundled set's `server`, `style`, `lang`). The bundled registry's tools keep their title and
annotations, as the gateway indexes them (the plain bench loader drops both).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from toolscout.catalog import ToolRecord
from toolscout.eval.datasets import Dataset, load_dataset, load_queries
from toolscout.eval.runner import sample_queries

__all__ = ["BUNDLED_DIR", "DevSet", "dev_sets", "load_bundled_tools", "query_keys"]

BUNDLED_DIR = Path(__file__).resolve().parents[3] / "benchmarks" / "data" / "bundled"


@dataclass(frozen=True)
class DevSet:
    name: str
    dataset: Dataset  # its catalog, and its queries (a fixed sample where stated)
    # query id -> the raw keys of its line (for slices the Query type does not keep)
    keys: dict[str, dict] = field(default_factory=dict)
    note: str = ""


def load_bundled_tools(path: Path) -> tuple[ToolRecord, ...]:
    tools = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            tools.append(ToolRecord(id=row["id"], name=row["name"], server=row["server"],
                                    description=row.get("description") or "",
                                    input_schema=row.get("input_schema") or {},
                                    title=row.get("title"), annotations=row.get("annotations")))
    return tuple(tools)


def query_keys(path: Path) -> dict[str, dict]:
    rows = (json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip())
    return {str(row["id"]): row for row in rows}


def dev_sets(bench: Path, bundled: Path = BUNDLED_DIR, toollens_limit: int | None = 2000) -> list[DevSet]:
    """everyday, devtools, bundled (English, translated), etom_mcp, toolbench_stb, toollens_train (a
    fixed, evenly spread sample of `toollens_limit` queries; None for all)."""
    out = []
    for name in ("everyday", "devtools"):
        if (bench / name / "queries.jsonl").is_file():
            out.append(DevSet(name, load_dataset(bench / name), query_keys(bench / name / "queries.jsonl")))
    tools = load_bundled_tools(bundled / "tools.jsonl")
    for name, file in (("bundled", "queries.jsonl"), ("bundled_translated", "queries_translated.jsonl")):
        queries = load_queries(bundled / file)
        out.append(DevSet(name, Dataset(name=name, tools=tools, queries=queries), query_keys(bundled / file)))
    for name in ("etom_mcp", "toolbench_stb", "toollens_train"):
        dataset = load_dataset(bench / name)
        note = ""
        if name == "toollens_train" and toollens_limit is not None and toollens_limit < len(dataset.queries):
            note = f"{toollens_limit} of {len(dataset.queries)} queries, evenly spread"
            dataset = Dataset(name=name, tools=dataset.tools, queries=sample_queries(dataset.queries, toollens_limit))
        out.append(DevSet(name, dataset, note=note))
    return out
