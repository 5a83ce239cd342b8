"""The embedded state store: one SQLite file, shared safely by every local toolscout process.

Write-ahead logging lets readers go on while one process writes; `BEGIN IMMEDIATE` takes the
database's write lock at the start of each transaction, so two gateways and `toolscout approve`
take turns instead of overwriting each other; `synchronous=FULL` makes a committed transaction
survive even a power cut, and SQLite's journal makes one cut short by kill -9 vanish whole.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from toolscout.errors import StateError, StateUnavailable
from toolscout.state.store import (
    MIGRATIONS,
    Sql,
    SqlRecords,
    check_schema_version,
    read_revision,
    records_in,
    statements_in,
)

__all__ = ["SqliteStateStore"]

# How long a transaction waits for another process's write lock before giving up.
_BUSY_TIMEOUT = 30.0


def _is_json_file(path: Path) -> bool:
    try:
        with path.open("rb") as handle:
            return handle.read(64).lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"{")
    except OSError:
        return False


class SqliteStateStore:
    def __init__(self, path: Path) -> None:
        self.path = Path(path).expanduser()
        self.location = str(self.path)
        # One connection per store, used from the gateway's worker threads one at a time.
        self._lock = threading.RLock()
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            # Readable by the user only (SQLite gives its WAL files the database's mode).
            try:
                os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            except FileExistsError:
                pass
            self._db = sqlite3.connect(
                self.path, timeout=_BUSY_TIMEOUT, isolation_level=None, check_same_thread=False
            )
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._migrate()
        except sqlite3.DatabaseError as exc:
            if _is_json_file(self.path):
                raise StateError(
                    f"{self.location} is a JSON pin file of an earlier toolscout, not a state store; point "
                    f"--state at a new file (e.g. state.sqlite3) and set TOOLSCOUT_PINS={self.location} "
                    "to import its pins there on first use"
                ) from exc
            raise StateError(
                f"the state store {self.location} cannot be used: {exc}. Move it away to start over "
                "(pins are then trusted again on first use), or point --state elsewhere"
            ) from exc
        except OSError as exc:
            raise StateError(f"cannot create the state store {self.location}: {exc}") from exc

    def _migrate(self) -> None:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                version = self._db.execute("PRAGMA user_version").fetchone()[0]
                check_schema_version(version, self.location)
                for step in MIGRATIONS[version:]:
                    for statement in step:
                        self._db.execute(statement)
                self._db.execute(f"PRAGMA user_version = {len(MIGRATIONS)}")
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    @contextmanager
    def _begin(self, mode: str = "IMMEDIATE") -> Iterator[sqlite3.Cursor]:
        """A cursor in a transaction, committed if the block ends well. IMMEDIATE holds the
        database's write lock from the start; DEFERRED takes it only at a first write."""
        with self._lock:
            try:
                self._db.execute(f"BEGIN {mode}")
            except sqlite3.OperationalError as exc:
                raise StateUnavailable(f"the state store {self.location} is busy or unreadable: {exc}") from exc
            try:
                yield self._db.cursor()
                self._db.execute("COMMIT")
            except sqlite3.Error as exc:
                self._db.execute("ROLLBACK")
                raise StateUnavailable(f"cannot write the state store {self.location}: {exc}") from exc
            except BaseException:
                self._db.execute("ROLLBACK")
                raise

    @contextmanager
    def transaction(self, kind: str) -> Iterator[SqlRecords]:
        with self._begin() as cursor, records_in(cursor, kind, "?") as records:
            yield records

    @contextmanager
    def sql(self, kind: str) -> Iterator[Sql]:
        with self._begin() as cursor, statements_in(cursor, kind, "?") as statements:
            yield statements

    @contextmanager
    def content(self) -> Iterator[Sql]:
        with self._begin("DEFERRED") as cursor:
            yield Sql(cursor, "?")

    def revision(self, kind: str) -> int:
        with self._lock:
            try:
                return read_revision(self._db.cursor(), kind, "?")
            except sqlite3.Error as exc:
                raise StateUnavailable(f"cannot read the state store {self.location}: {exc}") from exc

    def close(self) -> None:
        with self._lock:
            self._db.close()
