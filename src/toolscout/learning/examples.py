"""Labelled example requests: "this request is served by these tools".

File format: JSON Lines, one example per line, `{"query": "...", "tools": ["<tool id>", ...]}`
(other keys are ignored; blank lines and lines starting with `#` are skipped). Examples feed two
things: their queries join the expansion documents of their tools (see `toolscout.learning.
expansion`), and the retrieval engine's intent signal votes with them (`example_pairs`).
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import jsonschema

from toolscout.errors import ConfigError
from toolscout.learning.phrases import MAX_PHRASE_CHARS, clean_phrase

__all__ = [
    "MAX_EXAMPLES_PER_TOOL",
    "Example",
    "example_pairs",
    "load_example_files",
    "load_examples",
    "parse_example",
    "queries_by_tool",
    "read_examples",
    "write_examples",
]

# How many example queries one tool's expansion document takes: enough to teach vocabulary, few
# enough that a heavily used tool's document does not crowd out its own description.
MAX_EXAMPLES_PER_TOOL = 32

_LINE_SCHEMA = {
    "type": "object",
    "required": ["query", "tools"],
    "properties": {
        "query": {"type": "string", "minLength": 1, "maxLength": MAX_PHRASE_CHARS},
        "tools": {"type": "array", "minItems": 1, "items": {"type": "string", "minLength": 1}},
    },
}
_VALIDATOR = jsonschema.Draft202012Validator(_LINE_SCHEMA)


@dataclass(frozen=True)
class Example:
    """One request and the tool ids that serve it (all of them, for a multi-step request)."""

    query: str
    tool_ids: tuple[str, ...]


def parse_example(document: Any, where: str) -> Example:
    """Validate one parsed line; `where` ("file:line") names it in errors."""
    error = jsonschema.exceptions.best_match(_VALIDATOR.iter_errors(document))
    if error is not None:
        at = ".".join(map(str, error.absolute_path)) or "the line"
        raise ConfigError(
            f"examples file {where}: at {at}: {error.message} "
            '(each line is {"query": "a request", "tools": ["tool id", ...]})'
        )
    query = clean_phrase(document["query"])
    if not query:
        raise ConfigError(f"examples file {where}: the query is blank; write the request's text")
    return Example(query=query, tool_ids=tuple(dict.fromkeys(document["tools"])))


def read_examples(lines: Iterable[str], source: str) -> list[Example]:
    examples = []
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        try:
            document = json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise ConfigError(
                f"examples file {source}:{number}: not valid JSON ({exc.msg}); "
                "write one JSON object per line"
            ) from exc
        examples.append(parse_example(document, f"{source}:{number}"))
    return examples


def load_examples(path: Path) -> list[Example]:
    """Read one examples file (JSON Lines)."""
    try:
        with Path(path).open(encoding="utf-8") as handle:
            return read_examples(handle, str(path))
    except OSError as exc:
        raise ConfigError(f"examples file {path} cannot be read: {exc.strerror or exc}") from exc
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"examples file {path} is not UTF-8 text ({exc.reason}); save it as UTF-8 JSON Lines"
        ) from exc


def load_example_files(paths: Iterable[Path]) -> list[Example]:
    return [example for path in paths for example in load_examples(Path(path))]


def write_examples(examples: Iterable[Example], stream: IO[str]) -> int:
    """Write `examples` in the file format; returns how many were written."""
    count = 0
    for example in examples:
        stream.write(json.dumps({"query": example.query, "tools": list(example.tool_ids)}) + "\n")
        count += 1
    return count


def example_pairs(examples: Iterable[Example]) -> list[tuple[str, str]]:
    """(query, tool id) for every tool of every example, in order: what the intent signal embeds."""
    return [(example.query, tool_id) for example in examples for tool_id in example.tool_ids]


def queries_by_tool(examples: Sequence[Example]) -> dict[str, list[str]]:
    """tool id -> the queries of its examples, in example order (not yet deduplicated or bounded)."""
    queries: dict[str, list[str]] = defaultdict(list)
    for query, tool_id in example_pairs(examples):
        queries[tool_id].append(query)
    return dict(queries)
