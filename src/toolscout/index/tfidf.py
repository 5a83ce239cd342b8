"""TF-IDF cosine (scikit-learn fits it) over one document per tool: shared tokens and their bigrams.

Queries are weighted here rather than through `TfidfVectorizer.transform`, whose input validation
costs milliseconds per call: the query's few terms select columns of the document matrix.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer

from toolscout.index.base import NOT_RETRIEVED, Query

__all__ = ["TfidfRetriever", "with_bigrams"]


def _identity(tokens: Sequence[str]) -> Sequence[str]:
    return tokens


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
            # Sublinear tf: a word repeated across parameter descriptions should not dominate.
            vectorizer = TfidfVectorizer(
                analyzer=_identity, sublinear_tf=True, norm="l2", dtype=np.float32
            )
            rows = vectorizer.fit_transform([with_bigrams(doc) for doc in corpus])
            self._matrix = rows.tocsc()  # column slices per query term
            self._columns = {term: int(col) for term, col in vectorizer.vocabulary_.items()}
            self._idf = vectorizer.idf_.astype(np.float32)

    def scores(self, query: Query) -> np.ndarray:
        counts = Counter(t for t in with_bigrams(query.tokens) if t in self._columns)
        if self._matrix is None or not counts:
            return np.full(self.size, NOT_RETRIEVED, dtype=np.float32)
        columns = [self._columns[t] for t in counts]
        weights = (1 + np.log(np.fromiter(counts.values(), dtype=np.float32))) * self._idf[columns]
        weights /= np.linalg.norm(weights)
        cosine = np.asarray(self._matrix[:, columns] @ weights, dtype=np.float32).ravel()
        return np.where(cosine > 0, cosine, NOT_RETRIEVED)
