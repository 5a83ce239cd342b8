"""BM25 (bm25s) over one tokenized field, with bm25s's sharp edges absorbed.

bm25s raises on an empty corpus and on a query whose tokens are all unknown; here both simply
retrieve nothing. A built index can be saved to a folder and loaded again in bm25s's own form
(numpy arrays without pickles and JSON), which `toolscout.search.catalog_index` keeps.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import bm25s
import numpy as np

from toolscout.index.base import NOT_RETRIEVED, Query

__all__ = ["BM25Retriever"]

# A document with no tokens still needs a row so that rows stay aligned with tools.
_EMPTY_TOKEN = "\x00"


class BM25Retriever:
    def __init__(
        self,
        corpus: Sequence[Sequence[str]],
        *,
        k1: float = 1.2,
        # Little length normalisation (the usual is 0.75): long tool descriptions usually cover more
        # ground rather than ramble. Measured on toollens_train, fused, both halves of its queries:
        # b = 0.4 over 0.75 Full Recall@10 +0.007; b = 0.2 over 0.4 +0.002 / +0.004.
        b: float = 0.2,
        method: str = "lucene",
    ) -> None:
        model = None
        if any(corpus):
            model = bm25s.BM25(k1=k1, b=b, method=method)
            model.index([list(doc) or [_EMPTY_TOKEN] for doc in corpus], show_progress=False)
        self._use(len(corpus), model)

    def _use(self, size: int, model: bm25s.BM25 | None) -> None:
        self.size = size
        self._model = model
        self._vocabulary = frozenset() if model is None else frozenset(model.vocab_dict) - {_EMPTY_TOKEN}

    @property
    def empty(self) -> bool:
        """True when no document had a token (nothing to save: every query retrieves nothing)."""
        return self._model is None

    def save(self, folder: Path) -> None:
        """The built index in bm25s's own saved form; nothing for an empty one."""
        if self._model is not None:
            self._model.save(folder, show_progress=False)

    @classmethod
    def load(cls, folder: Path | None, size: int) -> BM25Retriever:
        """The index `save` wrote to `folder` for `size` documents (None: an empty one). Raises
        (ValueError, OSError, ...) when the files are missing or not an index of `size` documents."""
        retriever = cls(())
        model = None
        if folder is not None:
            model = bm25s.BM25.load(folder, allow_pickle=False, show_progress=False)
            scores = model.scores
            indptr, indices = scores["indptr"], scores["indices"]
            # bm25s gives "" (its empty token) an id past the matrix; no query token is "".
            ids = [i for token, i in model.vocab_dict.items() if token != ""]
            if (
                scores["num_docs"] != size
                or (ids and not 0 <= min(ids) <= max(ids) < len(indptr) - 1)
                or len(scores["data"]) != len(indices)
                or int(indptr[-1]) != len(indices)
                or (len(indices) and not 0 <= int(indices.min()) <= int(indices.max()) < size)
            ):
                raise ValueError(f"not a BM25 index of {size} documents")
        retriever._use(size, model)
        return retriever

    def raw_scores(self, tokens: Sequence[str]) -> np.ndarray:
        """BM25 score of every document (0 where no query token occurs)."""
        known = [token for token in tokens if token in self._vocabulary]
        if self._model is None or not known:
            return np.zeros(self.size, dtype=np.float32)
        return np.asarray(self._model.get_scores(known), dtype=np.float32)

    def scores(self, query: Query) -> np.ndarray:
        scores = self.raw_scores(query.tokens)
        return np.where(scores > 0, scores, NOT_RETRIEVED)
