"""A server that offers tasks (long-running calls), as far as a client that does not ask for them sees.

    tasks_server.py [--handshake-only]

`render` supports tasks but may run without one (it answers at once then); `archive` runs only as
a task. How it says so depends on the protocol era the client connected with:
- 2025-11-25 (the `initialize` handshake; `--handshake-only` refuses `server/discover`, so a
  client speaking both eras falls back to it): `archive` is listed with `execution.taskSupport:
  "required"`, and a call without the `task` field is refused with -32601, as that revision says;
- 2026-07-28: tasks are the `io.modelcontextprotocol/tasks` extension, advertised in the server's
  capabilities; a call of `archive` from a client that did not declare it is refused with -32021
  (missing required client capability) naming the extension.
The tasks themselves (`tasks/get`, ...) are not served: the mcp SDK does not implement them.
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp_types.jsonrpc import (
    METHOD_NOT_FOUND, MISSING_REQUIRED_CLIENT_CAPABILITY, ErrorData, JSONRPCError, JSONRPCRequest,
)
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
HANDSHAKE_ONLY = "--handshake-only" in sys.argv[1:]
_ARGUMENTS = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}


async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[
        types.Tool(name="render", description="Render a video of the given name.", input_schema=_ARGUMENTS,
                   execution=types.ToolExecution(task_support="optional")),
        types.Tool(name="archive", description="Archive a video of the given name to cold storage.",
                   input_schema=_ARGUMENTS, execution=types.ToolExecution(task_support="required")),
    ])


async def call_tool(ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams) -> types.CallToolResult:
    name = (params.arguments or {}).get("name", "?")
    if params.name == "render":
        return types.CallToolResult(content=[types.TextContent(text=f"rendered {name}")])
    if params.name == "archive":
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            required = types.ClientCapabilities(extensions={TASKS_EXTENSION: {}})
            raise MCPError(
                MISSING_REQUIRED_CLIENT_CAPABILITY, f"Tool 'archive' runs only as a task ({TASKS_EXTENSION})",
                data=types.MissingRequiredClientCapabilityErrorData(required_capabilities=required).model_dump(
                    by_alias=True, exclude_none=True, mode="json"),
            )
        if params.task is None:
            raise MCPError(METHOD_NOT_FOUND, "Tool 'archive' must be called as a task (taskSupport: required)")
    raise MCPError(METHOD_NOT_FOUND, f"Unknown tool: {params.name}")


server = Server("tasks", instructions="Renders and archives videos.", on_list_tools=list_tools, on_call_tool=call_tool)
server.extensions = {TASKS_EXTENSION: {}}


async def _refusing_discover(read: Any, write: Any, to_server: Any) -> None:
    """Pass the client's messages on, answering `server/discover` with -32601 as a server of the
    handshake era does (the SDK's server would take it as the opening of the 2026-07-28 era)."""
    async with to_server:
        async for item in read:
            message = getattr(item, "message", None)
            if isinstance(message, JSONRPCRequest) and message.method == "server/discover":
                error = ErrorData(code=METHOD_NOT_FOUND, message="Method not found", data=message.method)
                await write.send(SessionMessage(JSONRPCError(jsonrpc="2.0", id=message.id, error=error)))
                continue
            await to_server.send(item)


async def main() -> None:
    async with stdio_server() as (read, write):
        if not HANDSHAKE_ONLY:
            await server.run(read, write, server.create_initialization_options())
            return
        to_server, from_client = anyio.create_memory_object_stream[Any](16)
        async with anyio.create_task_group() as tg:
            tg.start_soon(_refusing_discover, read, write, to_server)
            await server.run(from_client, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
