"""A server that, once a flag file exists, never gets to answer: it blocks before speaking MCP.

    sleepy_server.py FLAG_FILE
    sleepy_server.py --until GATE_FILE

Without the file it starts at once, like any server; with it, it sleeps forever first, as an upstream
that takes ages to start looks to whoever connects to it. With --until it is slow to start instead:
it speaks MCP once the gate file exists, or after 20 s without one (a test opens the gate when it has
seen what it wanted while the server was starting, so the order is the test's, not a timer's).
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


def _wait_for_gate(gate: Path, at_most: float = 20.0) -> None:
    opened_by = time.monotonic() + at_most
    while not gate.exists() and time.monotonic() < opened_by:
        time.sleep(0.05)


if __name__ == "__main__":
    if sys.argv[1] == "--until":
        _wait_for_gate(Path(sys.argv[2]))
    elif Path(sys.argv[1]).exists():
        while True:
            time.sleep(3600)
    server.run()
