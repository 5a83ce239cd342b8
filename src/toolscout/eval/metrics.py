"""Ranking metrics at a cut-off k, as defined in the shared benchmark README. Pure functions.

`retrieved` is the ranked list of tool ids a search returned (best first); only its first k
count. A query's *steps* are its groups of interchangeable ids (see toolscout.eval.datasets).

- recall:       1 if any relevant-or-acceptable id is in the top k.
- mrr:          1 / rank of the first relevant-or-acceptable id in the top k, else 0.
- full_recall:  fraction of steps with at least one member in the top k.
- complete:     1 if every step is covered in the top k.
- ndcg:         binary gain: a position gains 1 when it covers a step not covered above it (each
                step counts once); the ideal ranking covers one new step per position.
- multi_recall: mean full_recall over the queries of kind "multi"; None when there are none.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from toolscout.eval.datasets import Query

__all__ = ["complete", "full_recall", "mrr", "multi_recall", "ndcg", "paired_noise", "recall"]


def recall(retrieved: Sequence[str], query: Query, k: int) -> float:
    answers = query.answers
    return 1.0 if any(tool_id in answers for tool_id in retrieved[:k]) else 0.0


def mrr(retrieved: Sequence[str], query: Query, k: int) -> float:
    answers = query.answers
    for rank, tool_id in enumerate(retrieved[:k], start=1):
        if tool_id in answers:
            return 1.0 / rank
    return 0.0


def full_recall(retrieved: Sequence[str], query: Query, k: int) -> float:
    return len(_covered_steps(retrieved[:k], query)) / len(query.relevant_groups)


def complete(retrieved: Sequence[str], query: Query, k: int) -> float:
    return 1.0 if len(_covered_steps(retrieved[:k], query)) == len(query.relevant_groups) else 0.0


def ndcg(retrieved: Sequence[str], query: Query, k: int) -> float:
    covered: set[int] = set()
    dcg = 0.0
    for position, tool_id in enumerate(retrieved[:k]):
        new = {index for index, group in enumerate(query.relevant_groups) if tool_id in group} - covered
        if new:
            covered |= new
            dcg += 1.0 / math.log2(position + 2)
    ideal = sum(1.0 / math.log2(position + 2) for position in range(min(len(query.relevant_groups), k)))
    return dcg / ideal if ideal else 0.0


def multi_recall(scored: Iterable[tuple[Query, float]]) -> float | None:
    """Mean of per-query Full Recall (the float of each pair) over the multi-step queries."""
    values = [value for query, value in scored if query.kind == "multi"]
    return sum(values) / len(values) if values else None


def _covered_steps(top: Sequence[str], query: Query) -> set[int]:
    found = set(top)
    return {index for index, group in enumerate(query.relevant_groups) if found.intersection(group)}


def paired_noise(a: Sequence[bool], b: Sequence[bool]) -> float:
    """Run-to-run noise of the difference between two systems' hit rates on the same requests:
    twice its standard error, counting only the requests where exactly one of the two is right
    (sqrt(discordant) / n, McNemar's view). A difference inside it is not evidence."""
    if len(a) != len(b):
        raise ValueError("paired_noise needs the same requests on both sides")
    discordant = sum(x != y for x, y in zip(a, b))
    return 2.0 * discordant**0.5 / max(len(a), 1)
