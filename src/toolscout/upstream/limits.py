"""Hard bounds on what flows through the gateway, and cutting an oversized result down to size.

Each bound protects the gateway (memory, event loop) or the agent (its context window) from one
upstream or one call: a server written by someone else may answer with megabytes, hold calls
open, or write without end. The numbers are defaults; `toolscout serve` takes a flag for each.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import mcp_types as types

__all__ = ["DEFAULT_MAX_LINE_BYTES", "Limits", "bound_result", "human_size"]

DEFAULT_MAX_LINE_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class Limits:
    # The arguments of one execute_tool call, serialized as JSON.
    max_argument_bytes: int = 1024 * 1024
    # What an agent gets back from one call (text, structured content and other blocks together);
    # more is cut with a note saying so. 256 KiB of text is already ~64k tokens.
    max_result_bytes: int = 256 * 1024
    # Calls in flight on one upstream; more wait their turn (the wait counts toward the timeout).
    max_concurrent_calls: int = 8
    # One line (one JSON-RPC message) on a stdio upstream's stdout.
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES

    def __post_init__(self) -> None:
        for name in ("max_argument_bytes", "max_result_bytes", "max_concurrent_calls", "max_line_bytes"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")


def human_size(n: int) -> str:
    if n >= 1024 * 1024:
        return f"{n / 1048576:.3g} MiB"
    return f"{n / 1024:.3g} KiB" if n >= 1024 else f"{n} bytes"


def _text_bytes(text: str) -> int:
    # Most text is ASCII; encode only when the cheap bound cannot decide.
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def _block_bytes(block: types.ContentBlock) -> int:
    import mcp_types as types  # with the SDK, which only a gateway making calls has imported

    if isinstance(block, types.TextContent):
        return _text_bytes(block.text)
    return len(block.model_dump_json(by_alias=True, exclude_none=True))


def _json_bytes(value: object) -> int:
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str).encode("utf-8"))


def _cut(text: str, max_bytes: int) -> str:
    return text.encode("utf-8")[:max_bytes].decode("utf-8", errors="ignore")


def bound_result(result: types.CallToolResult, max_bytes: int, *, server: str, tool: str) -> types.CallToolResult:
    """`result` unchanged if it fits in `max_bytes`; otherwise cut to fit, with a note saying what went.

    Blocks are kept in order while they fit; the first text block that does not fit is cut; other
    blocks that do not fit (images, audio, resources) and structured content that does not fit are
    left out. `isError` is kept as it was.
    """
    import mcp_types as types  # with the SDK, which only a gateway making calls has imported

    sizes = [_block_bytes(block) for block in result.content]
    structured = result.structured_content
    structured_bytes = _json_bytes(structured) if structured is not None else 0
    total = sum(sizes) + structured_bytes
    if total <= max_bytes:
        return result
    budget = max_bytes
    content: list[types.ContentBlock] = []
    cuts: list[str] = []
    for block, size in zip(result.content, sizes, strict=True):
        if size <= budget:
            content.append(block)
            budget -= size
        elif isinstance(block, types.TextContent) and budget > 0:
            content.append(types.TextContent(text=_cut(block.text, budget)))
            cuts.append(f"a text block cut from {human_size(size)} to {human_size(budget)}")
            budget = 0
        else:
            cuts.append(f"a {block.type} block of {human_size(size)} left out")
    if structured is not None and structured_bytes > budget:
        cuts.append(f"the structured content ({human_size(structured_bytes)}) left out")
        structured = None
    note = (
        f"[toolscout: the result of '{tool}' from upstream '{server}' was {human_size(total)}, over the "
        f"{human_size(max_bytes)} limit (max_result_bytes), so it was shortened: {'; '.join(cuts)}. "
        "To see the rest, ask the tool for less at a time (a narrower query, a page, a range).]"
    )
    content.append(types.TextContent(text=note))
    return types.CallToolResult(
        content=content, structured_content=structured, is_error=result.is_error, meta=result.meta
    )
