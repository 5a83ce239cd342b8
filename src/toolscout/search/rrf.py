"""Reciprocal rank fusion: the one formula every ordering of toolscout's is built from.

Each signal contributes weight / (k + rank) for every item it ranked (rank 1 is its best); items
no signal ranked get nothing. A larger `k` flattens the difference between top and lower ranks.
The engine's fusion, the learned ranker's reciprocal-rank features and its vote, the reranker's
blend, and the replays that fit and choose their weights all call `reciprocal_rank` with the one
`RRF_K`, so a replay orders exactly as the engine does.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import TypeVar

import numpy as np

__all__ = ["RRF_K", "reciprocal_rank", "weighted_rrf"]

# Small: a signal's first places count clearly more than its tenth (tuned with the signals'
# weights by `toolscout tune`; a weights file may carry its own k).
RRF_K = 5

Item = TypeVar("Item", bound=Hashable)
Ranks = TypeVar("Ranks", float, np.ndarray)


def reciprocal_rank(ranks: Ranks, weight: float = 1.0, k: float = RRF_K) -> Ranks:
    """weight / (k + rank), for one rank or an array of them (an infinite rank gives 0)."""
    return weight / (k + ranks)


def weighted_rrf(
    rankings: Mapping[str, Sequence[Item]], weights: Mapping[str, float], *, k: float = RRF_K
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
            scores[item] = scores.get(item, 0.0) + reciprocal_rank(rank, weight, k)
    return sorted(scores.items(), key=lambda pair: -pair[1])
