"""How counts read in logs, the CLI and what agents are shown ("1 tool", "3 tools")."""

from __future__ import annotations

__all__ = ["plural"]


def plural(count: int, word: str) -> str:
    """`count` and `word`, with an s unless there is exactly one: plural(1, "tool") == "1 tool"."""
    return f"{count} {word}{'' if count == 1 else 's'}"
