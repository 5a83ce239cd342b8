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
from dataclasses import dataclass, field
from pathlib import Path

from toolscout.catalog import ToolRecord
from toolscout.errors import DatasetError
from toolscout.eval.datasets import load_tools

__all__ = [
    "DEVELOPER_SOURCES",
    "EVERYDAY_SOURCES",
    "LICENSED_SOURCES",
    "TOOL_USE_FAMILY",
    "TOOL_USE_SOURCES",
    "PAIRS_FILE",
    "TOOLS_FILE",
    "Pair",
    "Request",
    "TrainingData",
    "balanced",
    "counts_by_source",
    "family_of",
    "load_training_folder",
    "split_validation",
]

PAIRS_FILE = "pairs.jsonl"
TOOLS_FILE = "tools.jsonl"
# Sources whose licence puts no condition on a trained model (shared/train/SOURCE.md): MIT,
# Apache-2.0, BSD, CC0, and CC BY (credited in the model card). CC BY-SA sources (sgd, xsid) and
# sources with no stated licence are for experiments only: name them with --sources.
TOOL_USE_SOURCES = (
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
# Requests people type to a phone or home assistant. Several of these sources have their own tool
# for one need (weather, alarms, music), so each is batched on its own (toolscout.training.batches).
EVERYDAY_SOURCES = ("clinc150", "hwu64", "snips", "ha_intents", "star", "thingpedia")
# Task wording for command-line and developer tools ("undo the last commit"), in many languages.
# A command has a page per platform (common, linux, osx...): the pages are one function.
DEVELOPER_SOURCES = ("tldr",)
LICENSED_SOURCES = TOOL_USE_SOURCES + EVERYDAY_SOURCES + DEVELOPER_SOURCES
# The batch family of every tool-use source: API-style catalogs that name their providers, mixed
# in one stream as the first models were.
TOOL_USE_FAMILY = "tool-use"


@dataclass(frozen=True)
class Request:
    """One training request and the ids of every tool that serves it."""

    text: str
    tools: tuple[str, ...]
    source: str
    lang: str = "en"


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
    # Tool id -> the function it is: reworded versions of one tool (`variant_of`) share it, so
    # neither is ever taught as wrong for the other's requests.
    need: dict[str, str] = field(default_factory=dict)

    def need_of(self, tool_id: str) -> str:
        return self.need.get(tool_id, tool_id)

    def catalogs(self) -> dict[str, list[str]]:
        """Tool ids by source: the catalog each source's requests were written against."""
        by_source: dict[str, list[str]] = {}
        for tool_id, source in self.tool_source.items():
            by_source.setdefault(source, []).append(tool_id)
        return by_source

    def serves(self, request: Request, tool_id: str) -> bool:
        """Whether `tool_id` is, or is a version of, a tool the request names."""
        need = self.need_of(tool_id)
        return any(self.need_of(t) == need for t in request.tools)


def family_of(source: str) -> str:
    """The batch family of a source: its own for everyday and developer sources, one for all
    tool-use sources."""
    return source if source in EVERYDAY_SOURCES or source in DEVELOPER_SOURCES else TOOL_USE_FAMILY


def load_training_folder(folder: Path, sources: Sequence[str], *, english_only: bool = False) -> TrainingData:
    """Tools and requests of `sources` only; every id a request names must be a known tool.

    `english_only` drops requests whose `lang` (set by the multilingual sources) is not English.
    """
    tools_path, pairs_path = folder / TOOLS_FILE, folder / PAIRS_FILE
    for path in (tools_path, pairs_path):
        if not path.is_file():
            raise DatasetError(f"training folder {folder} has no {path.name}; expected {TOOLS_FILE} and {PAIRS_FILE}")
    wanted = set(sources)
    tool_source: dict[str, str] = {}
    need: dict[str, str] = {}
    with tools_path.open(encoding="utf-8") as lines:
        for line in lines:
            if line.strip():
                row = json.loads(line)
                tool_source[row["id"]] = row.get("source", "")
                if row.get("variant_of"):
                    need[row["id"]] = row["variant_of"]
                elif row.get("source") in DEVELOPER_SOURCES:
                    need[row["id"]] = f"{row['source']}::command::{row['name']}"
    tools = {t.id: t for t in load_tools(tools_path) if tool_source.get(t.id) in wanted}
    requests: list[Request] = []
    with pairs_path.open(encoding="utf-8") as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            row = json.loads(line)
            if row.get("source") not in wanted:
                continue
            lang = row.get("lang", "en")
            if english_only and lang != "en":
                continue
            missing = [i for i in row["tools"] if i not in tool_source]
            if missing:
                raise DatasetError(f"{pairs_path}:{number}: unknown tool id(s) {missing}")
            # A request found in two sources names a tool of each; keep the tools of sources read.
            ids = tuple(i for i in row["tools"] if i in tools)
            if not ids:
                continue
            requests.append(Request(text=row["query"].strip(), tools=ids, source=row["source"], lang=lang))
    return TrainingData(
        tools=tools,
        tool_source={i: tool_source[i] for i in tools},
        requests=tuple(requests),
        need={i: n for i, n in need.items() if i in tools},
    )


def balanced(
    requests: Iterable[Request],
    *,
    per_tool: int,
    tools_per_request: int,
    seed: int,
    everyday_per_tool: int | None = None,
    developer_per_tool: int | None = None,
) -> list[tuple[Request, str]]:
    """(request, positive tool) pairs, at most `per_tool` per tool and `tools_per_request` per request.

    Everyday tools may take `everyday_per_tool` instead: their requests are short and varied, and
    the wording of people is what the model lacks most. Developer tools take `developer_per_tool`:
    a command's page holds each example in up to 39 languages, and thousands of commands share the
    run. Requests are visited in a seeded order, so
    which ones a cap keeps is reproducible.
    """
    rng = random.Random(seed)
    order = list(requests)
    rng.shuffle(order)
    used: Counter[str] = Counter()
    chosen: list[tuple[Request, str]] = []
    for request in order:
        tools = list(request.tools)
        rng.shuffle(tools)
        cap = per_tool
        if everyday_per_tool is not None and request.source in EVERYDAY_SOURCES:
            cap = everyday_per_tool
        elif developer_per_tool is not None and request.source in DEVELOPER_SOURCES:
            cap = developer_per_tool
        kept = [t for t in tools if used[t] < cap][:tools_per_request]
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
