"""Phrase hygiene shared by every source of expansion text: cleaning, identity, bounded merging.

Overlays, example requests, usage and generated phrases all end up in one expansion document per
tool; they must agree on when two phrases are "the same" (case and whitespace do not matter) and
on how many a tool may carry, or one noisy source would drown the others.
"""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["MAX_PHRASES_PER_TOOL", "MAX_PHRASE_CHARS", "clean_phrase", "merge_phrases", "phrase_key"]

# Enough to cover a tool's vocabulary; more only dilutes BM25 length normalisation.
MAX_PHRASES_PER_TOOL = 64
# A phrase is a request or a synonym, not a paragraph.
MAX_PHRASE_CHARS = 200


def clean_phrase(text: str) -> str:
    """`text` with runs of whitespace collapsed and ends trimmed."""
    return " ".join(text.split())


def phrase_key(text: str) -> str:
    """The identity of a phrase for deduplication: case- and whitespace-insensitive."""
    return clean_phrase(text).casefold()


def merge_phrases(*groups: Iterable[str], limit: int = MAX_PHRASES_PER_TOOL) -> tuple[str, ...]:
    """The phrases of `groups`, in order, cleaned, without duplicates, at most `limit` of them.

    Earlier groups win both duplicates and the budget, so callers pass the most trusted source first.
    Empty and over-long phrases are dropped.
    """
    seen: set[str] = set()
    merged: list[str] = []
    for group in groups:
        for raw in group:
            if len(merged) >= limit:
                return tuple(merged)
            phrase = clean_phrase(raw)
            key = phrase.casefold()
            if not phrase or len(phrase) > MAX_PHRASE_CHARS or key in seen:
                continue
            seen.add(key)
            merged.append(phrase)
    return tuple(merged)
