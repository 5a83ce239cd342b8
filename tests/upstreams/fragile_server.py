"""A server that can be made to die in the middle of a call (run as a stdio subprocess by the tests;
`fragile_server.py --http PORT` serves streamable HTTP on 127.0.0.1:PORT instead)."""

from __future__ import annotations

import os
import sys

import anyio
from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("fragile", instructions="Echoes text back; can be made to crash.")


@server.tool()
def echo(text: str) -> str:
    """Return the given text unchanged."""
    return text


@server.tool()
def crash_now() -> str:
    """Exit the server process immediately, in the middle of this call."""
    os._exit(1)


@server.tool()
async def work_with_progress(steps: int, step_seconds: float, ctx: Context) -> str:
    """Work for `steps` steps of `step_seconds` each, reporting progress after each step."""
    for step in range(1, steps + 1):
        await anyio.sleep(step_seconds)
        await ctx.report_progress(step, steps, f"step {step}")
    return f"done after {steps} steps"


@server.tool()
async def crash_midway(ctx: Context) -> str:
    """Report progress (an HTTP response is under way), then exit the server process."""
    await ctx.report_progress(1, 2, "half way")
    await anyio.sleep(0.2)
    os._exit(1)


@server.tool()
async def wait_forever() -> str:
    """Never answer (until cancelled)."""
    await anyio.sleep_forever()
    return "unreachable"


if __name__ == "__main__":
    if "--http" in sys.argv:
        server.run(transport="streamable-http", host="127.0.0.1", port=int(sys.argv[sys.argv.index("--http") + 1]))
    else:
        server.run()
