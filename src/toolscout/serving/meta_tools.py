"""The definitions of the two tools every client sees, `search_tools` and `execute_tool`: their
names, limits and schemas. Built once, the same for every client and every catalog (what changes
is told in the server instructions and in each search answer, `describe.py`).
"""

from __future__ import annotations

from typing import Any

import mcp_types as types

from toolscout.serving import describe

__all__ = ["DEFAULT_LIMIT", "EXECUTE_TOOL", "MAX_LIMIT", "MAX_QUERY_CHARS", "META_TOOLS", "RUN_CODE", "SEARCH_TOOL"]

SEARCH_TOOL = "search_tools"
EXECUTE_TOOL = "execute_tool"
# The third tool, only with `serve --code-mode`; defined in `code_mode.py`, which loads the sandbox.
RUN_CODE = "run_code"
DEFAULT_LIMIT = 5
MAX_LIMIT = 50
# A search query describes a task in a sentence or two; thousands of characters are a mistake
# (a document pasted in) and would only slow every retrieval signal down.
MAX_QUERY_CHARS = 2000

_SEARCH_OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "tools": {"type": "array", "items": {"type": "object"}},
        "notice": {"type": ["string", "null"]},
        "omitted": {"type": "integer", "minimum": 0},
        "confidence": {
            "type": ["number", "null"], "minimum": 0, "maximum": 1,
            "description": "Probability (calibrated) that the first tool returned serves the request: "
                           "of answers with confidence 0.8, about 80% had a right first tool. Low means "
                           "probably no connected tool does it. null while it cannot be computed.",
        },
        # True when no tool matches the request well (the notice then says so and names the closest).
        "weak_match": {"type": "boolean"},
        # The servers connected now, with their tool counts and what each is for.
        "servers": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["tools", "omitted"],
}


# The definitions of the two tools: built once, the same for every client and every catalog.
META_TOOLS: tuple[types.Tool, ...] = (
    types.Tool(
        name=SEARCH_TOOL,
        title="Search tools",
        description=describe.search_description(),
        input_schema={
            "type": "object",
            "properties": {
                "query": {"type": "string", "minLength": 1, "description": "What you need to do, in plain words."},
                "limit": {
                    "type": "integer", "minimum": 1, "maximum": MAX_LIMIT, "default": DEFAULT_LIMIT,
                    "description": "How many tools to return.",
                },
                "servers": {
                    "type": "array", "items": {"type": "string"},
                    "description": "Only search the tools of these servers (optional); the server "
                                   "instructions and every search answer name them.",
                },
                "max_tokens": {
                    "type": "integer", "minimum": 1,
                    "description": "Token budget for the result; tools that do not fit are left out.",
                },
            },
            "required": ["query"],
        },
        output_schema=_SEARCH_OUTPUT_SCHEMA,
        annotations=types.ToolAnnotations(title="Search tools", read_only_hint=True, open_world_hint=False),
    ),
    types.Tool(
        name=EXECUTE_TOOL,
        title="Execute a tool",
        description=describe.execute_description(),
        input_schema={
            "type": "object",
            "properties": {
                "name": {"type": "string", "description": (
                    "The tool's `name` (also its `id`) exactly as search_tools returned it. The "
                    "upstream's own tool name works when only one server has it, and so do "
                    "server.tool, server/tool and mcp__server__tool."
                )},
                "arguments": {
                    "type": ["object", "string"],
                    "description": "Arguments matching the tool's input schema, as a JSON object.",
                },
            },
            "required": ["name"],
        },
        annotations=types.ToolAnnotations(
            title="Execute a tool", read_only_hint=False, destructive_hint=True, open_world_hint=True
        ),
    ),
)
