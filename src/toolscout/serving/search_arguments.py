"""What `search_tools` was asked, read from its arguments: anything it does not take is refused
with the arguments it does take, never silently ignored."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from toolscout.errors import ToolCallError
from toolscout.serving.meta_tools import DEFAULT_LIMIT, MAX_LIMIT, MAX_QUERY_CHARS, META_TOOLS
from toolscout.serving.validation import closest_parameter

if TYPE_CHECKING:
    from toolscout.gateway import GatewayView

__all__ = ["search_arguments", "shown"]

# What search_tools takes (anything else is refused, not ignored).
_SEARCH_ARGUMENTS: tuple[str, ...] = tuple(META_TOOLS[0].input_schema["properties"])


def search_arguments(
    arguments: dict[str, Any], gateway: GatewayView
) -> tuple[str, int, list[str] | None, int | None]:
    """(query, limit, servers, max_tokens) of search_tools' `arguments`; ToolCallError saying what
    is wrong and what search_tools takes."""
    unknown_keys = [key for key in arguments if key not in _SEARCH_ARGUMENTS]
    if unknown_keys:
        # Silently ignored, a misspelled `limit` would give the default number of tools unasked.
        key = unknown_keys[0]
        hint = closest_parameter(key, _SEARCH_ARGUMENTS)
        raise ToolCallError(
            f"search_tools has no argument {shown(key)}{f' (did you mean {hint!r}?)' if hint else ''}. "
            f"Its arguments: 'query' (required: the task in plain words), 'limit' (how many tools, 1 to "
            f"{MAX_LIMIT}, default {DEFAULT_LIMIT}), 'servers' (only these servers' tools) and 'max_tokens' "
            "(a token budget for the answer)."
        )
    query = arguments.get("query")
    if not isinstance(query, str) or not query.strip():
        raise ToolCallError(
            "'query' must be a non-empty string describing the task, e.g. 'convert a time between time zones'."
        )
    if len(query) > MAX_QUERY_CHARS:
        raise ToolCallError(
            f"'query' is {len(query):,} characters; describe the task in at most {MAX_QUERY_CHARS:,}, "
            "e.g. 'convert a time between time zones'."
        )
    limit = arguments.get("limit", DEFAULT_LIMIT)
    if limit is None:
        limit = DEFAULT_LIMIT
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise ToolCallError(f"'limit' must be an integer from 1 to {MAX_LIMIT}; got {shown(limit)}.")
    servers = arguments.get("servers")
    if isinstance(servers, str):
        servers = [servers]
    if servers is not None:
        if not isinstance(servers, list) or not all(isinstance(s, str) for s in servers):
            raise ToolCallError("'servers' must be a list of server names.")
        known = gateway.server_names()
        unknown = [s for s in servers if s not in known]
        if unknown:
            raise ToolCallError(
                f"Unknown server name(s): {', '.join(map(shown, unknown[:5]))}. Known servers: {', '.join(known) or 'none'}."
            )
        servers = servers or None
    max_tokens = arguments.get("max_tokens")
    if max_tokens is not None and (isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1):
        raise ToolCallError(f"'max_tokens' must be a positive integer; got {shown(max_tokens)}.")
    return query.strip(), limit, servers, max_tokens


def shown(value: Any) -> str:
    """A value as JSON for an error message, shortened: agents sometimes send huge ones."""
    try:
        text = json.dumps(value, default=str)
    except (ValueError, RecursionError):
        text = type(value).__name__
    return text if len(text) <= 80 else text[:77] + "..."
