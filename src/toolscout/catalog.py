"""Tool records: the one shape every part of toolscout uses for a tool, and the `Catalog` snapshot
of them. Their exposed ids are given by `toolscout.naming`.

A ToolRecord is plain data (no MCP types), so retrieval and evaluation code can use it without
importing the MCP SDK; `toolscout.upstream` converts MCP `Tool` objects into records.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["DEFINITION_FIELDS", "LEGACY_FIELDS", "Catalog", "ToolOverride", "ToolRecord", "fingerprint_of"]

# Everything of a tool definition that reaches a model (search results show the title and the output
# schema too), so a change to any of it changes the fingerprint and is caught by pinning.
DEFINITION_FIELDS = ("name", "title", "description", "input_schema", "output_schema", "annotations")
# What fingerprints covered before title and output schema were added: pin files written then hold
# fingerprints of this composition, and toolscout.security.pinning upgrades them in place.
LEGACY_FIELDS = ("name", "description", "input_schema", "annotations")


@dataclass(frozen=True)
class ToolOverride:
    """How the operator reshapes one upstream tool (a registry entry's "overrides"): agents see the
    new name, description and schema; calls reach the upstream under its own name, with `fixed`
    added. Arguments in `hide` or `fixed` are not shown, and a call that passes one is refused."""

    name: str | None = None
    description: str | None = None
    hide: tuple[str, ...] = ()
    fixed: Mapping[str, Any] = field(default_factory=dict)

    @property
    def withheld_arguments(self) -> frozenset[str]:
        """The arguments agents neither see nor may pass."""
        return frozenset(self.hide) | frozenset(self.fixed)


@dataclass(frozen=True)
class ToolRecord:
    """One upstream tool as toolscout indexes and exposes it."""

    id: str
    name: str
    server: str
    description: str = ""
    input_schema: Mapping[str, Any] = field(default_factory=dict)
    title: str | None = None
    annotations: Mapping[str, Any] | None = None
    output_schema: Mapping[str, Any] | None = None
    # Whether the upstream runs the tool as a task (long-running call, 2025-11-25 `execution.taskSupport`):
    # "required" ones cannot be called through toolscout, which does not pass tasks through.
    task_support: str | None = None
    # User-language phrases, synonyms and example requests attached to the tool (overlays, learning).
    expansion: tuple[str, ...] = ()
    # The operator's reshaping of it (`ToolOverride`) and the upstream's own name, when overridden.
    override: ToolOverride | None = None
    upstream_name: str | None = None

    @property
    def call_name(self) -> str:
        """The name the upstream knows this tool by: what a call sends."""
        return self.upstream_name or self.name

    @property
    def display_title(self) -> str:
        """The spec's display precedence: title, annotations.title, then name."""
        if self.title:
            return self.title
        if self.annotations and self.annotations.get("title"):
            return str(self.annotations["title"])
        return self.name

    def definition(self, fields: tuple[str, ...] = DEFINITION_FIELDS) -> dict[str, Any]:
        """The fields of the definition a model reads, as given (what the fingerprint covers)."""
        return {name: getattr(self, name) for name in fields}

    @property
    def fingerprint(self) -> str:
        """SHA-256 over everything of the definition a model reads (DEFINITION_FIELDS)."""
        return fingerprint_of(self.definition())

    @property
    def legacy_fingerprint(self) -> str:
        """The fingerprint as composed before it covered title and output schema (LEGACY_FIELDS)."""
        return fingerprint_of(self.definition(LEGACY_FIELDS))


def fingerprint_of(definition: Mapping[str, Any]) -> str:
    """SHA-256 of a definition's canonical JSON; the only place fingerprints are computed."""
    payload = json.dumps(definition, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Catalog:
    """An immutable snapshot of the tools of the connected upstreams.

    `tools` are the ones agents may search and call; `withheld` maps the ids of tools a screen
    (pinning, poisoning scan) keeps from them to the reason, which `execute_tool` reports. Those
    are the upstreams' own ids (the ones operators see); `withheld_as` maps the id an operator's
    override gives a withheld tool to its own, so an agent calling it by that id is told why too.
    """

    tools: tuple[ToolRecord, ...] = ()
    by_id: Mapping[str, ToolRecord] = field(default_factory=dict)
    withheld: Mapping[str, str] = field(default_factory=dict)
    withheld_as: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(
        cls, tools: Sequence[ToolRecord], withheld: Mapping[str, str] | None = None,
        withheld_as: Mapping[str, str] | None = None,
    ) -> Catalog:
        withheld = dict(withheld or {})
        kept = tuple(tool for tool in tools if tool.id not in withheld)
        aliases = {shown: own for shown, own in (withheld_as or {}).items() if own in withheld}
        return cls(tools=kept, by_id={tool.id: tool for tool in kept}, withheld=withheld, withheld_as=aliases)

    def withheld_reason(self, tool_id: str) -> str | None:
        """Why the tool an agent calls `tool_id` is withheld, or None if it is not."""
        return self.withheld.get(self.withheld_as.get(tool_id, tool_id))

    @property
    def fingerprint(self) -> tuple[object, ...]:
        """Changes whenever a tool appears, disappears, changes its definition or is withheld."""
        return (tuple((tool.id, tool.fingerprint) for tool in self.tools), tuple(sorted(self.withheld.items())))
