"""The intent signal: tools voted for by the example requests nearest to the query.

Examples say "this request was served by these tools". A query close to past requests probably
wants the same tools, whatever words its tools' descriptions use. The retriever embeds every
example request (through the same cached `Embedder` as the tool documents), finds the query's
`neighbours` most similar examples (ignoring those below `min_similarity`), and scores each tool by
the sum of the similarities of those neighbours that name it: many close examples agreeing on a
tool outvote one distant example.
Tools no neighbour names are not retrieved. The query embedding is the one dense already computed.

Fusion only sees ranks, so a vote's rank 1 would weigh the same whether ten close examples agree
on it or one distant example names it. The vote therefore also says how sure it is: its
`confidence` is the top tool's vote over `full_vote` x `neighbours` (capped at 1), i.e. full when
the neighbours naming the best tool add up to that share of the largest possible vote (e.g. 8 of 10
at cosine 0.75 for 0.6), and proportionally less below. The engine multiplies the weights of the
signals fed by examples by it, per query: when past requests are about other things, retrieval
falls back to the zero-shot signals instead of following them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from toolscout.index.base import NOT_RETRIEVED, Query, Retrieval

__all__ = ["IntentExamples", "IntentRetriever", "IntentVote", "LabelledRequest", "normalise_request"]

_WORDS = re.compile(r"\w+")


class LabelledRequest(Protocol):
    """An example request and the tools that served it (`toolscout.learning.Example` is one)."""

    @property
    def query(self) -> str: ...

    @property
    def tool_ids(self) -> Sequence[str]: ...


def normalise_request(text: str) -> str:
    """Case, punctuation and spacing removed: two requests that differ only in those are one."""
    return " ".join(_WORDS.findall(text.casefold()))


@dataclass(frozen=True)
class IntentExamples:
    """Example requests bound to one catalog: each text with the catalog positions it names."""

    texts: tuple[str, ...] = ()
    labels: tuple[tuple[int, ...], ...] = ()

    @classmethod
    def of(cls, examples: Sequence[LabelledRequest], positions: Mapping[str, int]) -> IntentExamples:
        """The examples naming tools of this catalog (by id -> position); repeats of a request merge.

        Merging keeps a request that was recorded many times from filling every neighbour slot.
        """
        merged: dict[str, dict[int, None]] = {}
        texts: dict[str, str] = {}
        for example in examples:
            text = example.query
            known = [positions[tool_id] for tool_id in example.tool_ids if tool_id in positions]
            key = normalise_request(text)
            if not known or not key:
                continue
            texts.setdefault(key, text)
            merged.setdefault(key, {}).update(dict.fromkeys(known))
        return cls(texts=tuple(texts.values()), labels=tuple(tuple(tools) for tools in merged.values()))

    def __bool__(self) -> bool:
        return bool(self.texts)


@dataclass(frozen=True)
class IntentVote(Retrieval):
    """One query's vote: a score per tool (NOT_RETRIEVED where no neighbour names it), and how sure it is."""

    # 0 (no neighbour close enough) to 1 (the best tool's vote reaches full_vote x neighbours).
    confidence: float = 0.0


class IntentRetriever:
    """Scores tools by a k-nearest-neighbour vote over embedded example requests."""

    def __init__(
        self,
        matrix: np.ndarray,
        labels: Sequence[Sequence[int]],
        size: int,
        *,
        neighbours: int,
        min_similarity: float = 0.0,
        full_vote: float = 0.0,
    ) -> None:
        if len(matrix) != len(labels):
            raise ValueError("one embedding per example request is needed")
        self.matrix = np.ascontiguousarray(matrix, dtype=np.float32)
        self.size = size  # tools in the catalog
        self.neighbours = max(1, neighbours)
        # Below this cosine an example is about something else: with few examples, the nearest
        # ones may be unrelated, and they must not vote.
        self.min_similarity = min_similarity
        # The top vote at which the vote is fully trusted; 0 trusts every vote fully.
        self.full_vote = full_vote * self.neighbours
        # Flattened (example, tool) pairs, so a vote is one bincount.
        self._owner = np.array([i for i, tools in enumerate(labels) for _ in tools], dtype=np.int64)
        self._tool = np.array([t for tools in labels for t in tools], dtype=np.int64)
        # Where each example's pairs start in the flattened arrays.
        self._start = np.concatenate(([0], np.cumsum([len(tools) for tools in labels]))).astype(np.int64)
        # The last query and its vote: the TF-IDF signal asks whether past requests are close to a
        # query before this signal answers it (toolscout.search.pipeline), so one search would
        # otherwise vote twice. Read-only, replaced whole: a search on another thread only misses it.
        self._last: tuple[Query, IntentVote] | None = None

    def scores(self, query: Query) -> np.ndarray:
        return self.vote(query).scores

    def vote(self, query: Query) -> IntentVote:
        last = self._last
        if last is not None and last[0] is query:
            return last[1]
        answer = self._vote(query)
        answer.scores.setflags(write=False)
        self._last = (query, answer)
        return answer

    def _vote(self, query: Query) -> IntentVote:
        scores = np.full(self.size, NOT_RETRIEVED, dtype=np.float32)
        if query.embedding is None or len(self.matrix) == 0:
            return IntentVote(scores, 0.0)
        # einsum: see DenseRetriever (much faster than `@` through some BLAS builds).
        similarity = np.einsum("ij,j->i", self.matrix, query.embedding.astype(np.float32, copy=False))
        count = min(self.neighbours, len(similarity))
        nearest = np.argpartition(-similarity, count - 1)[:count]
        nearest = nearest[similarity[nearest] >= self.min_similarity]
        if nearest.size == 0:
            return IntentVote(scores, 0.0)
        pairs = np.concatenate([np.arange(self._start[i], self._start[i + 1]) for i in nearest])
        votes = np.bincount(self._tool[pairs], weights=similarity[self._owner[pairs]], minlength=self.size)
        named = np.zeros(self.size, dtype=bool)
        named[self._tool[pairs]] = True
        scores[named] = votes[named]
        top = float(votes.max())
        return IntentVote(scores, 1.0 if self.full_vote <= 0 else min(1.0, top / self.full_vote))
