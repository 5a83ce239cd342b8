"""A server that starts a child process of its own, as `uvx` or `npx` wrappers do.

Usage: spawning_server.py PIDFILE. The child inherits stdout and stderr (so it holds the
protocol pipe open) and sleeps; its pid is appended to PIDFILE (one line per start).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from mcp.server.mcpserver import MCPServer

server = MCPServer("spawning", instructions="Echoes text; keeps a helper process running.")


@server.tool()
def echo(text: str) -> str:
    """Return the given text unchanged."""
    return text


@server.tool()
def crash() -> str:
    """Exit the server process in the middle of this call; its helper process lives on."""
    os._exit(3)


if __name__ == "__main__":
    helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    with Path(sys.argv[1]).open("a") as pidfile:
        pidfile.write(f"{helper.pid}\n")
    server.run()
