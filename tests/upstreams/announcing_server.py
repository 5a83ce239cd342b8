"""A server whose tool list grows on demand, announcing it one way only (run as a stdio subprocess).

    announcing_server.py listen    # speaks 2026-07-28 too; announces only on subscriptions/listen streams
    announcing_server.py session   # speaks only the initialize handshake; announces on the session

Each call of `add_report_tool` adds the next of `export_report` and `archive_report` and announces
the change the chosen way, so a test sees whether the gateway follows each protocol era's own
mechanism. `end_listen_streams` closes the open listen streams gracefully, as a server that is
stopping does.
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
NO_ARGUMENTS: dict[str, Any] = {"type": "object", "properties": {}}
ADD = types.Tool(name="add_report_tool", description="Turn on the next report tool.", input_schema=NO_ARGUMENTS)
END = types.Tool(name="end_listen_streams", description="Close the listen streams.", input_schema=NO_ARGUMENTS)
LATER = [
    types.Tool(
        name="export_report",
        description="Export the quarterly sales report as a spreadsheet file.",
        input_schema={"type": "object", "properties": {"quarter": {"type": "string"}}},
    ),
    types.Tool(
        name="archive_report",
        description="Move an old sales report into the archive.",
        input_schema={"type": "object", "properties": {"report": {"type": "string"}}},
    ),
]
TOOLS = [ADD, END]
bus = InMemorySubscriptionBus()
listen = ListenHandler(bus)


async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    if params.name == END.name:
        listen.close()
    elif params.name == ADD.name and LATER:
        TOOLS.append(LATER.pop(0))
        if ANNOUNCE == "listen":
            await bus.publish(ToolsListChanged())
        else:
            await ctx.session.send_tool_list_changed()
    return types.CallToolResult(content=[types.TextContent(text=f"called {params.name}")])


server = Server(
    "announcing",
    on_list_tools=list_tools,
    on_call_tool=call_tool,
    on_subscriptions_listen=listen if ANNOUNCE == "listen" else None,
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
