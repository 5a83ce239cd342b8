"""Turning a catalog's dense documents into a matrix of embeddings, encoding only what is new.

Vectors are looked up in memory, then in the stored embeddings (model id + text hash,
`toolscout.state.vectors`), and only the
remaining texts are encoded, in batches, reporting progress. The encoder is loaded on first need
(in the worker thread that runs `complete`), never at import or index time. At index time
`cached_matrix` may still read stored vectors: the store remembers the id of the model last
loaded from the same files, so a restart over a known catalog is semantic from its first search.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

from toolscout.index.base import Encoder
from toolscout.index.model_files import ModelLocation
from toolscout.state.content import ContentStore
from toolscout.state.vectors import StoredEmbeddings, text_hash

__all__ = ["Embedder", "EmbeddingSettings"]

log = logging.getLogger(__name__)

_CHUNK = 64
# Vectors kept in memory across catalogs (~1.5 KB each at 384 dimensions): enough for several
# large catalogs plus example requests, bounded for long-running gateways.
_MEMORY_LIMIT = 100_000


class EmbeddingSettings(Protocol):
    """What an `Embedder` reads of the search settings (`toolscout.search.settings.SearchSettings`;
    search/ builds on index/, not the other way round)."""

    model: str | None
    backend: str
    shared_vectors: str | None

    @property
    def resolved_cache_dir(self) -> Path: ...


class Embedder:
    def __init__(
        self, settings: EmbeddingSettings, encoder: Encoder | None = None, content: ContentStore | None = None
    ) -> None:
        self._settings = settings
        # Where vectors are kept: the engine's content store when it shares one, else its own.
        self._content = content or ContentStore(settings.shared_vectors, settings.resolved_cache_dir)
        self._encoder = encoder
        self._load_lock = threading.Lock()
        # Why the model could not be used, once loading failed; searches then stay keyword-only.
        self.error: str | None = None
        self._memory: dict[str, np.ndarray] = {}
        self._cache: StoredEmbeddings | None = None
        self.encoded = 0  # texts actually run through the model by this embedder (for tests, stats)

    def encoder(self, wait: float | None = None) -> Encoder | None:
        """The loaded encoder, loading it first if need be; None if it cannot be loaded.

        `wait`: give up (None, no error recorded) after this many seconds of waiting for another
        thread that is loading it.
        """
        if self._encoder is not None:
            return self._encoder
        if not self._load_lock.acquire(timeout=-1 if wait is None else wait):
            return None
        try:
            if self._encoder is None and self.error is None:
                self._encoder = self._load()
            return self._encoder
        finally:
            self._load_lock.release()

    def _load(self) -> Encoder | None:
        from toolscout.index.dense import load_encoder
        from toolscout.index.model_files import resolve_model

        try:
            location = resolve_model(self._settings.model)
            assert location is not None, "dense signal enabled without a model"
            log.info("loading embedding model %s (%s)", location.spec, self._settings.backend)
            encoder = load_encoder(
                location, backend=self._settings.backend, work_dir=self._settings.resolved_cache_dir
            )
        except Exception as exc:  # the one seam where model loading failures become a notice
            self.error = str(exc) or type(exc).__name__
            log.error("embedding model unavailable, keyword search only: %s", self.error)
            return None
        cache = self._disk(encoder.model_id)
        if cache is not None:
            try:
                cache.remember_model(self._source(location), encoder.model_id)
            except Exception as exc:  # noqa: BLE001 - only the next restart's first searches lose
                log.warning("embedding cache: cannot remember the model's id (%s)", exc)
        return encoder

    def _source(self, location: ModelLocation) -> str:
        """What fixes a model's id before it is loaded: where its files are, and the backend."""
        return f"{location.identity} {self._settings.backend}"

    def _known_model_id(self) -> str | None:
        """The model's id without loading it: the loaded encoder's, else the one the cache remembers."""
        if self._encoder is not None:
            return self._encoder.model_id
        if self.error is not None:
            return None
        from toolscout.index.model_files import resolve_model

        try:
            location = resolve_model(self._settings.model)
            cache = self._disk("")
            return None if location is None or cache is None else cache.model_of(self._source(location))
        except Exception:  # noqa: BLE001 - the model's load, later, reports what is wrong
            return None

    def _disk(self, model_id: str) -> StoredEmbeddings | None:
        if self._cache is None:
            try:
                store = self._content.get()
            except Exception as exc:  # an unusable store slows restarts but breaks nothing
                log.warning("embedding store unavailable (%s); embeddings are not kept", exc)
                return None
            self._cache = StoredEmbeddings(store)
        return self._cache

    def cached_matrix(self, texts: Sequence[str]) -> np.ndarray | None:
        """The matrix for `texts` from vectors in memory or on disk, or None if any is missing.

        Never loads the model: vectors on disk are read under the id the cache remembers for it.
        """
        hashes = [text_hash(t) for t in texts]
        missing = [h for h in dict.fromkeys(hashes) if h not in self._memory]
        if missing:
            model_id = self._known_model_id()
            cache = self._disk(model_id) if model_id is not None else None
            if cache is None:
                return None
            found = cache.get(model_id, missing)  # type: ignore[arg-type]
            if len(found) < len(missing):
                return None
            self._memory.update(found)
        # .get, not [], because complete() may evict vectors from another thread meanwhile.
        vectors = [self._memory.get(h) for h in hashes]
        if not vectors or any(v is None for v in vectors):
            return None
        return np.stack(vectors)

    def matrix(
        self, texts: Sequence[str], progress: Callable[[int, int], None] | None = None
    ) -> np.ndarray | None:
        """One row per text (tool documents, or any other texts such as example requests)."""
        encoder = self.encoder()
        if encoder is None:
            return None
        hashes = [text_hash(t) for t in texts]
        missing = [h for h in dict.fromkeys(hashes) if h not in self._memory]
        cache = self._disk(encoder.model_id)
        if cache is not None and missing:
            self._memory.update(cache.get(encoder.model_id, missing))
        by_hash = dict(zip(hashes, texts))
        todo = [h for h in missing if h not in self._memory]
        if todo:
            log.info("embedding %d of %d texts (tool descriptions or example requests)", len(todo), len(set(hashes)))
        for start in range(0, len(todo), _CHUNK):
            chunk = todo[start : start + _CHUNK]
            vectors = encoder.encode([by_hash[h] for h in chunk])
            fresh = dict(zip(chunk, np.asarray(vectors, dtype=np.float32)))
            self._memory.update(fresh)
            self.encoded += len(chunk)
            if cache is not None:
                cache.put(encoder.model_id, fresh)
            done = min(start + _CHUNK, len(todo))
            log.info("embedded %d/%d", done, len(todo))
            if progress is not None:
                progress(done, len(todo))
        self._forget_oldest(keep=set(hashes))
        if not hashes:
            return np.zeros((0, 0), dtype=np.float32)
        return np.stack([self._memory[h] for h in hashes])

    def _forget_oldest(self, keep: set[str]) -> None:
        excess = len(self._memory) - _MEMORY_LIMIT
        if excess > 0:
            for key in [h for h in self._memory if h not in keep][:excess]:
                del self._memory[key]

    def encode_query(self, text: str) -> np.ndarray | None:
        encoder = self.encoder()
        if encoder is None:
            return None
        return np.asarray(encoder.encode([text]), dtype=np.float32)[0]
