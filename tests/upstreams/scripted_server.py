"""A server whose tools and instructions come from a JSON file, re-read on every tools/list.

    scripted_server.py SPEC.json LABEL [CALLS.jsonl]

SPEC.json: {"instructions": "...", "tools": [{"name": ..., "description": ..., "inputSchema": {...}}]};
a tool may also have "title", "outputSchema" and "annotations".
Every call answers {"server": LABEL, "tool": name, "arguments": {...}}, so a test sees which
upstream a call reached. Calling `reload` tells the client the tools changed (tools/list_changed):
edit the file, call it, and the gateway lists the new definitions (a rug pull, on demand).
With CALLS.jsonl, each call's answer is also appended there: a test reads what the upstream saw.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.stdio import stdio_server
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ToolsListChanged


def build(spec_file: str, label: str, calls_file: str | None = None) -> Server:
    """The server of the command line's arguments (tests run it in their own process this way too)."""
    spec, calls = Path(spec_file), Path(calls_file) if calls_file else None

    def read_spec() -> dict[str, Any]:
        return json.loads(spec.read_text(encoding="utf-8"))

    async def list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        tools = [
            types.Tool(
                name=tool["name"],
                description=tool.get("description", ""),
                input_schema=tool.get("inputSchema", {"type": "object", "properties": {}}),
                title=tool.get("title"),
                output_schema=tool.get("outputSchema"),
                annotations=tool.get("annotations"),
            )
            for tool in read_spec()["tools"]
        ]
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name == "reload":
            # Told both ways: on the session (handshake-era clients), on listen streams (2026-07-28).
            await ctx.session.send_tool_list_changed()
            await bus.publish(ToolsListChanged())
        echoed = {"server": label, "tool": params.name, "arguments": params.arguments or {}}
        if calls is not None:
            with calls.open("a", encoding="utf-8") as written:
                written.write(json.dumps(echoed) + "\n")
        return types.CallToolResult(content=[types.TextContent(text=json.dumps(echoed))], structured_content=echoed)

    bus = InMemorySubscriptionBus()
    return Server(
        label,
        instructions=read_spec().get("instructions"),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_subscriptions_listen=ListenHandler(bus),
    )


async def main(server: Server) -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main, build(*sys.argv[1:4]))
