"""A registry entry's "overrides": the operator renames a tool, rewrites its description, or hides
or fixes some of its arguments (`toolscout.catalog.ToolOverride`).

    "overrides": {"<upstream tool name>": {"name": "...", "description": "...",
                                           "hide": ["arg"], "fixed": {"arg": "value"}}}

Only a file the operator wrote may carry them: a registry fetched from a URL is someone else's, and
a description it chose would reach agents past the poisoning screen, which reads the upstream's
own text (`toolscout.registry.formats` drops them there).
"""

from __future__ import annotations

import re
from typing import Any

from toolscout.catalog import ToolOverride
from toolscout.errors import ConfigError

__all__ = ["OVERRIDES_SCHEMA", "parse_overrides"]

# The MCP spec's tool-name rule; ids built from it are kept to 64 characters by toolscout.naming.
_TOOL_NAME = "^[A-Za-z0-9_.-]{1,128}$"
_TOOL_NAME_RULE = re.compile(_TOOL_NAME)

OVERRIDES_SCHEMA: dict[str, Any] = {
    "type": "object",
    "additionalProperties": {
        "type": "object",
        "properties": {
            "name": {"type": "string", "pattern": _TOOL_NAME},
            "description": {"type": "string", "minLength": 1},
            "hide": {"type": "array", "items": {"type": "string", "minLength": 1}},
            "fixed": {"type": "object"},
        },
        "additionalProperties": False,
        "minProperties": 1,
    },
}


def parse_overrides(value: object, where: str) -> dict[str, ToolOverride]:
    """The overrides of one entry (already checked against OVERRIDES_SCHEMA), by upstream tool name."""
    if not isinstance(value, dict):
        return {}
    overrides = {}
    for tool, given in value.items():
        if not _TOOL_NAME_RULE.match(tool):
            raise ConfigError(f"{where}: 'overrides' names '{tool}', which is not a tool name (letters, digits, "
                              "'_', '-' and '.', at most 128); use the upstream's own tool name")
        both = sorted(set(given.get("hide", ())) & set(given.get("fixed", {})))
        if both:
            raise ConfigError(f"{where}: overrides.{tool}: {', '.join(both)} is both hidden and fixed; "
                              "a fixed argument is hidden already, so list it under 'fixed' only")
        overrides[tool] = ToolOverride(
            name=given.get("name"),
            description=given.get("description"),
            hide=tuple(dict.fromkeys(given.get("hide", ()))),
            fixed=dict(given.get("fixed", {})),
        )
    return overrides
