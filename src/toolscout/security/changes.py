"""What changed between two definitions of a tool, for people and for agents.

`compare(old, new)` returns a `DefinitionChange` with two views:

- `summary`: short lines naming *which* parts changed (description, schema paths, annotation keys)
  without quoting the new text. This is what an agent sees when a quarantined tool is refused: the
  new text may be exactly the injection the quarantine is holding back.
- `diff`: the full human-readable diff (description line diff via difflib, schema and annotation
  leaves added / removed / changed) that `toolscout approve` shows a person.

Definitions are the fingerprinted fields as plain data: name, title, description, input_schema,
output_schema, annotations. Definitions approved before title and output schema were fingerprinted
do not record them; those two are then not compared (nothing is known of what was approved).
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["DefinitionChange", "compare"]

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n")
_UNSAFE_PATH = re.compile(r"[^A-Za-z0-9_.\[\]-]")
_MAX_PATHS = 5


@dataclass(frozen=True)
class DefinitionChange:
    summary: tuple[str, ...]
    diff: str

    @property
    def changed(self) -> bool:
        return bool(self.summary)


def _flatten(node: Any, path: str, out: dict[str, str]) -> dict[str, str]:
    """Leaves of a JSON value as {dotted path: JSON text}; empty containers count as leaves."""
    if isinstance(node, Mapping) and node:
        for key in sorted(node, key=str):
            _flatten(node[key], f"{path}.{key}" if path else str(key), out)
    elif isinstance(node, list) and node:
        for index, item in enumerate(node):
            _flatten(item, f"{path}[{index}]", out)
    else:
        out[path or "(root)"] = json.dumps(node, ensure_ascii=False, sort_keys=True, default=str)
    return out


def _safe_path(path: str) -> str:
    # Paths contain property names chosen by the upstream; keep them inert and short for agents.
    cleaned = _UNSAFE_PATH.sub("_", path)
    return cleaned if len(cleaned) <= 60 else cleaned[:57] + "..."


def _tree_change(label: str, old: Any, new: Any) -> tuple[list[str], list[str]]:
    before, after = _flatten(old or {}, "", {}), _flatten(new or {}, "", {})
    added = [p for p in after if p not in before]
    removed = [p for p in before if p not in after]
    changed = [p for p in after if p in before and before[p] != after[p]]
    if not (added or removed or changed):
        return [], []
    lines = [f"{label}:"]
    lines += [f"  + {p} = {after[p]}" for p in added]
    lines += [f"  - {p} = {before[p]}" for p in removed]
    lines += [f"  ~ {p}: {before[p]} -> {after[p]}" for p in changed]
    counts = ", ".join(
        f"{len(paths)} {word}" for paths, word in ((added, "added"), (removed, "removed"), (changed, "changed")) if paths
    )
    paths = [_safe_path(p) for p in (added + removed + changed)]
    shown = ", ".join(paths[:_MAX_PATHS]) + (", ..." if len(paths) > _MAX_PATHS else "")
    return [f"{label}: {counts} ({shown})"], lines


def _description_change(old: str, new: str) -> tuple[list[str], list[str]]:
    if old == new:
        return [], []
    before = [s for s in _SENTENCE.split(old) if s.strip()]
    after = [s for s in _SENTENCE.split(new) if s.strip()]
    diff = list(difflib.unified_diff(before, after, "description (approved)", "description (now)", n=1, lineterm=""))
    plus = sum(1 for line in diff if line.startswith("+") and not line.startswith("+++"))
    minus = sum(1 for line in diff if line.startswith("-") and not line.startswith("---"))
    return [f"description changed ({plus} sentence(s) added, {minus} removed)"], diff


def compare(old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> DefinitionChange:
    """The change from `old` (None: never approved) to `new`."""
    if old is None:
        lines = ["new tool, never approved:", json.dumps(dict(new), indent=2, ensure_ascii=False, default=str)]
        return DefinitionChange(("new tool, never approved",), "\n".join(lines))
    summary: list[str] = []
    diff: list[str] = []
    for key in ("name", "title"):
        if key in old and old.get(key) != new.get(key):
            summary.append(f"{key} changed")
            diff.append(f"{key}: {old.get(key)!r} -> {new.get(key)!r}")
    parts = [
        _description_change(str(old.get("description") or ""), str(new.get("description") or "")),
        _tree_change("input schema", old.get("input_schema"), new.get("input_schema")),
    ]
    if "output_schema" in old:
        parts.append(_tree_change("output schema", old.get("output_schema"), new.get("output_schema")))
    parts.append(_tree_change("annotations", old.get("annotations"), new.get("annotations")))
    for part in parts:
        summary += part[0]
        diff += part[1]
    return DefinitionChange(tuple(summary), "\n".join(diff))
