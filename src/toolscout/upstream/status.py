"""What is known about one upstream's health, in words a person or an agent can read."""

from __future__ import annotations

import enum
from dataclasses import dataclass

import mcp_types as types
from mcp import MCPError

from toolscout.errors import ToolscoutError

__all__ = ["State", "UpstreamStatus", "describe_failure", "summarize"]


class State(enum.StrEnum):
    STARTING = "starting"
    UP = "up"
    DOWN = "down"


@dataclass(frozen=True)
class UpstreamStatus:
    """What `toolscout tools` and the server's instructions say about one upstream."""

    name: str
    transport: str
    state: State
    reason: str | None
    tool_count: int
    summary: str
    # Times the supervisor started it again after its session ended, and whether it stopped trying.
    restarts: int = 0
    gave_up: bool = False
    # Why the session before the latest restart ended (e.g. it crashed, or stopped answering).
    last_restart_reason: str | None = None


def summarize(instructions: str | None, info: types.Implementation | None, tool_names: list[str]) -> str:
    """One line saying what a server is for: its own words if it gave any, else its tool names."""
    for text in (instructions, info.description if info else None):
        if text and text.strip():
            line = " ".join(text.split()).lstrip("#* ")
            sentence = line.split(". ")[0].rstrip(".")
            return sentence if len(sentence) <= 160 else sentence[:157].rstrip() + "..."
    if info and info.title:
        return info.title
    shown = ", ".join(tool_names[:6])
    return f"tools such as {shown}" if len(tool_names) > 6 else f"tools: {shown}" if shown else "no tools"


def describe_failure(exc: BaseException) -> str:
    """A short human reason for a failure, unwrapping task-group exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, ToolscoutError):
        return str(exc)
    if isinstance(exc, TimeoutError):
        return "timed out"
    if isinstance(exc, MCPError):
        return exc.message if exc.code != types.CONNECTION_CLOSED else "the connection closed"
    if isinstance(exc, FileNotFoundError):
        return f"command not found: {exc.filename or exc}"
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
