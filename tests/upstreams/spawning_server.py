"""A server that starts a child process of its own, as `uvx` or `npx` wrappers do.

Usage: spawning_server.py PIDFILE [--ignore-sigterm]. The child inherits stdout and stderr (so it
holds the protocol pipe open) and sleeps; its pid is appended to PIDFILE (one line per start).
With --ignore-sigterm the child ignores SIGTERM (from before it starts), so only SIGKILL ends it.
"""

from __future__ import annotations

import os
import signal
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
    ignore = (lambda: signal.signal(signal.SIGTERM, signal.SIG_IGN)) if "--ignore-sigterm" in sys.argv else None
    helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], preexec_fn=ignore)
    with Path(sys.argv[1]).open("a") as pidfile:
        pidfile.write(f"{helper.pid}\n")
    server.run()
