"""Overlay files: user-written phrases, synonyms and example requests for tools, kept next to a registry.

Format (JSON), documented in docs/learning.md:

    {"version": 1,
     "tools": {
        "git__git_log":  {"phrases": ["show commit history"], "synonyms": ["changelog"],
                          "examples": ["what changed in the repo last week?"]},
        "sqlite__*":     {"synonyms": ["database", "SQL"]}}}

Keys are exposed tool ids (what `search_tools` returns), or shell-style globs over them (`*`, `?`,
`[...]`). A file is validated as a whole when loaded; a mistake raises ConfigError naming the
file, the key and what to fix. Whether a pattern matches any tool is checked against the live
catalog (`unmatched_patterns`), because upstreams come and go and that is not an error.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import jsonschema

from toolscout.errors import ConfigError
from toolscout.json_files import read_json_file
from toolscout.learning.phrases import MAX_PHRASE_CHARS, MAX_PHRASES_PER_TOOL, merge_phrases

__all__ = [
    "FIELDS",
    "OVERLAY_SUFFIX",
    "OVERLAY_VERSION",
    "SCHEMA",
    "Overlay",
    "OverlayEntry",
    "discover_overlays",
    "load_overlay",
    "load_overlays",
    "overlay_path_for",
    "parse_overlay",
    "unmatched_patterns",
]

logger = logging.getLogger(__name__)

OVERLAY_VERSION = 1
# `servers.json` keeps its overlay in `servers.overlay.json`.
OVERLAY_SUFFIX = ".overlay.json"
FIELDS = ("phrases", "synonyms", "examples")
_FORMAT_ADVICE = "The format is described in docs/learning.md."

_PHRASE_LIST = {
    "type": "array",
    "items": {"type": "string", "minLength": 1, "maxLength": MAX_PHRASE_CHARS},
    "maxItems": MAX_PHRASES_PER_TOOL,
}
SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["version", "tools"],
    "additionalProperties": False,
    "properties": {
        "$schema": {"type": "string"},
        "description": {"type": "string"},
        "version": {"const": OVERLAY_VERSION},
        "tools": {
            "type": "object",
            # Tool ids use [A-Za-z0-9_-]; globs add * ? [ ] and !.
            "propertyNames": {"pattern": r"^[A-Za-z0-9_*?\[\]!-]{1,128}$"},
            "additionalProperties": {
                "type": "object",
                "additionalProperties": False,
                "minProperties": 1,
                "properties": {name: _PHRASE_LIST for name in FIELDS},
            },
        },
    },
}
_VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)


@dataclass(frozen=True)
class OverlayEntry:
    """What one key of an overlay file adds to the tools it matches."""

    pattern: str
    phrases: tuple[str, ...] = ()
    synonyms: tuple[str, ...] = ()
    examples: tuple[str, ...] = ()

    def matches(self, tool_id: str) -> bool:
        return fnmatchcase(tool_id, self.pattern)

    @property
    def texts(self) -> tuple[str, ...]:
        return self.phrases + self.synonyms + self.examples


@dataclass(frozen=True)
class Overlay:
    """One loaded overlay file; entries keep the file's order."""

    source: str
    entries: tuple[OverlayEntry, ...]

    def phrases_for(self, tool_id: str) -> tuple[str, ...]:
        """Every phrase this file gives `tool_id`, in file order, deduplicated."""
        return merge_phrases(*(entry.texts for entry in self.entries if entry.matches(tool_id)))


def _location(path: Iterable[Any]) -> str:
    parts = list(path)
    if not parts:
        return "the top level"
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f'["{part}"]' if text else str(part))
    return text


def _hint(error: jsonschema.ValidationError) -> str:
    depth = len(error.absolute_path)
    if error.validator == "const":
        return f'set "version": {OVERLAY_VERSION}'
    if "propertyNames" in error.absolute_schema_path:
        return "use a tool id as search_tools shows it, or a glob over ids such as 'github__*'"
    if depth <= 1 and error.validator in ("required", "additionalProperties", "type"):
        return 'an overlay is {"version": 1, "tools": {"<tool id or glob>": {...}}}'
    return "each tool entry may have " + ", ".join(FIELDS) + ": lists of non-empty strings"


def _message(error: jsonschema.ValidationError) -> str:
    if "propertyNames" in error.absolute_schema_path:
        return f"the key {error.instance!r} is not a tool id or a glob"
    return error.message


def parse_overlay(document: Any, source: str) -> Overlay:
    """Validate an already-parsed overlay document; `source` names it in errors."""
    errors = sorted(_VALIDATOR.iter_errors(document), key=lambda e: list(map(str, e.absolute_path)))
    if errors:
        lines = [
            f"  at {_location(error.absolute_path)}: {_message(error)} ({_hint(error)})"
            for error in errors[:5]
        ]
        more = f"\n  ... and {len(errors) - 5} more" if len(errors) > 5 else ""
        raise ConfigError(
            f"overlay file {source} is not valid:\n" + "\n".join(lines) + more
            + "\n" + _FORMAT_ADVICE
        )
    entries = tuple(
        OverlayEntry(pattern, *(tuple(body.get(name, ())) for name in FIELDS))
        for pattern, body in document["tools"].items()
    )
    return Overlay(source=source, entries=entries)


def load_overlay(path: Path) -> Overlay:
    """Read and validate one overlay file."""
    return parse_overlay(read_json_file(path, "overlay file", advice=_FORMAT_ADVICE), str(path))


def load_overlays(paths: Iterable[Path]) -> tuple[Overlay, ...]:
    return tuple(load_overlay(Path(path)) for path in paths)


def overlay_path_for(registry: Path) -> Path:
    """Where the overlay of a registry file lives: `servers.json` -> `servers.overlay.json`."""
    return registry.with_name(registry.stem + OVERLAY_SUFFIX)


def discover_overlays(registry_files: Iterable[Path]) -> list[Path]:
    """The overlay files that exist next to the registry files, in their order (a URL has none)."""
    found = (overlay_path_for(registry) for registry in registry_files)
    return [path for path in found if path.is_file()]


def unmatched_patterns(overlays: Sequence[Overlay], tool_ids: Iterable[str]) -> list[tuple[str, str]]:
    """(file, pattern) for every overlay key that matches none of `tool_ids` (likely a typo)."""
    ids = list(tool_ids)
    return [
        (overlay.source, entry.pattern)
        for overlay in overlays
        for entry in overlay.entries
        if not any(entry.matches(tool_id) for tool_id in ids)
    ]
