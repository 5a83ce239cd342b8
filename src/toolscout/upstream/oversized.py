"""A stdio upstream's message too long to read whole: answer its call with the part that was kept.

A stdout line over `max_line_bytes` is not buffered: the reader keeps its first bytes and its last
few, and skips the rest (`LineReader`). If that line is the response to a call, the call still
gets an answer, cut like any result over the result limit (`limits.bound_result`): its opening
text, a note saying what went, and the upstream's own `isError` (a successful result stays a
success); and the session goes on: the other calls in flight on the upstream are not failed, nor
is it restarted. A line whose request id cannot be found (or that is not a response) is dropped
with a warning.

Why in two steps: the response passes through the SDK's client session, which refuses a success
without the structured content a tool's output schema promises, and that content was in the part
skipped. So `salvage` hands it on marked as an error carrying its true size and `isError` in its
`_meta`, and `unwrap_salvaged` turns it back into what the upstream answered, once the SDK is past.

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


__all__ = ["OversizedLine", "Salvaged", "salvage", "unwrap_salvaged"]

# Where a salvaged response carries what the SDK must not see until it is past (its own namespace).
_MARK = "io.toolscout/oversized-line"

_ID = r'"id"\s*:\s*(-?\d+|"(?:[^"\\]|\\.){0,256}")'
_ID_FIRST = re.compile(_ID)
_ID_LAST = re.compile(_ID + r"\s*\}\s*$")
_FIRST_TEXT = re.compile(r'"content"\s*:\s*\[\s*\{[^{}]*?"text"\s*:\s*"')
# An escaped quote inside a text reads \"isError\": only a key of the message matches.
_IS_ERROR = re.compile(r'(?<!\\)"isError"\s*:\s*true')


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


def salvage(line: OversizedLine, *, max_result_bytes: int) -> SessionMessage | None:
    """A response for the call `line` answered, with its opening text (at most `max_result_bytes`),
    marked for `unwrap_salvaged`; None if it is not one."""
    if b'"result"' not in line.head and b'"result"' not in line.tail:
        return None
    request_id = _request_id(line)
    if request_id is None:
        return None
    text = _opening_text(line.head, max_result_bytes)
    is_error = any(_IS_ERROR.search(part.decode("utf-8", errors="ignore")) for part in (line.head, line.tail))
    result = types.CallToolResult(
        content=[types.TextContent(text=text)] if text else [], is_error=True,
        meta={_MARK: {"bytes": line.size, "isError": is_error}},
    )
    response = types.JSONRPCResponse(
        jsonrpc="2.0", id=request_id, result=result.model_dump(by_alias=True, exclude_none=True, mode="json")
    )
    return SessionMessage(response)


@dataclass(frozen=True)
class Salvaged:
    """A result read only in part: what was kept, as the upstream marked it, and its size on the wire."""

    result: types.CallToolResult
    wire_bytes: int


def unwrap_salvaged(result: types.CallToolResult) -> Salvaged | None:
    """The result `salvage` made, with the upstream's own `isError` back; None for any other."""
    mark = (result.meta or {}).get(_MARK)
    if not isinstance(mark, dict) or not isinstance(mark.get("bytes"), int):
        return None
    meta = {key: value for key, value in (result.meta or {}).items() if key != _MARK} or None
    restored = result.model_copy(update={"is_error": mark.get("isError") is True, "meta": meta})
    return Salvaged(restored, mark["bytes"])
