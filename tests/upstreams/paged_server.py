"""A low-level server that lists its tools over several pages, one with an over-long name.

Run as a stdio subprocess by the gateway tests. Each call echoes the tool name and arguments.
"""

from __future__ import annotations

import json

import anyio
import mcp_types as types
from mcp.server import Server
from mcp.server.stdio import stdio_server

PAGE_SIZE = 10
LONG_NAME = "generate_the_quarterly_financial_summary_report_for_the_selected_business_unit_and_period"
UNITS = ["meters", "feet", "inches", "miles", "kilometers", "yards", "grams", "pounds", "ounces", "liters",
         "gallons", "celsius", "fahrenheit", "kelvin", "seconds", "hours", "days", "bytes", "bits", "pixels",
         "acres", "hectares", "joules", "calories"]

TOOLS = [
    types.Tool(
        name=f"convert_to_{unit}",
        description=f"Convert a quantity into {unit}.",
        input_schema={
            "type": "object",
            "properties": {"value": {"type": "number"}, "from_unit": {"type": "string"}},
            "required": ["value", "from_unit"],
        },
    )
    for unit in UNITS
] + [
    types.Tool(
        name=LONG_NAME,
        description="Generate the quarterly financial summary report for a business unit.",
        input_schema={
            "type": "object",
            "properties": {"unit": {"type": "string"}, "quarter": {"type": "integer", "minimum": 1, "maximum": 4}},
            "required": ["unit", "quarter"],
        },
    )
]


async def list_tools(ctx: object, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    start = int(params.cursor) if params and params.cursor else 0
    end = start + PAGE_SIZE
    return types.ListToolsResult(tools=TOOLS[start:end], next_cursor=str(end) if end < len(TOOLS) else None)


async def call_tool(ctx: object, params: types.CallToolRequestParams) -> types.CallToolResult:
    echoed = {"tool": params.name, "arguments": params.arguments or {}}
    return types.CallToolResult(content=[types.TextContent(text=json.dumps(echoed))], structured_content=echoed)


server = Server("paged", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
