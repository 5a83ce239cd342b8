"""TF-IDF cosine over one document per tool: shared tokens and their bigrams.

The weighting is scikit-learn's `TfidfVectorizer(sublinear_tf=True, norm="l2", dtype=float32)`,
computed here step for step (smooth idf = ln((1 + n) / (1 + df)) + 1, tf = 1 + ln(count), rows
scaled to unit length), so the scores are the same without importing scikit-learn, which cost
about 1.5 s of CPU at every start of `toolscout serve` and `toolscout search`. Queries select the
columns of their few terms in the document matrix.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np
from scipy import sparse

from toolscout.index.base import NOT_RETRIEVED, Query

__all__ = ["TfidfRetriever", "with_bigrams"]


def with_bigrams(tokens: Sequence[str]) -> list[str]:
    """Words plus adjacent word pairs: "exchange rate" then also matches as a phrase."""
    return [*tokens, *(f"{a} {b}" for a, b in zip(tokens, tokens[1:]))]


class TfidfRetriever:
    def __init__(self, corpus: Sequence[Sequence[str]]) -> None:
        self.size = len(corpus)
        self._columns: dict[str, int] = {}
        self._idf = np.zeros(0, dtype=np.float32)
        self._matrix = None
        if any(corpus):
            self._matrix, self._columns, self._idf = _fit([with_bigrams(doc) for doc in corpus])

    def scores(self, query: Query) -> np.ndarray:
        counts = Counter(t for t in with_bigrams(query.tokens) if t in self._columns)
        if self._matrix is None or not counts:
            return np.full(self.size, NOT_RETRIEVED, dtype=np.float32)
        columns = [self._columns[t] for t in counts]
        weights = (1 + np.log(np.fromiter(counts.values(), dtype=np.float32))) * self._idf[columns]
        weights /= np.linalg.norm(weights)
        cosine = np.asarray(self._matrix[:, columns] @ weights, dtype=np.float32).ravel()
        return np.where(cosine > 0, cosine, NOT_RETRIEVED)


def _fit(documents: Sequence[Sequence[str]]) -> tuple[sparse.csc_matrix, dict[str, int], np.ndarray]:
    """The l2-normalised sublinear tf-idf matrix (one row per document), its columns and the idf."""
    columns: dict[str, int] = {}
    indptr, indices, counts = [0], [], []
    for document in documents:
        for term, count in Counter(document).items():
            indices.append(columns.setdefault(term, len(columns)))
            counts.append(count)
        indptr.append(len(indices))
    index = np.asarray(indices, dtype=np.int64)
    document_frequency = np.bincount(index, minlength=len(columns)).astype(np.float32) + 1.0
    idf = np.full_like(document_frequency, len(documents) + 1)
    idf /= document_frequency
    np.log(idf, out=idf)
    idf += 1.0
    # Sublinear tf: a word repeated across parameter descriptions should not dominate.
    data = np.log(np.asarray(counts, dtype=np.float32))
    data += 1.0
    data *= idf[index]
    # Row norms summed in float64, as scikit-learn's normalize does; empty rows stay empty.
    squares = np.square(data, dtype=np.float64)
    row_of = np.repeat(np.arange(len(documents)), np.diff(indptr))
    norms = np.sqrt(np.bincount(row_of, weights=squares, minlength=len(documents)))
    norms[norms == 0.0] = 1.0
    data = (data / norms[row_of]).astype(np.float32)
    matrix = sparse.csr_matrix((data, index, np.asarray(indptr)), shape=(len(documents), len(columns)))
    return matrix.tocsc(), columns, idf  # column slices per query term
