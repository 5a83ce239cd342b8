"""TF-IDF cosine (scikit-learn) over one document per tool, with the shared tokenizer's tokens."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer

from toolscout.index.base import NOT_RETRIEVED, Query


def _identity(tokens: Sequence[str]) -> Sequence[str]:
    return tokens


class TfidfRetriever:
    def __init__(self, corpus: Sequence[Sequence[str]]) -> None:
        self.size = len(corpus)
        # Sublinear tf: a word repeated across parameter descriptions should not dominate.
        self._vectorizer = TfidfVectorizer(
            analyzer=_identity, sublinear_tf=True, norm="l2", dtype=np.float32
        )
        self._matrix = None
        if any(corpus):
            self._matrix = self._vectorizer.fit_transform([list(doc) for doc in corpus])

    def scores(self, query: Query) -> np.ndarray:
        if self._matrix is None or not query.tokens:
            return np.full(self.size, NOT_RETRIEVED, dtype=np.float32)
        vector = self._vectorizer.transform([list(query.tokens)])
        if vector.nnz == 0:
            return np.full(self.size, NOT_RETRIEVED, dtype=np.float32)
        cosine = np.asarray((self._matrix @ vector.T).todense(), dtype=np.float32).ravel()
        return np.where(cosine > 0, cosine, NOT_RETRIEVED)
