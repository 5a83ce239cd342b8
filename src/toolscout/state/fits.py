"""TF-IDF fits shared by every replica through the Postgres state store (a `FitStore`).

The same catalog gives the same documents, hence the same fit key: the first replica to index a
catalog fits TF-IDF and writes the fit; every other replica, and every later start, reads it back
instead of fitting (at 100,000 tools, seconds instead of most of a minute). Only the most recently
used `KEEP` fits are kept. Like the shared vectors, an unreachable store costs speed, never an
answer: a failed read is a miss (fitted here), a failed write is logged and dropped.
"""

from __future__ import annotations

import logging
import time

from toolscout.errors import StateError
from toolscout.state.postgres import PostgresStateStore

__all__ = ["KEEP", "SharedFits"]

logger = logging.getLogger(__name__)

KEEP = 8
_KIND = "tfidf_fits"


class SharedFits:
    def __init__(self, url: str) -> None:
        self._store = PostgresStateStore(url)
        self.location = self._store.location

    def read(self, key: str) -> bytes | None:
        try:
            with self._store.sql(_KIND) as sql:
                row = sql.execute("SELECT fit FROM tfidf_fits WHERE fit_key = ?", (key,)).fetchone()
                if row is not None:
                    sql.execute("UPDATE tfidf_fits SET used = ? WHERE fit_key = ?", (time.time(), key))
        except StateError as exc:
            logger.warning("shared TF-IDF fits unavailable, fitting here: %s", exc)
            return None
        return None if row is None else bytes(row[0])

    def write(self, key: str, fit: bytes) -> None:
        try:
            with self._store.sql(_KIND) as sql:
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
            logger.warning("shared TF-IDF fits unavailable, the fit is kept here only: %s", exc)
