"""What indexing fits on a catalog, kept in a state store (a `FitStore`), keyed by a hash of what it
was fitted on: TF-IDF fits (`toolscout.index.tfidf`) and catalog indexes (the BM25 indexes and
per-tool tables, `toolscout.search.catalog_index`), each kind in its own table.

The same catalog gives the same key: the first process to index a catalog builds and writes it;
every later start, and over Postgres every other replica, reads it back instead (at 100,000 tools,
seconds instead of most of a minute). Only the most recently used `KEEP` of each kind are kept.
Like the stored vectors, an unusable store costs speed, never an answer: a failed read is a miss
(built here), a failed write is logged and dropped.
"""

from __future__ import annotations

import logging
import time

from toolscout.errors import StateError
from toolscout.state.store import StateStore

__all__ = ["KEEP", "TABLES", "StoredFits"]

logger = logging.getLogger(__name__)

KEEP = 8
# Each kind's table (columns fit_key, fit, used: `toolscout.state.store.MIGRATIONS`).
TABLES = {"tfidf": "tfidf_fits", "catalog": "catalog_indexes"}


class StoredFits:
    def __init__(self, store: StateStore, kind: str = "tfidf") -> None:
        self._store = store
        self._table = TABLES[kind]
        self._kind = kind
        self.location = store.location

    def read(self, key: str) -> bytes | None:
        try:
            with self._store.content() as sql:
                row = sql.execute(f"SELECT fit FROM {self._table} WHERE fit_key = ?", (key,)).fetchone()
                if row is not None:
                    sql.execute(f"UPDATE {self._table} SET used = ? WHERE fit_key = ?", (time.time(), key))
        except StateError as exc:
            logger.warning("stored %s fits unavailable, built here: %s", self._kind, exc)
            return None
        return None if row is None else bytes(row[0])

    def write(self, key: str, fit: bytes) -> None:
        try:
            with self._store.content() as sql:
                # A key's row is written again only after it could not be used (damaged, cut
                # short): the new value replaces it, or every start would build it again.
                sql.execute(
                    f"INSERT INTO {self._table} (fit_key, fit, used) VALUES (?, ?, ?) "
                    "ON CONFLICT (fit_key) DO UPDATE SET fit = excluded.fit, used = excluded.used",
                    (key, fit, time.time()),
                )
                sql.execute(
                    f"DELETE FROM {self._table} WHERE fit_key NOT IN "
                    f"(SELECT fit_key FROM {self._table} ORDER BY used DESC LIMIT ?)",
                    (KEEP,),
                )
        except StateError as exc:
            logger.warning("stored %s fits unavailable, kept in memory only: %s", self._kind, exc)
