"""Embeddings on disk, keyed by model id and a hash of the embedded text (one SQLite file).

Restarting over an unchanged catalog reads every vector back and encodes nothing; a changed tool
has a new text hash, so only it is encoded again. Rows are float32 bytes, written in one
transaction per batch, never a whole file rewritten.

A model's id is known once it is loaded, which takes seconds; the file also remembers which id the
model files at a given place (and backend) had, so vectors can be read back before the model loads.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from toolscout.state_files import open_or_set_aside, private_file

__all__ = ["EmbeddingCache", "text_hash"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS embeddings (
    model TEXT NOT NULL,
    text_hash TEXT NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (model, text_hash)
) WITHOUT ROWID
"""
_MODELS_SCHEMA = """
CREATE TABLE IF NOT EXISTS models (
    source TEXT PRIMARY KEY,
    model TEXT NOT NULL
) WITHOUT ROWID
"""
# SQLite caps the number of bound parameters per statement; stay well under it.
_CHUNK = 500


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class EmbeddingCache:
    """A store of float32 vectors; every method opens its own connection, so any thread may call."""

    def __init__(self, path: Path) -> None:
        self.path = path

        def create() -> None:
            with self._connect() as db:
                db.execute("PRAGMA journal_mode=WAL")
                db.execute(_SCHEMA)
                db.execute(_MODELS_SCHEMA)
                db.execute("SELECT COUNT(*) FROM embeddings").fetchone()

        # Private like every state file; a damaged one costs one re-embedding, not the search.
        private_file(path)
        open_or_set_aside(path, create)

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.path, timeout=30)
        try:
            with db:  # one transaction: committed on success, rolled back on error
                yield db
        finally:
            db.close()

    def get(self, model: str, hashes: Iterable[str]) -> dict[str, np.ndarray]:
        wanted = list(dict.fromkeys(hashes))
        found: dict[str, np.ndarray] = {}
        with self._connect() as db:
            for start in range(0, len(wanted), _CHUNK):
                chunk = wanted[start : start + _CHUNK]
                marks = ",".join("?" * len(chunk))
                rows = db.execute(
                    f"SELECT text_hash, vector FROM embeddings WHERE model = ? AND text_hash IN ({marks})",
                    [model, *chunk],
                )
                for key, blob in rows:
                    found[key] = np.frombuffer(blob, dtype=np.float32)
        return found

    def put(self, model: str, vectors: Mapping[str, np.ndarray]) -> None:
        rows = [(model, key, np.asarray(v, dtype=np.float32).tobytes()) for key, v in vectors.items()]
        with self._connect() as db:
            db.executemany("INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?)", rows)

    def model_of(self, source: str) -> str | None:
        """The model id last loaded from `source` (where the model files are, and the backend)."""
        with self._connect() as db:
            row = db.execute("SELECT model FROM models WHERE source = ?", [source]).fetchone()
        return None if row is None else str(row[0])

    def remember_model(self, source: str, model: str) -> None:
        with self._connect() as db:
            db.execute("INSERT OR REPLACE INTO models VALUES (?, ?)", [source, model])
