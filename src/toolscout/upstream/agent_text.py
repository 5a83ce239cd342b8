"""What an upstream writes for the agent, with a change applied to every text in it: the text
blocks of a tool result (an embedded text resource's included), a prompt's messages and
description, a resource's text contents. Blobs, images and structured content are data for
programs and pass exact.

The session applies `printable.controls_shown` through these to everything it relays, so no
upstream text reaches an agent host (often printing it in a terminal) with what drives a terminal.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import mcp_types as types

__all__ = ["prompt_changed", "read_changed", "texts_changed"]

_Block = TypeVar("_Block")


def _block_changed(block: _Block, change: Callable[[str], str]) -> _Block:
    if isinstance(block, types.TextContent):
        return block.model_copy(update={"text": change(block.text)})
    if isinstance(block, types.EmbeddedResource) and isinstance(block.resource, types.TextResourceContents):
        resource = block.resource.model_copy(update={"text": change(block.resource.text)})
        return block.model_copy(update={"resource": resource})
    return block


def texts_changed(result: types.CallToolResult, change: Callable[[str], str]) -> types.CallToolResult:
    """`result` with `change` applied to the text of each of its text blocks."""
    return result.model_copy(update={"content": [_block_changed(block, change) for block in result.content]})


def prompt_changed(result: types.GetPromptResult, change: Callable[[str], str]) -> types.GetPromptResult:
    """`result` with `change` applied to its description and the text of its messages."""
    messages = [message.model_copy(update={"content": _block_changed(message.content, change)}) for message in result.messages]
    description = change(result.description) if result.description is not None else None
    return result.model_copy(update={"messages": messages, "description": description})


def read_changed(result: types.ReadResourceResult, change: Callable[[str], str]) -> types.ReadResourceResult:
    """`result` with `change` applied to each of its text contents."""
    contents = [
        content.model_copy(update={"text": change(content.text)}) if isinstance(content, types.TextResourceContents)
        else content
        for content in result.contents
    ]
    return result.model_copy(update={"contents": contents})
