"""Embeddings shared by every replica through the Postgres state store.

The same interface as the per-machine cache (`toolscout.index.cache.EmbeddingCache`): vectors by
model id and text hash, and the model id last loaded from given model files. A tool is embedded
once per text hash by whichever replica gets to it first; every other replica, and every later
start, reads the vector back instead of encoding it. Replicas starting together may both encode
the same text: the second write is dropped (same hash, same model, same vector).

An unreachable store costs speed, never an answer: a failed read is a miss (the text is encoded
here) and a failed write is logged and dropped.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

import numpy as np

from toolscout.errors import StateError
from toolscout.state.postgres import PostgresStateStore

__all__ = ["SharedEmbeddingCache"]

logger = logging.getLogger(__name__)


class SharedEmbeddingCache:
    def __init__(self, url: str) -> None:
        self._store = PostgresStateStore(url)
        self.location = self._store.location

    def get(self, model: str, hashes: Iterable[str]) -> dict[str, np.ndarray]:
        wanted = list(dict.fromkeys(hashes))
        if not wanted:
            return {}
        try:
            with self._store.cursor() as cursor:
                cursor.execute(
                    "SELECT text_hash, vector FROM embeddings WHERE model = %s AND text_hash = ANY(%s)",
                    (model, wanted),
                )
                rows = cursor.fetchall()
        except StateError as exc:
            logger.warning("shared embeddings unavailable, encoding here: %s", exc)
            return {}
        return {key: np.frombuffer(bytes(blob), dtype=np.float32) for key, blob in rows}

    def put(self, model: str, vectors: Mapping[str, np.ndarray]) -> None:
        rows = [(model, key, np.asarray(v, dtype=np.float32).tobytes()) for key, v in vectors.items()]
        try:
            with self._store.cursor() as cursor:
                cursor.executemany(
                    "INSERT INTO embeddings (model, text_hash, vector) VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                    rows,
                )
        except StateError as exc:
            logger.warning("shared embeddings unavailable, vectors kept here only: %s", exc)

    def model_of(self, source: str) -> str | None:
        try:
            with self._store.cursor() as cursor:
                cursor.execute("SELECT model FROM embedding_models WHERE source = %s", (source,))
                row = cursor.fetchone()
        except StateError:
            return None
        return None if row is None else str(row[0])

    def remember_model(self, source: str, model: str) -> None:
        with self._store.cursor() as cursor:
            cursor.execute(
                "INSERT INTO embedding_models (source, model) VALUES (%s, %s) "
                "ON CONFLICT (source) DO UPDATE SET model = excluded.model",
                (source, model),
            )
