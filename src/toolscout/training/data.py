"""Training pairs: request -> tool, read from a training folder, filtered by licence and balanced.

The folder holds `tools.jsonl` (the benchmark tool format plus a `source` key) and `pairs.jsonl`
(`{"query", "tools": [ids], "source"}`), as `shared/train` does. Sources whose licence is not
stated are left out of the shipped model; they may be named explicitly for experiments.

Balancing matters more than volume here: one source (MetaTool) holds most requests for only 199
tools, so a per-tool cap keeps the model from learning that catalog's quirks, and a per-request
cap keeps long multi-tool requests from dominating a batch.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from toolscout.catalog import ToolRecord
from toolscout.errors import DatasetError
from toolscout.eval.datasets import load_tools

__all__ = [
    "LICENSED_SOURCES",
    "PAIRS_FILE",
    "TOOLS_FILE",
    "Pair",
    "Request",
    "TrainingData",
    "balanced",
    "counts_by_source",
    "load_training_folder",
    "split_validation",
]

PAIRS_FILE = "pairs.jsonl"
TOOLS_FILE = "tools.jsonl"
# Sources whose repositories state a licence (shared/train/SOURCE.md); the others are research-only.
LICENSED_SOURCES = (
    "metatool",
    "bfcl",
    "gorilla_hub",
    "gorilla_apizoo",
    "seal_tools",
    "azure_mcp",
    "acebench",
    "toolalpaca",
    "restgpt",
)


@dataclass(frozen=True)
class Request:
    """One training request and the ids of every tool that serves it."""

    text: str
    tools: tuple[str, ...]
    source: str


@dataclass(frozen=True)
class Pair:
    """What the model learns from: a request, a tool that serves it, and a tool that does not."""

    query: str
    positive: str
    negative: str
    source: str


@dataclass(frozen=True)
class TrainingData:
    tools: dict[str, ToolRecord]
    tool_source: dict[str, str]
    requests: tuple[Request, ...]


def load_training_folder(folder: Path, sources: Sequence[str]) -> TrainingData:
    """Tools and requests of `sources` only; every id a request names must be a known tool."""
    tools_path, pairs_path = folder / TOOLS_FILE, folder / PAIRS_FILE
    for path in (tools_path, pairs_path):
        if not path.is_file():
            raise DatasetError(f"training folder {folder} has no {path.name}; expected {TOOLS_FILE} and {PAIRS_FILE}")
    wanted = set(sources)
    tool_source: dict[str, str] = {}
    with tools_path.open(encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                row = json.loads(line)
                tool_source[row["id"]] = row.get("source", "")
    tools = {t.id: t for t in load_tools(tools_path) if tool_source.get(t.id) in wanted}
    requests: list[Request] = []
    with pairs_path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            row = json.loads(line)
            if row.get("source") not in wanted:
                continue
            ids = tuple(row["tools"])
            missing = [i for i in ids if i not in tools]
            if missing:
                raise DatasetError(f"{pairs_path}:{number}: unknown tool id(s) {missing}")
            requests.append(Request(text=row["query"].strip(), tools=ids, source=row["source"]))
    return TrainingData(tools=tools, tool_source={i: tool_source[i] for i in tools}, requests=tuple(requests))


def balanced(
    requests: Iterable[Request], *, per_tool: int, tools_per_request: int, seed: int
) -> list[tuple[Request, str]]:
    """(request, positive tool) pairs, at most `per_tool` per tool and `tools_per_request` per request.

    Requests are visited in a seeded order, so which ones a cap keeps is reproducible.
    """
    rng = random.Random(seed)
    order = list(requests)
    rng.shuffle(order)
    used: Counter[str] = Counter()
    chosen: list[tuple[Request, str]] = []
    for request in order:
        tools = list(request.tools)
        rng.shuffle(tools)
        kept = [t for t in tools if used[t] < per_tool][:tools_per_request]
        for tool in kept:
            used[tool] += 1
            chosen.append((request, tool))
    return chosen


def split_validation(
    pairs: Sequence[tuple[Request, str]], *, fraction: float, seed: int
) -> tuple[list[tuple[Request, str]], list[tuple[Request, str]]]:
    """A held-back slice of the training requests (whole requests, never split across sides)."""
    texts = sorted({request.text for request, _ in pairs})
    rng = random.Random(seed + 1)
    held = set(rng.sample(texts, k=int(len(texts) * fraction)))
    train = [p for p in pairs if p[0].text not in held]
    validation = [p for p in pairs if p[0].text in held]
    return train, validation


def counts_by_source(pairs: Iterable[Pair]) -> dict[str, int]:
    return dict(sorted(Counter(pair.source for pair in pairs).items()))
