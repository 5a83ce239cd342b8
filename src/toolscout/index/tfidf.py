"""TF-IDF cosine (scikit-learn fits it) over one document per tool: shared tokens and their bigrams.

Queries are weighted here rather than through `TfidfVectorizer.transform`, whose input validation
costs milliseconds per call: the query's few terms select columns of the document matrix.

What scikit-learn fitted (the document matrix, the vocabulary, the idf) can be kept (`store`: any
`FitStore`, such as a state store's: `toolscout.state.fits`), keyed by a
hash of the exact documents, the scikit-learn version and this module's format: the same catalog
indexed again (a restarted `serve`, `toolscout search` over the catalog last seen, a second replica)
reads the fit back without importing scikit-learn (about a second); any other corpus has another
key and is fitted afresh. An unreadable or mismatched fit is fitted again.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache
from typing import Any, Protocol

import numpy as np

from toolscout.index.base import NOT_RETRIEVED, Query

__all__ = ["FitStore", "TfidfRetriever", "fit_key", "with_bigrams"]

logger = logging.getLogger(__name__)

# Bump when what is fitted or how it is stored changes: older files then no longer match.
_FORMAT = 1


def _identity(tokens: Sequence[str]) -> Sequence[str]:
    return tokens


def with_bigrams(tokens: Sequence[str]) -> list[str]:
    """Words plus adjacent word pairs: "exchange rate" then also matches as a phrase."""
    return [*tokens, *(f"{a} {b}" for a, b in zip(tokens, tokens[1:]))]


class FitStore(Protocol):
    """Fits by key, as bytes; best effort: a read that fails is None, a write that fails is dropped."""

    def read(self, key: str) -> bytes | None: ...

    def write(self, key: str, fit: bytes) -> None: ...


class TfidfRetriever:
    def __init__(self, corpus: Sequence[Sequence[str]], *, store: FitStore | None = None) -> None:
        self.size = len(corpus)
        # The key its fit is kept under in `store` ("" when not kept, or nothing was fitted).
        self.fit_key = ""
        self._columns: dict[str, int] = {}
        self._idf = np.zeros(0, dtype=np.float32)
        self._matrix: Any = None
        if any(corpus):
            documents = [with_bigrams(doc) for doc in corpus]
            key = fit_key(documents) if store is not None else ""
            fitted = _unpack(key, store.read(key)) if store is not None else None
            if fitted is None:
                fitted = _fit(documents)
                if store is not None:
                    store.write(key, _pack(key, *fitted))
            self.fit_key = key
            self._use(fitted)

    def _use(self, fitted: tuple[Any, list[str], np.ndarray]) -> None:
        self._matrix, terms, self._idf = fitted
        self._columns = {term: col for col, term in enumerate(terms)}

    @property
    def empty(self) -> bool:
        """True when no document had a token (nothing fitted: every query retrieves nothing)."""
        return self._matrix is None

    @classmethod
    def stored(cls, key: str, size: int, store: FitStore) -> TfidfRetriever | None:
        """The retriever of the fit kept under `key` for `size` documents, without the documents
        (whoever kept `key` knows what it was fitted on); None when it is missing or unusable."""
        fitted = _unpack(key, store.read(key))
        if fitted is None or fitted[0].shape[0] != size:
            return None
        retriever = cls([[]] * size)
        retriever.fit_key = key
        retriever._use(fitted)
        return retriever

    def scores(self, query: Query) -> np.ndarray:
        counts = Counter(t for t in with_bigrams(query.tokens) if t in self._columns)
        if self._matrix is None or not counts:
            return np.full(self.size, NOT_RETRIEVED, dtype=np.float32)
        columns = [self._columns[t] for t in counts]
        weights = (1 + np.log(np.fromiter(counts.values(), dtype=np.float32))) * self._idf[columns]
        weights /= np.linalg.norm(weights)
        cosine = np.asarray(self._matrix[:, columns] @ weights, dtype=np.float32).ravel()
        return np.where(cosine > 0, cosine, NOT_RETRIEVED)


def _fit(documents: list[list[str]]) -> tuple[Any, list[str], np.ndarray]:
    """The column-sliceable document matrix, the terms in column order, and their idf."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    # Sublinear tf: a word repeated across parameter descriptions should not dominate.
    vectorizer = TfidfVectorizer(analyzer=_identity, sublinear_tf=True, norm="l2", dtype=np.float32)
    rows = vectorizer.fit_transform(documents)
    terms = [""] * len(vectorizer.vocabulary_)
    for term, col in vectorizer.vocabulary_.items():
        terms[int(col)] = term
    return rows.tocsc(), terms, vectorizer.idf_.astype(np.float32)  # column slices per query term


@lru_cache(maxsize=1)
def _sklearn_version() -> str:
    from importlib.metadata import version

    return version("scikit-learn")


def fit_key(documents: Sequence[Sequence[str]]) -> str:
    """What a stored fit must have been fitted on: these documents, by this scikit-learn, in this format."""
    text = json.dumps([_FORMAT, _sklearn_version(), documents])
    return hashlib.sha256(text.encode("ascii")).hexdigest()


def _pack(key: str, matrix: Any, terms: list[str], idf: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.savez(
        buffer,
        key=np.frombuffer(key.encode("ascii"), dtype=np.uint8),
        terms=np.frombuffer(json.dumps(terms).encode("ascii"), dtype=np.uint8),
        data=matrix.data,
        indices=matrix.indices,
        indptr=matrix.indptr,
        shape=np.asarray(matrix.shape, dtype=np.int64),
        idf=idf,
    )
    return buffer.getvalue()


def _unpack(key: str, fit: bytes | None) -> tuple[Any, list[str], np.ndarray] | None:
    if fit is None:
        return None
    try:
        from scipy.sparse import csc_matrix

        with np.load(io.BytesIO(fit), allow_pickle=False) as stored:
            if bytes(stored["key"]).decode("ascii") != key:
                return None
            terms = json.loads(bytes(stored["terms"]).decode("ascii"))
            matrix = csc_matrix((stored["data"], stored["indices"], stored["indptr"]), shape=tuple(stored["shape"]))
            idf = stored["idf"]
        if not isinstance(terms, list) or len(terms) != matrix.shape[1] or idf.shape != (matrix.shape[1],):
            return None
        return matrix, terms, idf
    except Exception as exc:  # noqa: BLE001 - a damaged fit costs one fit, nothing else
        logger.debug("stored TF-IDF fit %s unusable (%s); fitting again", key, exc)
        return None
