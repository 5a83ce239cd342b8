"""A stdio upstream's message too long to read whole: answer its call with the part that was kept.

A stdout line over `max_line_bytes` is not buffered: the reader keeps its first bytes and its last
few, and skips the rest (`LineReader`). If that line is the response to a call, the call still
gets an answer, cut like any oversized result (a note saying what went, and its opening text;
marked as an error, since the rest, structured content included, is lost), and the session goes on: the other calls in flight on the upstream are not failed, nor is it restarted.
A line whose request id cannot be found (or that is not a response) is dropped with a warning.

The id is looked for where serializers put it: before `"result"` at the start of the line, or as
the last key at its end. The text is the opening of the first text block, decoded as far as it is
complete.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

import mcp_types as types
from mcp.shared.message import SessionMessage

from toolscout.upstream.limits import human_size

__all__ = ["OVERSIZED_NOTE", "OversizedLine", "salvage"]

# How the note of a result cut for the line limit begins (an error result, but not the tool's error).
OVERSIZED_NOTE = "[toolscout: this result was "

_ID = r'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.){0,256}")'
_ID_FIRST = re.compile(_ID)
_ID_LAST = re.compile(_ID + r"\s*\}\s*$")
_FIRST_TEXT = re.compile(r'"content"\s*:\s*\[\s*\{[^{}]*?"text"\s*:\s*"')


@dataclass(frozen=True)
class OversizedLine:
    """What was kept of a stdout line over the limit: its start, its end, and its full size."""

    head: bytes
    tail: bytes
    size: int


def _request_id(line: OversizedLine) -> int | str | None:
    head = line.head.decode("utf-8", errors="ignore")
    result_at = head.find('"result"')
    match = _ID_FIRST.search(head, 0, result_at if result_at >= 0 else len(head))
    if match is None:
        match = _ID_LAST.search(line.tail.decode("utf-8", errors="ignore"))
    if match is None:
        return None
    value = json.loads(match.group(1))
    return value if isinstance(value, int | str) else None


def _opening_text(head: bytes, max_bytes: int) -> str:
    """The start of the first text block, decoded as far as it is complete, within `max_bytes`."""
    text = head.decode("utf-8", errors="ignore")
    match = _FIRST_TEXT.search(text)
    if match is None:
        return ""
    raw = text[match.end():]
    end = re.search(r'(?<!\\)(?:\\\\)*"', raw)
    raw = raw[: end.start() + len(end.group()) - 1] if end else raw
    for cut in range(0, 7):  # an escape (\uXXXX at most) may be split at the end
        try:
            decoded = json.loads(f'"{raw[: len(raw) - cut]}"')
            break
        except json.JSONDecodeError:
            continue
    else:
        return ""
    return decoded.encode("utf-8")[:max_bytes].decode("utf-8", errors="ignore")


def salvage(line: OversizedLine, *, max_line_bytes: int, max_result_bytes: int) -> SessionMessage | None:
    """A response for the call `line` answered, cut to `max_result_bytes`; None if it is not one."""
    if b'"result"' not in line.head and b'"result"' not in line.tail:
        return None
    request_id = _request_id(line)
    if request_id is None:
        return None
    note = (
        f"{OVERSIZED_NOTE}{human_size(line.size)} on the wire, over the {human_size(max_line_bytes)} "
        "limit on one message (max_line_bytes), so only its opening text is shown and the rest (other blocks, "
        "structured content) was left out. To see the rest, ask the tool for less at a time (a narrower query, "
        "a page, a range).]"
    )
    text = _opening_text(line.head, max(0, max_result_bytes - len(note.encode()) - 64))
    # An error result: what the tool answered cannot be checked against its output schema (the
    # MCP client refuses a result without its structured content), and the agent must not take
    # the opening for the whole.
    content = [types.TextContent(text=note), *([types.TextContent(text=text)] if text else [])]
    result = types.CallToolResult(content=content, is_error=True)
    response = types.JSONRPCResponse(
        jsonrpc="2.0", id=request_id, result=result.model_dump(by_alias=True, exclude_none=True, mode="json")
    )
    return SessionMessage(response)
