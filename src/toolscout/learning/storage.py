"""Where the learning stores live on disk, and the one place their SQLite files are opened."""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Self

import platformdirs

from toolscout.errors import ConfigError
from toolscout.state_files import open_or_set_aside, private_file

__all__ = ["DATA_DIR_ENV", "SqliteStore", "data_dir", "open_database"]

# Overrides the per-user data directory (tests, portable installs, several profiles side by side).
DATA_DIR_ENV = "TOOLSCOUT_DATA_DIR"


def data_dir() -> Path:
    """The directory learned examples and generated expansions are kept in (created on first use)."""
    override = os.environ.get(DATA_DIR_ENV)
    if override:
        return Path(override).expanduser()
    return platformdirs.user_data_path("toolscout", appauthor=False)


def open_database(path: Path, schema: str) -> sqlite3.Connection:
    """Open (creating if needed) the SQLite file at `path` and apply `schema` (idempotent DDL).

    The connection may be used from the gateway's worker threads, so callers serialise access
    themselves; the busy timeout lets a CLI command and a running server share the file. The file
    is created private (0600: it holds users' queries); a damaged one is set aside and started
    afresh (`toolscout.state_files`).
    """

    def connect() -> sqlite3.Connection:
        connection = sqlite3.connect(private_file(path), timeout=5.0, check_same_thread=False)
        try:
            # WAL: a CLI command can read while the server writes; NORMAL sync is safe under WAL and
            # keeps a write (one per successful tool call) from waiting on an fsync.
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA synchronous=NORMAL")
            connection.executescript(schema)
            connection.execute("PRAGMA quick_check").fetchall()
        except sqlite3.Error:
            connection.close()
            raise
        return connection

    try:
        connection = open_or_set_aside(path, connect)
    except (OSError, sqlite3.Error) as exc:
        raise ConfigError(
            f"cannot open the store {path}: {exc}; choose another path or set {DATA_DIR_ENV}"
        ) from exc
    return connection


class SqliteStore:
    """Base of the learning stores: one SQLite file, one lock serialising access to it."""

    def __init__(self, path: Path, schema: str, clock: Callable[[], float] = time.time) -> None:
        self.path = Path(path)
        self._clock = clock
        self._lock = threading.Lock()
        self._db = open_database(self.path, schema)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
