"""TF-IDF fits kept in a state store (a `FitStore`), keyed by a hash of what was fitted.

The same catalog gives the same documents, hence the same fit key: the first process to index a
catalog fits TF-IDF and writes the fit; every later start, and over Postgres every other replica,
reads it back instead of fitting (at 100,000 tools, seconds instead of most of a minute). Only the
most recently used `KEEP` fits are kept. Like the stored vectors, an unusable store costs speed,
never an answer: a failed read is a miss (fitted here), a failed write is logged and dropped.
"""

from __future__ import annotations

import logging
import time

from toolscout.errors import StateError
from toolscout.state.store import StateStore

__all__ = ["KEEP", "StoredFits"]

logger = logging.getLogger(__name__)

KEEP = 8


class StoredFits:
    def __init__(self, store: StateStore) -> None:
        self._store = store
        self.location = store.location

    def read(self, key: str) -> bytes | None:
        try:
            with self._store.content() as sql:
                row = sql.execute("SELECT fit FROM tfidf_fits WHERE fit_key = ?", (key,)).fetchone()
                if row is not None:
                    sql.execute("UPDATE tfidf_fits SET used = ? WHERE fit_key = ?", (time.time(), key))
        except StateError as exc:
            logger.warning("stored TF-IDF fits unavailable, fitting here: %s", exc)
            return None
        return None if row is None else bytes(row[0])

    def write(self, key: str, fit: bytes) -> None:
        try:
            with self._store.content() as sql:
                sql.execute(
                    "INSERT INTO tfidf_fits (fit_key, fit, used) VALUES (?, ?, ?) "
                    "ON CONFLICT (fit_key) DO UPDATE SET used = excluded.used",
                    (key, fit, time.time()),
                )
                sql.execute(
                    "DELETE FROM tfidf_fits WHERE fit_key NOT IN "
                    "(SELECT fit_key FROM tfidf_fits ORDER BY used DESC LIMIT ?)",
                    (KEEP,),
                )
        except StateError as exc:
            logger.warning("stored TF-IDF fits unavailable, the fit is kept in memory only: %s", exc)
