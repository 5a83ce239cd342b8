"""The one place where MCP `Tool` objects become toolscout `ToolRecord`s.

Ids are assigned over the whole catalog at once (`toolscout.naming`, as for prompts), because whether a tool's
readable id needs a hash suffix depends on which other tools share its readable form.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import mcp_types as types

from toolscout.catalog import ToolRecord
from toolscout.naming import NameMap

__all__ = ["build_catalog", "tool_record"]


def _annotations(tool: types.Tool) -> dict[str, Any] | None:
    if tool.annotations is None:
        return None
    # Wire (camelCase) keys, as an agent reads them in tools/list.
    return tool.annotations.model_dump(by_alias=True, exclude_none=True, mode="json") or None


def tool_record(server: str, tool: types.Tool, tool_id: str) -> ToolRecord:
    """Convert one upstream tool into the record toolscout indexes and exposes under `tool_id`."""
    return ToolRecord(
        id=tool_id,
        name=tool.name,
        server=server,
        description=tool.description or "",
        input_schema=dict(tool.input_schema or {}),
        title=tool.title,
        annotations=_annotations(tool),
        output_schema=dict(tool.output_schema) if tool.output_schema else None,
        task_support=tool.execution.task_support if tool.execution is not None else None,
    )


def build_catalog(tools_by_server: Mapping[str, Sequence[types.Tool]]) -> tuple[ToolRecord, ...]:
    """Records for every tool of every server, ordered by server then upstream listing order."""
    pairs = [(server, tool.name) for server, tools in tools_by_server.items() for tool in tools]
    ids = NameMap.of(pairs).by_pair
    records: list[ToolRecord] = []
    for server in sorted(tools_by_server):
        seen: set[str] = set()
        for tool in tools_by_server[server]:
            # A server listing the same name twice gets one record: the first definition wins,
            # since that is the one a call by name reaches on most servers.
            if tool.name in seen:
                continue
            seen.add(tool.name)
            records.append(tool_record(server, tool, ids[(server, tool.name)]))
    return tuple(records)
