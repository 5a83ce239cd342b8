"""Embeddings kept in a state store, by model id and a hash of the embedded text.

Restarting over an unchanged catalog reads every vector back and encodes nothing; a changed tool
has a new text hash, so only it is encoded again. Over a Postgres state store every replica shares
them: a tool is embedded once per text by whichever replica gets to it first (replicas starting
together may both encode a text; the second write is dropped: same hash, same model, same vector).
A machine without one keeps them in a SQLite store of its own cache folder
(`toolscout.state.content`).

A model's id is known once it is loaded, which takes seconds; the store also remembers which id the
model files at a given place (and backend) had, so vectors can be read back before the model loads.

An unusable store costs speed, never an answer: a failed read is a miss (the text is encoded
here) and a failed write is logged and dropped.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Iterable, Mapping

import numpy as np

from toolscout.errors import StateError
from toolscout.state.store import StateStore

__all__ = ["ANALYZE_EVERY", "StoredEmbeddings", "text_hash"]

logger = logging.getLogger(__name__)

# Stay well under SQLite's cap on bound parameters per statement.
_CHUNK = 500
# After this many vectors written by one process, the table's statistics are refreshed: a query
# planner that has none (a table bulk-filled within the last minute, before Postgres's autovacuum
# analyzes it) reads a replica's 500-hash lookups as scans of every vector (30 s instead of 2 s
# for 100,000 vectors).
ANALYZE_EVERY = 10_000


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class StoredEmbeddings:
    def __init__(self, store: StateStore) -> None:
        self._store = store
        self.location = store.location
        self._written = 0

    def get(self, model: str, hashes: Iterable[str]) -> dict[str, np.ndarray]:
        wanted = list(dict.fromkeys(hashes))
        found: dict[str, np.ndarray] = {}
        try:
            with self._store.content() as sql:
                for start in range(0, len(wanted), _CHUNK):
                    chunk = wanted[start : start + _CHUNK]
                    rows = sql.execute(
                        f"SELECT text_hash, vector FROM embeddings WHERE model = ? AND text_hash IN ({','.join('?' * len(chunk))})",
                        [model, *chunk],
                    ).fetchall()
                    found.update((key, np.frombuffer(bytes(blob), dtype=np.float32)) for key, blob in rows)
        except StateError as exc:
            logger.warning("stored embeddings unavailable, encoding here: %s", exc)
            return {}
        return found

    def put(self, model: str, vectors: Mapping[str, np.ndarray]) -> None:
        rows = [(model, key, np.asarray(v, dtype=np.float32).tobytes()) for key, v in vectors.items()]
        try:
            with self._store.content() as sql:
                sql.executemany(
                    "INSERT INTO embeddings (model, text_hash, vector) VALUES (?, ?, ?) ON CONFLICT DO NOTHING", rows
                )
                self._written += len(rows)
                if self._written >= ANALYZE_EVERY:
                    sql.execute("ANALYZE embeddings")
                    self._written = 0
        except StateError as exc:
            logger.warning("stored embeddings unavailable, vectors kept in memory only: %s", exc)

    def model_of(self, source: str) -> str | None:
        """The model id last loaded from `source` (where the model files are, and the backend)."""
        try:
            with self._store.content() as sql:
                row = sql.execute("SELECT model FROM embedding_models WHERE source = ?", [source]).fetchone()
        except StateError:
            return None
        return None if row is None else str(row[0])

    def remember_model(self, source: str, model: str) -> None:
        with self._store.content() as sql:
            sql.execute(
                "INSERT INTO embedding_models (source, model) VALUES (?, ?) "
                "ON CONFLICT (source) DO UPDATE SET model = excluded.model",
                [source, model],
            )
