"""How counts and ages read in logs, the CLI and what agents are shown ("1 tool", "3 tools", "5 min")."""

from __future__ import annotations

__all__ = ["describe_age", "plural"]


def plural(count: int, word: str) -> str:
    """`count` and `word`, with an s unless there is exactly one: plural(1, "tool") == "1 tool"."""
    return f"{count} {word}{'' if count == 1 else 's'}"


def describe_age(seconds: float) -> str:
    """'12 s', '5 min', '3 h', '2 days'."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 90 * 60:
        return f"{seconds / 60:.0f} min"
    if seconds < 36 * 3600:
        return f"{seconds / 3600:.0f} h"
    return f"{seconds / 86400:.0f} days"
