"""Requests that name several needs ("Find X. Then do Y."): each sentence is also searched alone.

A long request's words pull its ranking towards whichever need has the most of them, so a tool that
serves a shorter need sinks. Each sentence is searched with the same signals and fused the same
way; a tool then gains `weight x` its best fused score over the sentences (a max, not a sum: a tool
matching every sentence is already helped by the whole request). Requests of one sentence are left
as they are.

Measured on toollens_train only (never on the evaluation sets). Its own requests are mostly one
sentence and do not change (Full Recall@10 +0.001 / +0.002 on its two halves). Requests built from
two of its requests joined, steps united (2,000, half to choose, half to check): Full Recall@10
0.378 -> 0.395 (choose) and 0.363 -> 0.384 (check), MRR@10 0.664 -> 0.690 and 0.684 -> 0.715.
Splitting also on "and", "then", ";" did no better and costs more searches. The sentences are
embedded in one encoder call and their mean direction stands for the whole request, so a request
costs about one encoding as before (embedding the whole request as well scored the same on the
choose half, 0.395, and 0.388 rather than 0.384 on the check half, at twice the encoding time).
"""

from __future__ import annotations

import re
from collections.abc import Hashable, Sequence
from typing import TypeVar

import numpy as np

from toolscout.index.text import tokenize

__all__ = ["add_best_part", "mean_direction", "request_parts"]

Item = TypeVar("Item", bound=Hashable)

_SENTENCE_END = re.compile(r"(?<=[.?!])\s+(?=[A-Z])")
# A sentence with fewer content words ("Thanks!", "Please.") names no need of its own.
_MIN_WORDS = 2
# Bounded work per search, whatever the request's length.
_MAX_PARTS = 8


def request_parts(text: str) -> list[str]:
    """The sentences of a request that name a need, or [] when it has fewer than two of them."""
    parts = [s.strip() for s in _SENTENCE_END.split(text) if len(tokenize(s)) >= _MIN_WORDS]
    return parts[:_MAX_PARTS] if len(parts) >= 2 else []


def add_best_part(
    fused: Sequence[tuple[Item, float]], parts: Sequence[Sequence[tuple[Item, float]]], weight: float
) -> list[tuple[Item, float]]:
    """`fused` (the whole request) plus `weight` x each item's best score over `parts`, best first."""
    scores = dict(fused)
    best: dict[Item, float] = {}
    for part in parts:
        for item, score in part:
            best[item] = max(best.get(item, 0.0), score)
    for item, score in best.items():
        scores[item] = scores.get(item, 0.0) + weight * score
    return sorted(scores.items(), key=lambda pair: -pair[1])


def mean_direction(rows: np.ndarray) -> np.ndarray:
    """The L2-normalised mean of unit rows: one embedding for a request from its sentences'."""
    mean = rows.mean(axis=0)
    norm = float(np.linalg.norm(mean))
    return mean / norm if norm > 0 else mean
