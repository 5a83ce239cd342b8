"""The upstream the soak benchmark runs: one `echo` tool answering at once.

Tiny on purpose: the soak measures what the gateway adds, so the upstream's own work must be ~0.
Over stdio by default; `--http` serves it over streamable HTTP on a free port of 127.0.0.1 and
prints the URL on stderr (the direct baseline over the transport the gateway's clients use).
"""

from __future__ import annotations

import socket
import sys

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.stdio import stdio_server

ECHO = types.Tool(
    name="echo",
    description="Return the given text unchanged.",
    input_schema={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
)


async def list_tools(ctx: object, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[ECHO])


async def call_tool(ctx: object, params: types.CallToolRequestParams) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=str((params.arguments or {}).get("text", "")))])


server = Server("soak", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


async def main_http() -> None:
    import uvicorn

    sock = socket.create_server(("127.0.0.1", 0))
    print(f"serving at http://127.0.0.1:{sock.getsockname()[1]}/mcp", file=sys.stderr, flush=True)
    await uvicorn.Server(uvicorn.Config(server.streamable_http_app(), log_level="warning")).serve(sockets=[sock])


if __name__ == "__main__":
    anyio.run(main_http if "--http" in sys.argv else main)
