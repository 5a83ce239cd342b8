"""The text a model reads about the gateway, generated from the live catalog.

An agent sees two tools and none of the upstream tools, so the server instructions and the
`search_tools` description must tell it what can be found (which servers, what each is for, how
many tools) and that it should search before concluding it cannot do something. Each result of
`search_tools` (and of `toolscout search --json`) is a `search_entry`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from toolscout.catalog import Catalog
from toolscout.upstream import State, UpstreamStatus
from toolscout.wording import plural

if TYPE_CHECKING:
    from toolscout.search import SearchHit

__all__ = ["execute_description", "instructions", "search_description", "search_entry"]

# The tool description is repeated in every request a host makes: keep it short.
_DESCRIPTION_SERVERS = 12
_INSTRUCTION_SERVERS = 40


def _server_lines(statuses: Sequence[UpstreamStatus], catalog: Catalog, limit: int) -> list[str]:
    counts = Counter(tool.server for tool in catalog.tools)
    up = [s for s in statuses if s.state is State.UP and counts[s.name]]
    up.sort(key=lambda s: (-counts[s.name], s.name))
    lines = [
        f"- {s.name} ({plural(counts[s.name], 'tool')}): {s.summary}"
        for s in up[:limit]
    ]
    if len(up) > limit:
        rest = up[limit:]
        lines.append(f"- and {len(rest)} more: {', '.join(s.name for s in rest)}")
    return lines


def _catalog_size(catalog: Catalog) -> str:
    servers = len({tool.server for tool in catalog.tools})
    return f"{plural(len(catalog.tools), 'tool')} from {plural(servers, 'server')}"


def _unavailable(statuses: Sequence[UpstreamStatus]) -> list[str]:
    return [s.name for s in statuses if s.state is not State.UP]


def search_description(statuses: Sequence[UpstreamStatus], catalog: Catalog) -> str:
    lines = _server_lines(statuses, catalog, _DESCRIPTION_SERVERS)
    head = (
        "Find tools for a task among the tools of the connected MCP servers. Describe what you need "
        "in plain words (e.g. 'convert a time between time zones'); returns the best matches, each "
        "with the `name` to pass to execute_tool, its description and its full input schema. These "
        "tools are not listed anywhere else: search before concluding that something cannot be done."
    )
    if not lines:
        return head + "\n\nNo upstream server is connected right now."
    return head + f"\n\n{_catalog_size(catalog)}:\n" + "\n".join(lines)


def execute_description() -> str:
    return (
        "Run a tool found with search_tools. `name` is the tool's `name` (its id) exactly as "
        "search_tools returned it; `arguments` is a JSON object matching that tool's input schema. Returns the "
        "tool's own result. Errors (unknown id, invalid arguments, an unavailable server) come back "
        "as error results that say how to fix the call."
    )


def instructions(statuses: Sequence[UpstreamStatus], catalog: Catalog) -> str:
    lines = _server_lines(statuses, catalog, _INSTRUCTION_SERVERS)
    text = (
        "toolscout connects you to the tools of several MCP servers through two tools. When a task "
        "needs a capability you do not see among your tools, call search_tools with a short "
        "description of the need, pick a result, and call execute_tool with its `name` and arguments "
        "that follow its input schema."
    )
    if lines:
        text += f"\n\nAvailable now ({_catalog_size(catalog)}):\n" + "\n".join(lines)
    else:
        text += "\n\nNo upstream server is connected yet; servers that come up later join the search."
    down = _unavailable(statuses)
    if down:
        text += f"\n\nNot available right now: {', '.join(down)}."
    return text


def search_entry(hit: SearchHit) -> dict[str, Any]:
    """One search result, shaped like a tools/list entry plus what routing needs.

    `name` is what execute_tool's `name` takes (the id, unique across servers), as in a tools/list
    entry an agent would call; the upstream's own name for the tool is `upstream_name`.
    """
    tool = hit.tool
    entry: dict[str, Any] = {
        "name": tool.id,
        "id": tool.id,
        "server": tool.server,
        "upstream_name": tool.name,
        "title": tool.display_title,
        "description": tool.description,
        "inputSchema": dict(tool.input_schema),
    }
    if tool.output_schema:
        entry["outputSchema"] = dict(tool.output_schema)
    if tool.annotations:
        entry["annotations"] = dict(tool.annotations)
    entry["score"] = round(hit.score, 4)
    return entry
