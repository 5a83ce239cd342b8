"""A server whose tool list grows on demand, announcing it one way only (run as a stdio subprocess).

    announcing_server.py listen    # speaks 2026-07-28 too; announces only on subscriptions/listen streams
    announcing_server.py session   # speaks only the initialize handshake; announces on the session

Calling `add_export_tool` adds `export_report` and announces the change the chosen way, so a test
sees whether the gateway follows each protocol era's own mechanism.
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.lowlevel.server import NotificationOptions
from mcp.server.runner import serve_loop
from mcp.server.stdio import stdio_server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged

ANNOUNCE = sys.argv[1]
ADD = types.Tool(
    name="add_export_tool",
    description="Turn on the report export tool of this server.",
    input_schema={"type": "object", "properties": {}},
)
EXPORT = types.Tool(
    name="export_report",
    description="Export the quarterly sales report as a spreadsheet file.",
    input_schema={"type": "object", "properties": {"quarter": {"type": "string"}}},
)
TOOLS = [ADD]
bus = InMemorySubscriptionBus()


async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    if params.name == ADD.name and EXPORT not in TOOLS:
        TOOLS.append(EXPORT)
        if ANNOUNCE == "listen":
            await bus.publish(ToolsListChanged())
        else:
            await ctx.session.send_tool_list_changed()
    return types.CallToolResult(content=[types.TextContent(text=f"called {params.name}")])


server = Server(
    "announcing",
    on_list_tools=list_tools,
    on_call_tool=call_tool,
    on_subscriptions_listen=ListenHandler(bus) if ANNOUNCE == "listen" else None,
)


async def main() -> None:
    options = server.create_initialization_options(NotificationOptions(tools_changed=ANNOUNCE == "session"))
    async with stdio_server() as (read, write):
        if ANNOUNCE == "listen":
            await server.run(read, write, options)
        else:
            # The handshake-only loop: what a server built before protocol 2026-07-28 speaks.
            async with server.lifespan(server) as state:
                await serve_loop(server, read, write, lifespan_state=state, init_options=options)


if __name__ == "__main__":
    anyio.run(main)
