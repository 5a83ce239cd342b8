"""Load a benchmark folder (`tools.jsonl`, `queries.jsonl`) into ToolRecords and Queries.

The format is the one of the shared benchmark README:

- a tool line: `{"id", "name", "server", "description", "input_schema"}` (+ optional keys);
- a query line: `{"id", "query", "relevant": [ids], "acceptable": [ids], "kind"}`, optionally
  `relevant_groups` (one list of interchangeable ids per required step) and the slicing keys
  `level`, `group`, `category`.

Step semantics: where `relevant_groups` exist, each group is one step, covered when ANY member is
retrieved. Without them, each relevant id is its own step; a query with exactly one relevant id has
one step, so its acceptable ids join that step. With several relevant ids and no groups, which
step an acceptable id could replace is unknown, so it counts only for Recall and MRR (which accept
any relevant-or-acceptable id).

Every malformed line raises DatasetError naming the file and line.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolscout.catalog import ToolRecord
from toolscout.errors import DatasetError

__all__ = [
    "KINDS",
    "QUERIES_FILE",
    "SLICE_FIELDS",
    "TOOLS_FILE",
    "Dataset",
    "Query",
    "derive_groups",
    "load_dataset",
    "load_queries",
    "load_tools",
    "slice_fields_of",
]

TOOLS_FILE = "tools.jsonl"
QUERIES_FILE = "queries.jsonl"
KINDS = ("single", "multi")
# Query keys a run can be sliced by (`toolscout eval --by FIELD`).
SLICE_FIELDS = ("level", "group", "category", "kind", "source", "lang")


@dataclass(frozen=True)
class Query:
    """One evaluation request and what counts as a right answer."""

    id: str
    text: str
    relevant: tuple[str, ...]
    acceptable: tuple[str, ...] = ()
    # One tuple of interchangeable ids per required step; derived when the data has none.
    relevant_groups: tuple[tuple[str, ...], ...] = ()
    kind: str = "single"
    level: int | None = None
    group: str | None = None
    category: str | None = None
    # Where the request comes from and its language, where a set says (everyday does).
    source: str | None = None
    lang: str | None = None

    def __post_init__(self) -> None:
        if not self.relevant_groups:
            object.__setattr__(self, "relevant_groups", derive_groups(self.relevant, self.acceptable))

    @property
    def answers(self) -> frozenset[str]:
        """Every id that counts as a hit for Recall and MRR."""
        return frozenset(self.relevant) | frozenset(self.acceptable) | {
            tool_id for group in self.relevant_groups for tool_id in group
        }

    def slice_value(self, field: str) -> str:
        """The value of a slicing key as a label ("-" when the query has none)."""
        if field not in SLICE_FIELDS:
            raise DatasetError(f"cannot slice by {field!r}; choose one of {', '.join(SLICE_FIELDS)}")
        value = getattr(self, field)
        if value is None:
            return "-"
        return f"L{value}" if field == "level" else str(value)


@dataclass(frozen=True)
class Dataset:
    """A tool catalog and the queries evaluated against it."""

    name: str
    tools: tuple[ToolRecord, ...]
    queries: tuple[Query, ...]
    # The folder it was read from, when it came from files.
    folder: Path | None = None


def slice_fields_of(queries: Iterable[Query]) -> tuple[str, ...]:
    """The slicing keys (level, group, category) that at least one of `queries` carries."""
    queries = list(queries)
    return tuple(field for field in ("level", "group", "category")
                 if any(getattr(query, field) is not None for query in queries))


def derive_groups(
    relevant: tuple[str, ...], acceptable: tuple[str, ...]
) -> tuple[tuple[str, ...], ...]:
    """Steps of a query whose data has no `relevant_groups` (see the module docstring)."""
    if len(relevant) == 1:
        return ((relevant[0], *(a for a in acceptable if a != relevant[0])),)
    return tuple((tool_id,) for tool_id in relevant)


def load_dataset(folder: str | Path) -> Dataset:
    """Read `tools.jsonl` and `queries.jsonl` of a benchmark folder; every answer must be a tool."""
    folder = Path(folder)
    if not folder.is_dir():
        raise DatasetError(f"{folder}: not a directory; pass a folder holding {TOOLS_FILE} and {QUERIES_FILE}")
    tools = load_tools(folder / TOOLS_FILE)
    queries = load_queries(folder / QUERIES_FILE)
    known = {tool.id for tool in tools}
    for query in queries:
        missing = sorted(query.answers - known)
        if missing:
            raise DatasetError(
                f"{folder / QUERIES_FILE}: query {query.id!r} names tools not in {TOOLS_FILE}: "
                f"{', '.join(missing[:5])}"
            )
    return Dataset(name=folder.resolve().name, tools=tools, queries=queries, folder=folder)


def load_tools(path: str | Path) -> tuple[ToolRecord, ...]:
    """Tool records whose id is the dataset's own id (results are scored against it)."""
    tools: list[ToolRecord] = []
    seen: set[str] = set()
    for where, row in _rows(Path(path)):
        tool_id = _string(row, "id", where)
        if tool_id in seen:
            raise DatasetError(f"{where}: duplicate tool id {tool_id!r}")
        seen.add(tool_id)
        schema = row.get("input_schema")
        schema = {} if schema is None else schema
        if not isinstance(schema, Mapping):
            raise DatasetError(f"{where}: 'input_schema' must be a JSON object, got {type(schema).__name__}")
        description = row.get("description") or ""
        if not isinstance(description, str):
            raise DatasetError(f"{where}: 'description' must be a string")
        tools.append(
            ToolRecord(
                id=tool_id,
                name=_string(row, "name", where),
                server=_string(row, "server", where),
                description=description,
                input_schema=schema,
            )
        )
    return tuple(tools)


def load_queries(path: str | Path) -> tuple[Query, ...]:
    """Queries with their steps; ids must be unique and every query needs a relevant tool."""
    queries: list[Query] = []
    seen: set[str] = set()
    for where, row in _rows(Path(path)):
        query = _query(row, where)
        if query.id in seen:
            raise DatasetError(f"{where}: duplicate query id {query.id!r}")
        seen.add(query.id)
        queries.append(query)
    return tuple(queries)


def _query(row: Mapping[str, Any], where: str) -> Query:
    relevant = _ids(row, "relevant", where)
    if not relevant:
        raise DatasetError(f"{where}: 'relevant' is empty; every evaluated query needs a relevant tool")
    acceptable = _ids(row, "acceptable", where, required=False)
    kind = row.get("kind", "multi" if len(relevant) > 1 else "single")
    if kind not in KINDS:
        raise DatasetError(f"{where}: 'kind' must be one of {', '.join(KINDS)}, got {kind!r}")
    groups: tuple[tuple[str, ...], ...] = ()
    if row.get("relevant_groups") is not None:
        raw = row["relevant_groups"]
        if not isinstance(raw, list) or not raw:
            raise DatasetError(f"{where}: 'relevant_groups' must be a non-empty list of id lists")
        groups = tuple(_id_list(group, "relevant_groups", where) for group in raw)
        if any(not group for group in groups):
            raise DatasetError(f"{where}: 'relevant_groups' holds an empty group")
    level = row.get("level")
    if level is not None and (not isinstance(level, int) or isinstance(level, bool)):
        raise DatasetError(f"{where}: 'level' must be an integer")
    return Query(
        id=_string(row, "id", where, allow_number=True),
        text=_string(row, "query", where),
        relevant=relevant,
        acceptable=acceptable,
        relevant_groups=groups,
        kind=kind,
        level=level,
        group=_optional_string(row, "group", where),
        category=_optional_string(row, "category", where),
        source=_optional_string(row, "source", where),
        lang=_optional_string(row, "lang", where),
    )


def _rows(path: Path) -> Iterator[tuple[str, Mapping[str, Any]]]:
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError as exc:
        raise DatasetError(f"{path}: file not found") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise DatasetError(f"{path}: cannot read: {exc}") from exc
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{where}: not valid JSON ({exc.msg} at column {exc.colno})") from exc
        if not isinstance(row, dict):
            raise DatasetError(f"{where}: each line must be a JSON object")
        yield where, row


def _string(row: Mapping[str, Any], key: str, where: str, *, allow_number: bool = False) -> str:
    value = row.get(key)
    if allow_number and isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str) or not value:
        raise DatasetError(f"{where}: {key!r} is missing or not a non-empty string")
    return value


def _optional_string(row: Mapping[str, Any], key: str, where: str) -> str | None:
    value = row.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise DatasetError(f"{where}: {key!r} must be a string")
    return value


def _ids(row: Mapping[str, Any], key: str, where: str, *, required: bool = True) -> tuple[str, ...]:
    if key not in row:
        if required:
            raise DatasetError(f"{where}: {key!r} is missing")
        return ()
    return _id_list(row[key], key, where)


def _id_list(value: Any, key: str, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(item, str) and item for item in value):
        raise DatasetError(f"{where}: {key!r} must be a list of tool id strings")
    return tuple(dict.fromkeys(value))
