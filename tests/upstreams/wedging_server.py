"""A server that can be made to stop reading: one tool blocks its only thread (run as a stdio subprocess).

After `wedge` it answers nothing, not even pings, yet stays alive: what a deadlocked upstream looks
like from outside. A new process (a restart) is healthy again.
"""

from __future__ import annotations

import time

from mcp.server.mcpserver import MCPServer

server = MCPServer("wedging", instructions="Echoes text back; can be made to stop answering.")


@server.tool()
def echo(text: str) -> str:
    """Return the given text unchanged."""
    return text


@server.tool()
async def wedge() -> str:
    """Block the server's only thread: from now on it reads and answers nothing."""
    time.sleep(3600)  # deliberately blocking inside the event loop
    return "unreachable"


if __name__ == "__main__":
    server.run()
