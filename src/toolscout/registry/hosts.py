"""The MCP hosts `toolscout install` knows: where each keeps its servers, and under which key.

    host = HOSTS["cursor"]
    host.default_path()          # ~/.cursor/mcp.json
    host.key                     # "mcpServers" ("servers" for VS Code)

A host's file is also a registry toolscout reads as it is (`toolscout.registry.formats` accepts
both keys), which is how `install` moves the host's servers behind toolscout without copying them
anywhere: the untouched original, kept as the backup, is the registry the gateway serves.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

__all__ = ["HOSTS", "Host", "host_names"]


def _app_support(*parts: str) -> Path:
    """The per-user application settings folder of this OS, then `parts`."""
    if sys.platform == "darwin":
        return Path.home().joinpath("Library", "Application Support", *parts)
    if sys.platform == "win32":
        return Path(os.environ.get("APPDATA") or Path.home() / "AppData" / "Roaming").joinpath(*parts)
    return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config").joinpath(*parts)


@dataclass(frozen=True)
class Host:
    """One MCP host: its name on the command line, its file's usual place, its servers' key."""

    name: str
    title: str
    locate: Callable[[], Path]
    key: str = "mcpServers"
    # Entries of this host say their transport ("type": "stdio") where others leave it out.
    typed_entries: bool = False
    # The host reads comments and trailing commas in its file (JSONC), which a rewrite would lose.
    allows_comments: bool = False

    def default_path(self) -> Path:
        return self.locate()


HOSTS: dict[str, Host] = {
    host.name: host
    for host in (
        Host("claude-desktop", "Claude Desktop", lambda: _app_support("Claude", "claude_desktop_config.json")),
        # User-scope servers; a project's .mcp.json is given with --config.
        Host("claude-code", "Claude Code", lambda: Path.home() / ".claude.json"),
        Host("cursor", "Cursor", lambda: Path.home() / ".cursor" / "mcp.json", allows_comments=True),
        Host("vscode", "VS Code", lambda: _app_support("Code", "User", "mcp.json"), key="servers",
             typed_entries=True, allows_comments=True),
        Host("windsurf", "Windsurf", lambda: Path.home() / ".codeium" / "windsurf" / "mcp_config.json"),
    )
}


def host_names() -> list[str]:
    return list(HOSTS)
