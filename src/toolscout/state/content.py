"""Where embeddings and TF-IDF fits are kept: the store every replica shares, or this machine's own.

Both are caches keyed by content: losing them costs re-encoding, never state. A Postgres state
store shares them among replicas. Otherwise they stay in a SQLite store in the machine's cache
folder, not in the data directory's state store: that one holds pins and approvals, which
backups keep and cache cleaners must not touch, and at 100,000 tools the vectors alone are
150 MB. A damaged cache store is set aside and started afresh.
"""

from __future__ import annotations

import threading
from pathlib import Path

from toolscout.state.store import StateStore

__all__ = ["CACHE_FILE", "ContentStore", "open_content_store"]

# The name the vectors had before they were a state store; such a file opens in place.
CACHE_FILE = "embeddings.sqlite3"


def open_content_store(shared: str | None, cache_dir: Path) -> StateStore:
    """The Postgres store at `shared`, else the SQLite store in `cache_dir`; StateError if unusable."""
    if shared:
        from toolscout.state.postgres import PostgresStateStore

        return PostgresStateStore(shared)
    from toolscout.state.sqlite import SqliteStateStore
    from toolscout.state.files import open_or_set_aside

    path = cache_dir / CACHE_FILE
    return open_or_set_aside(path, lambda: SqliteStateStore(path, keeps_decisions=False))


class ContentStore:
    """One engine's content store, opened at first need and shared by everything the engine keeps
    there (embeddings, TF-IDF fits, catalog indexes): one connection and one schema check, not one
    each. A store that cannot be opened is tried again at the next need (StateError until then)."""

    def __init__(self, shared: str | None, cache_dir: Path) -> None:
        self._shared = shared
        self._cache_dir = cache_dir
        self._store: StateStore | None = None
        self._lock = threading.Lock()

    def get(self) -> StateStore:
        with self._lock:
            if self._store is None:
                self._store = open_content_store(self._shared, self._cache_dir)
            return self._store
