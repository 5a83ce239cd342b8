"""Text from upstreams made safe to print: terminal escapes and invisible characters shown as codes.

An upstream may put terminal escapes in anything it sends (OSC 52 writes the clipboard in some
terminals, OSC 0 sets the window title, `ESC[2J` clears the screen) or text a reader cannot see.
Two strengths, one per reader:

- `terminal_safe`, for a person's terminal (the CLI, logs, the dashboard): every escape and
  invisible character (zero-width, bidirectional controls) is shown as a code, so a definition
  can neither hide text from the reviewer nor drive the terminal.
- `controls_shown`, for what an agent gets (error texts, results' text): only the characters that
  drive a terminal or reorder what it shows (C0 and C1 controls but newline and tab, a carriage
  return not ending a line, bidirectional overrides) are shown as codes; zero-width joiners and
  the like stay, since honest text in several scripts needs them and they drive nothing.

Codes are written as JSON escapes (`\\u001b`), so JSON stays valid and a reader sees what was sent.
"""

from __future__ import annotations

import re

__all__ = ["BIDI_CONTROLS", "ZERO_WIDTH", "controls_shown", "terminal_safe"]

ZERO_WIDTH = "\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\ufeff\u180e"
BIDI_CONTROLS = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
# ESC, BEL, CSI (0x9b), OSC (0x9d) and the rest, CR included: a lone CR returns to the line's start
# and overwrites what was shown, while CRLF only ends a line (kept by `_shown`). One character
# class, no alternation: it is searched over every result, up to the result limit.
_DRIVING = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{BIDI_CONTROLS}]")


def _code(char: str) -> str:
    return f"\\u{ord(char):04x}" if ord(char) <= 0xFFFF else f"\\U{ord(char):08x}"


def terminal_safe(text: str) -> str:
    """`text` for a person's terminal: newlines kept, every escape or invisible character shown
    as a code, so a definition can neither hide text from the reviewer nor drive the terminal."""
    shown = []
    for char in text:
        if char == "\n" or (char.isprintable() and char not in ZERO_WIDTH and char not in BIDI_CONTROLS):
            shown.append(char)
        elif char == "\t":
            shown.append("    ")
        else:
            shown.append(_code(char))
    return "".join(shown)


def controls_shown(text: str) -> str:
    """`text` for an agent (and the host that may print it): every character that drives a terminal
    or reorders its text shown as a code; everything else, newlines and tabs included, unchanged."""
    return _DRIVING.sub(_shown, text)


def _shown(match: re.Match[str]) -> str:
    char = match.group()
    if char == "\r" and match.string.startswith("\n", match.end()):
        return char
    return _code(char)
