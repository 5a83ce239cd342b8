"""Weighted Reciprocal Rank Fusion: ranks from several signals into one order, scores never mixed.

Each signal contributes weight / (k + rank) for every item it ranked (rank 1 is its best). Items
no signal ranked get nothing. Larger `k` flattens the difference between top and lower ranks.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

__all__ = ["weighted_rrf"]

Item = TypeVar("Item", bound=Hashable)


def weighted_rrf(
    rankings: Mapping[str, Sequence[Item]], weights: Mapping[str, float], *, k: float
) -> list[tuple[Item, float]]:
    """Items with their fused scores, best first; ties keep the order items were first seen in."""
    if k < 0:
        raise ValueError(f"RRF k must be >= 0, got {k}")
    scores: dict[Item, float] = {}
    for signal, ranking in rankings.items():
        weight = weights.get(signal, 0.0)
        if weight <= 0:
            continue
        for rank, item in enumerate(ranking, start=1):
            scores[item] = scores.get(item, 0.0) + weight / (k + rank)
    return sorted(scores.items(), key=lambda pair: -pair[1])
