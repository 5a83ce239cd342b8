"""The text a model reads about the gateway.

An agent sees two tools and none of the upstream tools, so it must be told what can be found
(which servers, what each is for, how many tools) and that it should search before concluding it
cannot do something. The two tools' definitions never change (`search_description`,
`execute_description`): a client that pins tool definitions would otherwise take every upstream
joining or leaving for a rug pull. What changes goes where an agent reads the live state: the
server instructions (`instructions`, at each session's start) and every search answer
(`search_servers`). Each result of `search_tools` (and of `toolscout search --json`) is a
`search_entry`.
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

__all__ = ["execute_description", "instructions", "search_description", "search_entry", "search_servers"]

_INSTRUCTION_SERVERS = 40
# Every search answer names the servers: what each is for while they are few, names and counts beyond.
_ANSWER_SERVERS_WITH_PURPOSE = 12
_ANSWER_PURPOSE_CHARS = 100


def _server_lines(
    statuses: Sequence[UpstreamStatus], catalog: Catalog, limit: int, *, purpose_chars: int | None = None
) -> list[str]:
    """'name (N tools): what it is for' per server that is up (or starting, searched in the tools it
    listed last time: 'name (N tools, starting)'), most tools first; `limit` with purposes, the rest
    by name; `purpose_chars`: purposes shortened to that length."""
    counts = Counter(tool.server for tool in catalog.tools)
    up = [s for s in statuses if s.state in (State.UP, State.STARTING) and counts[s.name]]
    up.sort(key=lambda s: (-counts[s.name], s.name))
    lines = []
    for s in up[:limit]:
        about = s.summary
        if purpose_chars is not None and len(about) > purpose_chars:
            about = about[: purpose_chars - 3].rstrip() + "..."
        starting = ", starting" if s.state is State.STARTING else ""
        lines.append(f"{s.name} ({plural(counts[s.name], 'tool')}{starting}): {about}")
    if len(up) > limit:
        rest = up[limit:]
        lines.append(f"and {len(rest)} more: {', '.join(f'{s.name} ({counts[s.name]})' for s in rest)}")
    return lines


def _catalog_size(catalog: Catalog) -> str:
    servers = len({tool.server for tool in catalog.tools})
    return f"{plural(len(catalog.tools), 'tool')} from {plural(servers, 'server')}"


def _not_up(statuses: Sequence[UpstreamStatus], state: State) -> list[str]:
    """Servers in `state` an agent should hear of (not entries skipped on purpose)."""
    return [s.name for s in statuses if s.state is state and not s.skipped]


def search_description() -> str:
    """The same whatever is connected (see the module docstring)."""
    return (
        "Find tools for a task among the tools of the connected MCP servers. Describe what you need "
        "in plain words (e.g. 'convert a time between time zones'); returns the best matches, each "
        "with the `name` to pass to execute_tool, its description and its full input schema. These "
        "tools are not listed anywhere else: search before concluding that something cannot be done. "
        "Which servers are connected and what each is for is in the server instructions, and every "
        "answer lists them as they are now (`servers`). `confidence` is the probability that the "
        "first tool serves the task; when it is low, no connected tool may do it (the notice says so)."
    )


def search_servers(statuses: Sequence[UpstreamStatus], catalog: Catalog) -> list[str]:
    """The servers as a search answer lists them: 'notes (4 tools): Keep notes', ...; short."""
    return _server_lines(statuses, catalog, _ANSWER_SERVERS_WITH_PURPOSE, purpose_chars=_ANSWER_PURPOSE_CHARS)


def execute_description() -> str:
    return (
        "Run a tool found with search_tools. `name` is the tool's `name` (its id) exactly as "
        "search_tools returned it; `arguments` is a JSON object matching that tool's input schema. Returns the "
        "tool's own result. Errors (unknown id, invalid arguments, an unavailable server) come back "
        "as error results that say how to fix the call."
    )


def instructions(statuses: Sequence[UpstreamStatus], catalog: Catalog) -> str:
    lines = [f"- {line}" for line in _server_lines(statuses, catalog, _INSTRUCTION_SERVERS)]
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
    starting = _not_up(statuses, State.STARTING)
    listed_before = [name for name in starting if name in {tool.server for tool in catalog.tools}]
    if listed_before:
        text += (f"\n\nStill starting, searchable in the tools they listed last time: {', '.join(listed_before)}; "
                 "execute_tool waits for their start.")
    if starting := [name for name in starting if name not in listed_before]:
        text += f"\n\nStill starting: {', '.join(starting)}; their tools join the search when ready."
    down = _not_up(statuses, State.DOWN)
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
