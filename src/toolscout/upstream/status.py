"""What is known about one upstream's health, in words a person or an agent can read."""

from __future__ import annotations

import enum
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from toolscout.errors import ToolscoutError

if TYPE_CHECKING:
    import mcp_types as types


class _Described(Protocol):
    """What a summary reads of a tool: an MCP tool definition, or a catalog record."""

    @property
    def name(self) -> str: ...
    @property
    def description(self) -> str | None: ...
    @property
    def title(self) -> str | None: ...

__all__ = ["SKIPPED", "State", "UpstreamStatus", "describe_failure", "summarize"]

# How the reason of an entry skipped on purpose begins (one that would start toolscout itself).
SKIPPED = "skipped: "


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
    # When the supervisor tries it next (seconds since the epoch), while it waits to; else None.
    next_attempt: float | None = None
    # True: it failed for a configuration error (`toolscout.upstream.failures`) and is not retried.
    configuration_error: bool = False
    # True: it waits for a person to sign in (OAuth, `toolscout login`); its reason names the command.
    needs_sign_in: bool = False

    @property
    def skipped(self) -> bool:
        """Never started on purpose (an entry that would start toolscout itself): not a server to
        tell an agent about."""
        return self.configuration_error and (self.reason or "").startswith(SKIPPED)


def summarize(instructions: str | None, info: types.Implementation | None, tools: Sequence[_Described]) -> str:
    """One line saying what a server is for: its own words if it gave any, else what its tools do
    (the opening phrases of their descriptions), else its tool names."""
    for text in (instructions, info.description if info else None):
        if text and text.strip():
            line = " ".join(text.split()).lstrip("#* ")
            sentence = line.split(". ")[0].rstrip(".")
            return _shortened(sentence)
    if info and info.title:
        return info.title
    purpose = _what_tools_do(tools)
    if purpose:
        return purpose
    names = [tool.name for tool in tools]
    shown = ", ".join(names[:6])
    return f"tools such as {shown}" if len(names) > 6 else f"tools: {shown}" if shown else "no tools"


_MAX_SUMMARY = 160
# Phrases of tool descriptions shown for a server that says nothing of itself: enough to tell
# what it is for, short enough for a line of the server instructions.
_PHRASES = 3
_MAX_PHRASE = 70
_CLAUSE_END = re.compile(r"(?:\.\s|\.$|;|\s[-\u2013\u2014]\s|\s\(|\n)")


def _shortened(text: str) -> str:
    return text if len(text) <= _MAX_SUMMARY else text[: _MAX_SUMMARY - 3].rstrip() + "..."


def _opening_phrase(description: str) -> str:
    """The first clause of a description, e.g. "Shows the working tree status" of a longer text."""
    first = _CLAUSE_END.split(description.strip(), maxsplit=1)[0]
    return " ".join(first.split()).strip(" .,*#`")


def _what_tools_do(tools: Sequence[_Described]) -> str:
    """The opening phrases of a few tools' descriptions (the shortest ones, in listing order):
    "Get current time in a specific timezone; convert time between timezones"."""
    phrases: dict[str, str] = {}
    for tool in tools:
        phrase = _opening_phrase(tool.description or tool.title or "")
        if len(phrase) > 2:
            phrases.setdefault(phrase.casefold(), phrase)
    if not phrases:
        return ""
    order = list(phrases.values())
    # The shortest phrase always (it may be long when a server has one tool), others when short.
    shortest = sorted(order, key=len)
    picked = shortest[:1] + [phrase for phrase in shortest[1:_PHRASES] if len(phrase) <= _MAX_PHRASE]
    chosen = sorted(picked, key=order.index)
    parts = [chosen[0][0].upper() + chosen[0][1:]] + [
        phrase if phrase[1:2].isupper() else phrase[0].lower() + phrase[1:] for phrase in chosen[1:]
    ]
    more = "; and more" if len(tools) > len(chosen) else ""
    return _shortened("; ".join(parts) + more)


def describe_failure(exc: BaseException) -> str:
    """A short human reason for a failure, unwrapping task-group exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, ToolscoutError):
        return str(exc)
    if isinstance(exc, TimeoutError):
        return "timed out"
    # The SDK is imported here, not with the module: reading cached statuses needs none of it.
    import mcp_types as types
    from mcp import MCPError

    if isinstance(exc, MCPError):
        return exc.message if exc.code != types.CONNECTION_CLOSED else "the connection closed"
    if isinstance(exc, FileNotFoundError):
        return f"command not found: {exc.filename or exc}"
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
