"""The size bounds on their own: cutting results to the limit, and the stdout line cap's memory bound.

The gateway tests (test_gateway_bounds.py) prove these bounds are applied to real upstreams; these
prove what each bound does with the kinds of input a test server rarely sends (images, resources,
error results, a line that never ends).
"""

from __future__ import annotations

import base64

import anyio
import mcp_types as types
import pytest

from toolscout.upstream.limits import bound_result
from toolscout.errors import StdoutFault
from toolscout.upstream.oversized import OversizedLine, salvage, unwrap_salvaged
from toolscout.upstream.stdio import LineReader

pytestmark = pytest.mark.anyio

KIB = 1024


def _image(size: int) -> types.ImageContent:
    return types.ImageContent(data=base64.b64encode(b"\0" * size).decode(), mime_type="image/png")


def _bytes(result: types.CallToolResult) -> int:
    return sum(len(block.model_dump_json(by_alias=True, exclude_none=True)) for block in result.content)


def _note(result: types.CallToolResult) -> str:
    last = result.content[-1]
    assert isinstance(last, types.TextContent)
    return last.text


def test_an_oversized_image_is_left_out_and_the_note_says_so() -> None:
    small = types.TextContent(text="caption")
    result = types.CallToolResult(content=[small, _image(200 * KIB)])
    bounded = bound_result(result, 64 * KIB, server="s", tool="render")
    assert [block.type for block in bounded.content] == ["text", "text"]
    assert bounded.content[0] == small
    assert "image block" in _note(bounded) and "left out" in _note(bounded)
    assert _bytes(bounded) < 64 * KIB


def test_an_oversized_resource_is_left_out_while_blocks_that_fit_are_kept_in_order() -> None:
    resource = types.EmbeddedResource(
        resource=types.TextResourceContents(uri="file:///big.txt", text="x" * (300 * KIB), mime_type="text/plain")
    )
    first, last = types.TextContent(text="before"), types.TextContent(text="after")
    bounded = bound_result(types.CallToolResult(content=[first, resource, last]), 64 * KIB, server="s", tool="t")
    assert bounded.content[:2] == [first, last]
    assert "resource block" in _note(bounded)


def test_an_oversized_error_result_stays_an_error() -> None:
    result = types.CallToolResult(content=[types.TextContent(text="e" * (100 * KIB))], is_error=True)
    bounded = bound_result(result, 16 * KIB, server="s", tool="t")
    assert bounded.is_error is True
    assert "cut from" in _note(bounded)


def test_structured_content_that_does_not_fit_is_left_out_and_named() -> None:
    result = types.CallToolResult(
        content=[types.TextContent(text="ok")], structured_content={"rows": ["r" * 100] * 2000}
    )
    bounded = bound_result(result, 16 * KIB, server="s", tool="t")
    assert bounded.structured_content is None
    assert "structured content" in _note(bounded)


def test_a_result_that_fits_is_returned_as_it_is() -> None:
    result = types.CallToolResult(content=[types.TextContent(text="fine"), _image(KIB)])
    assert bound_result(result, 64 * KIB, server="s", tool="t") is result


class _Endless:
    """A byte stream that never sends a newline, counting what has been read from it."""

    def __init__(self) -> None:
        self.sent = 0

    async def receive(self, max_bytes: int = 65536) -> bytes:
        self.sent += max_bytes
        return b"a" * max_bytes


async def test_a_line_without_end_is_refused_once_it_runs_past_the_skip_bound() -> None:
    limit = 1024 * KIB
    stream = _Endless()
    with pytest.raises(StdoutFault, match="4 times the 1 MiB limit on one message"):
        await LineReader(stream, limit, skip_factor=4).next_line()  # type: ignore[arg-type]
    assert 4 * limit < stream.sent <= 4 * limit + 128 * KIB


async def test_a_line_over_the_limit_is_kept_as_its_start_and_end_and_the_next_line_is_whole() -> None:
    line = b'{"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": "' + b"x" * 300 + b'"}]}}'
    sent = line + b"\n" + b'{"next": 1}\n'
    reader = LineReader(_Chunks(*(sent[i:i + 50] for i in range(0, len(sent), 50))), 128)  # type: ignore[arg-type]
    oversized = await reader.next_line()
    assert isinstance(oversized, OversizedLine)
    assert oversized.head == line[:128] and oversized.tail == line[-4096:] and oversized.size == len(line)
    assert await reader.next_line() == b'{"next": 1}'
    salvaged = salvage(oversized, max_result_bytes=1000)
    assert salvaged is not None and salvaged.message.id == 7
    # Marked as an error while it passes the SDK; unwrapped, it is the success the upstream sent.
    assert salvaged.message.result["isError"] is True
    unwrapped = unwrap_salvaged(types.CallToolResult.model_validate(salvaged.message.result))
    assert unwrapped is not None and unwrapped.wire_bytes == len(line)
    assert unwrapped.result.is_error is False and unwrapped.result.meta is None
    opening = "x" * (128 - len(b'{"jsonrpc": "2.0", "id": 7, "result": {"content": [{"type": "text", "text": "'))
    assert [block.text for block in unwrapped.result.content] == [opening]
    shown = bound_result(unwrapped.result, 1000, server="s", tool="t", wire_bytes=unwrapped.wire_bytes)
    assert shown.content[0].text == opening and not shown.is_error
    assert f"was {len(line)} bytes, over the 1000 bytes limit (max_result_bytes)" in shown.content[-1].text


def test_an_oversized_line_keeps_the_upstreams_own_error_mark_not_one_quoted_in_its_text() -> None:
    def salvaged_is_error(ending: bytes) -> bool:
        line = b'{"jsonrpc": "2.0", "id": 3, "result": {"content": [{"type": "text", "text": "\\"isError\\": true ' + b"y" * 300 + ending
        salvaged = salvage(OversizedLine(line[:128], line[-4096:], len(line)), max_result_bytes=1000)
        assert salvaged is not None
        unwrapped = unwrap_salvaged(types.CallToolResult.model_validate(salvaged.message.result))
        assert unwrapped is not None
        return unwrapped.result.is_error

    assert salvaged_is_error(b'"}], "isError": true}}') is True
    assert salvaged_is_error(b'"}]}}') is False


class _Chunks:
    """A byte stream that sends the given chunks, then ends."""

    def __init__(self, *chunks: bytes) -> None:
        self._chunks = list(chunks)

    async def receive(self, max_bytes: int = 65536) -> bytes:
        if not self._chunks:
            raise anyio.EndOfStream
        return self._chunks.pop(0)


async def test_lines_under_the_limit_are_split_whole_and_the_last_one_needs_no_newline() -> None:
    reader = LineReader(_Chunks(b'{"a": 1}\n{"b"', b': 2}\n{"c": 3}'), 64)  # type: ignore[arg-type]
    assert [await reader.next_line() for _ in range(4)] == [b'{"a": 1}', b'{"b": 2}', b'{"c": 3}', None]
