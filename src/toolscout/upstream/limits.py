"""Hard bounds on what flows through the gateway, and cutting an oversized result down to size.

Each bound protects the gateway (memory, event loop) or the agent (its context window) from one
upstream or one call: a server written by someone else may answer with megabytes, hold calls
open, or write without end. The numbers are defaults; `toolscout serve` takes a flag for each.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import mcp_types as types

__all__ = ["DEFAULT_MAX_LINE_BYTES", "Limits", "bound_read", "bound_result", "human_size"]

DEFAULT_MAX_LINE_BYTES = 16 * 1024 * 1024
_Item = TypeVar("_Item")


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


def _fit(
    items: Sequence[_Item],
    sizes: Sequence[int],
    max_bytes: int,
    cut: Callable[[_Item, int, int], tuple[_Item, str] | None],
    left_out: Callable[[_Item, int], str],
) -> tuple[list[_Item], list[str], int]:
    """Items kept in order while they fit in `max_bytes`; the first that does not fit is cut to the
    rest when `cut(item, budget, size)` can (else left out). Returns the kept items, what was cut
    or left out, and the bytes left."""
    budget = max_bytes
    kept: list[_Item] = []
    cuts: list[str] = []
    for item, size in zip(items, sizes, strict=True):
        shortened = cut(item, budget, size) if size > budget and budget > 0 else None
        if size <= budget:
            kept.append(item)
            budget -= size
        elif shortened is not None:
            kept.append(shortened[0])
            cuts.append(shortened[1])
            budget = 0
        else:
            cuts.append(left_out(item, size))
    return kept, cuts, budget


def bound_result(
    result: types.CallToolResult, max_bytes: int, *, server: str, tool: str, wire_bytes: int | None = None
) -> types.CallToolResult:
    """`result` unchanged if it fits in `max_bytes`; otherwise cut to fit, with a note saying what went.

    Blocks are kept in order while they fit; the first text block that does not fit is cut; other
    blocks that do not fit (images, audio, resources) and structured content that does not fit are
    left out. `isError` is kept as it was. `wire_bytes`: `result` is only the opening of a message
    of that size, too long to read whole (`oversized.py`); the note says the rest went.
    """
    import mcp_types as types  # with the SDK, which only a gateway making calls has imported

    sizes = [_block_bytes(block) for block in result.content]
    structured = result.structured_content
    structured_bytes = _json_bytes(structured) if structured is not None else 0
    total = sum(sizes) + structured_bytes
    if total <= max_bytes and wire_bytes is None:
        return result

    def cut(block: types.ContentBlock, budget: int, size: int) -> tuple[types.ContentBlock, str] | None:
        if not isinstance(block, types.TextContent):
            return None
        return types.TextContent(text=_cut(block.text, budget)), f"a text block cut from {human_size(size)} to {human_size(budget)}"

    content, cuts, budget = _fit(
        result.content, sizes, max_bytes, cut, lambda block, size: f"a {block.type} block of {human_size(size)} left out"
    )
    if structured is not None and structured_bytes > budget:
        cuts.append(f"the structured content ({human_size(structured_bytes)}) left out")
        structured = None
    if wire_bytes is not None:
        total = wire_bytes
        cuts.append(f"only the opening{' of its first text block' if content else ''} was kept; the rest "
                    "(other blocks and structured content included) left out")
    note = (
        f"[toolscout: the result of '{tool}' from upstream '{server}' was {human_size(total)}, over the "
        f"{human_size(max_bytes)} limit (max_result_bytes), so it was shortened: {'; '.join(cuts)}. "
        "To see the rest, ask the tool for less at a time (a narrower query, a page, a range).]"
    )
    content.append(types.TextContent(text=note))
    return types.CallToolResult(
        content=content, structured_content=structured, is_error=result.is_error, meta=result.meta
    )


def bound_read(result: types.ReadResourceResult, max_bytes: int, *, server: str, uri: str) -> types.ReadResourceResult:
    """A resource read cut to `max_bytes` as `bound_result` cuts a tool result: contents kept in
    order while they fit, the first text that does not fit cut, blobs that do not fit left out,
    and a last text entry saying what went."""
    import mcp_types as types  # with the SDK, which only a gateway making calls has imported

    sizes = [
        _text_bytes(item.text) if isinstance(item, types.TextResourceContents) else len(item.blob)
        for item in result.contents
    ]
    total = sum(sizes)
    if total <= max_bytes:
        return result

    def cut(item: Any, budget: int, size: int) -> tuple[Any, str] | None:
        if not isinstance(item, types.TextResourceContents):
            return None
        cut_text = item.model_copy(update={"text": _cut(item.text, budget)})
        return cut_text, f"the text of {item.uri} cut from {human_size(size)} to {human_size(budget)}"

    contents, cuts, _ = _fit(
        result.contents, sizes, max_bytes, cut, lambda item, size: f"the contents of {item.uri} ({human_size(size)}) left out"
    )
    note = (
        f"[toolscout: resource '{uri}' from upstream '{server}' was {human_size(total)}, over the "
        f"{human_size(max_bytes)} limit (max_result_bytes), so it was shortened: {'; '.join(cuts)}.]"
    )
    contents.append(types.TextResourceContents(uri=uri, mime_type="text/plain", text=note))
    return result.model_copy(update={"contents": contents})
