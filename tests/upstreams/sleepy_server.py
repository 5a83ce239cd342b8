"""A server that, once a flag file exists, never gets to answer: it blocks before speaking MCP.

    sleepy_server.py FLAG_FILE

Without the file it starts at once, like any server; with it, it sleeps forever first, as an upstream
that takes ages to start looks to whoever connects to it.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from mcp.server.mcpserver import MCPServer

server = MCPServer("sleepy", instructions="Sets alarms and naps.")


@server.tool()
def set_alarm(time_of_day: str) -> str:
    """Set an alarm clock to ring at the given time of day."""
    return f"alarm set for {time_of_day}"


@server.tool()
def take_nap(minutes: int) -> str:
    """Take a short nap for a number of minutes."""
    return f"napped {minutes} min"


if __name__ == "__main__":
    if Path(sys.argv[1]).exists():
        while True:
            time.sleep(3600)
    server.run()
