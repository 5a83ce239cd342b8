"""Text an upstream sends back in an error, made fit for an agent's context.

An upstream may echo a whole argument (a megabyte) in a validation error, or a traceback full of
this machine's paths (its package cache, the user's home). The agent needs what went wrong, not
that: the text is capped at a few KB with a note saying it was cut, the paths into installed
packages and caches are shortened to the part that names the package, the home directory is
written as `~`, and terminal escapes (an OSC 52 clipboard write, a window title, a screen clear)
are shown as codes, never passed on raw to a host that may print the error.
"""

from __future__ import annotations

import os
import re

from toolscout.printable import controls_shown

__all__ = ["MAX_ERROR_CHARS", "shortened_paths", "upstream_error_text"]

# Enough for any useful error message and a short traceback.
MAX_ERROR_CHARS = 4096

# Folders of installed code and caches: what comes before them says only where this machine keeps them.
_INSTALL_DIRS = ("site-packages", "dist-packages", "node_modules", "_npx", ".cache", ".npm", ".venv", "archive-v0")
_PATH = re.compile(r"(?:[A-Za-z]:\\|/)[^\s'\"`<>|,;()]*")


def _shorten(match: re.Match[str]) -> str:
    path = match.group(0)
    parts = re.split(r"[\\/]", path)
    cut = max((i for i, part in enumerate(parts) if part in _INSTALL_DIRS), default=-1)
    if cut >= 0:
        return "…/" + "/".join(parts[cut:])
    home = os.path.expanduser("~")
    if len(home) > 1 and (path == home or path.startswith(home + os.sep)):
        return "~" + path[len(home):]
    return path


def shortened_paths(text: str) -> str:
    """`text` with paths into package installs and caches cut to the package's part, home as `~`."""
    return _PATH.sub(_shorten, text)


def upstream_error_text(text: str, max_chars: int = MAX_ERROR_CHARS) -> str:
    """An upstream's error text as the agent gets it: paths shortened, escapes shown as codes, at
    most `max_chars` (+ a note)."""
    text = controls_shown(shortened_paths(text))
    if len(text) <= max_chars:
        return text
    return (
        f"{text[:max_chars].rstrip()} [toolscout: the upstream's error text was {len(text):,} characters; "
        f"cut to the first {max_chars:,}]"
    )
