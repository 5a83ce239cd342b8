"""Where embeddings and TF-IDF fits are kept: the store every replica shares, or this machine's own.

Both are caches keyed by content: losing them costs re-encoding, never state. A Postgres state
store shares them among replicas. Otherwise they stay in a SQLite store in the machine's cache
folder, not in the data directory's state store: that one holds pins and approvals, which
backups keep and cache cleaners must not touch, and at 100,000 tools the vectors alone are
150 MB. A damaged cache store is set aside and started afresh.
"""

from __future__ import annotations

from pathlib import Path

from toolscout.state.store import StateStore

__all__ = ["CACHE_FILE", "open_content_store"]

# The name the vectors had before they were a state store; such a file opens in place.
CACHE_FILE = "embeddings.sqlite3"


def open_content_store(shared: str | None, cache_dir: Path) -> StateStore:
    """The Postgres store at `shared`, else the SQLite store in `cache_dir`; StateError if unusable."""
    if shared:
        from toolscout.state.postgres import PostgresStateStore

        return PostgresStateStore(shared)
    from toolscout.state.sqlite import SqliteStateStore
    from toolscout.state_files import open_or_set_aside

    path = cache_dir / CACHE_FILE
    return open_or_set_aside(path, lambda: SqliteStateStore(path))

