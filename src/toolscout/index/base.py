"""What the engine fuses: retrievers that score every tool of a catalog snapshot for one query.

A retriever is fitted on one document per tool (its field) and answers `scores(query)`: one float per
tool, higher is better, `-inf` for tools it did not retrieve at all. The engine ranks those scores;
fusion only ever sees ranks, so signals of different scales never mix.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

__all__ = ["NOT_RETRIEVED", "Encoder", "Query", "Retrieval", "Retriever"]

NOT_RETRIEVED = -np.inf


@dataclass(frozen=True)
class Query:
    """One search request as the retrievers see it: computed once, shared by every signal."""

    text: str
    tokens: tuple[str, ...]
    # L2-normalised query embedding; None when no embedding signal is ready.
    embedding: np.ndarray | None = None


@dataclass(frozen=True)
class Retrieval:
    """A signal's answer to one query: its scores, and how far it trusts them for this query."""

    scores: np.ndarray
    # 0 to 1 from a signal that knows how sure it is (the intent vote); None from one that does not.
    confidence: float | None = None


class Retriever(Protocol):
    def scores(self, query: Query) -> np.ndarray:
        """One score per tool of the snapshot it was built on; NOT_RETRIEVED where nothing matched."""
        ...


class Encoder(Protocol):
    """Turns texts into L2-normalised float32 rows; `model_id` keys the embedding cache."""

    model_id: str

    def encode(self, texts: Sequence[str]) -> np.ndarray: ...
