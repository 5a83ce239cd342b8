"""The embedded state store: one SQLite file, shared safely by every local toolscout process.

Write-ahead logging lets readers go on while one process writes; `BEGIN IMMEDIATE` takes the
database's write lock at the start of each transaction, so two gateways and `toolscout approve`
take turns instead of overwriting each other; `synchronous=FULL` makes a committed transaction
survive even a power cut, and SQLite's journal makes one cut short by kill -9 vanish whole.

A store of trust decisions is never started afresh over a file that is there: an empty, truncated
or foreign file is refused with a message that offers the copy kept after each decision
(`toolscout.state.backup`), on opening and whenever damage is met later, reading or writing.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from toolscout.errors import StateError, StateUnavailable
from toolscout.state.backup import DECISION_KINDS, SQLITE_HEADER, backup_path, damage_advice, write_backup
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


def _damage(exc: sqlite3.Error) -> bool:
    """Whether `exc` says the file is not a sound database (damaged, truncated, not SQLite), rather
    than that it cannot be used now (locked, busy, out of space: `OperationalError`)."""
    return isinstance(exc, sqlite3.DatabaseError) and not isinstance(exc, sqlite3.OperationalError)


class SqliteStateStore:
    """`keeps_decisions`: the store holds trust decisions (the default), so it is created whole or
    not at all, a file that is not such a store is refused rather than started afresh, and each
    changed decision is copied to a backup (`toolscout.state.backup`). False for the caches keyed
    by content, which are set aside and rebuilt when damaged (`toolscout.state.content`).
    `synchronous`: SQLite's setting for this connection; "NORMAL" commits without waiting for the
    disk, still durable when the process is killed (WAL), not when the machine loses power: for
    the audit trail (`toolscout.state.audit`), written at every call."""

    def __init__(self, path: Path, *, keeps_decisions: bool = True, synchronous: str = "FULL") -> None:
        self.path = Path(path).expanduser()
        self.location = str(self.path)
        self._keeps_decisions = keeps_decisions
        # One connection per store, used from the gateway's worker threads one at a time.
        self._lock = threading.RLock()
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            if keeps_decisions:
                self._create_whole()
                self._refuse_if_empty()
            else:
                # Readable by the user only (SQLite gives its WAL files the database's mode).
                try:
                    os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
                except FileExistsError:
                    pass
            self._db = self._connect(self.path, synchronous)
            with self._lock:
                _migrate(self._db, self.location, foreign_refused=keeps_decisions)
            if keeps_decisions and not backup_path(self.path).exists() and self._holds_decisions():
                write_backup(self._db, self.path)
        except sqlite3.DatabaseError as exc:
            if keeps_decisions and not _is_json_file(self.path):
                self._refuse_unless_sqlite()  # saying what the file is, when it is not SQLite at all
            if _is_json_file(self.path):
                raise StateError(
                    f"{self.location} is a JSON pin file of an earlier toolscout, not a state store; point "
                    f"--state at a new file (e.g. state.sqlite3) and set TOOLSCOUT_PINS={self.location} "
                    "to import its pins there on first use"
                ) from exc
            if keeps_decisions:
                raise StateError(f"the state store {self.location} is damaged and cannot be used: {exc}. {damage_advice(self.path)}") from exc
            raise StateError(
                f"the state store {self.location} cannot be used: {exc}. Move it away to start over, or point --state elsewhere"
            ) from exc
        except OSError as exc:
            raise StateError(f"cannot create the state store {self.location}: {exc}") from exc

    @staticmethod
    def _connect(path: Path, synchronous: str = "FULL") -> sqlite3.Connection:
        db = sqlite3.connect(path, timeout=_BUSY_TIMEOUT, isolation_level=None, check_same_thread=False)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute(f"PRAGMA synchronous={'NORMAL' if synchronous == 'NORMAL' else 'FULL'}")
        return db

    def _create_whole(self) -> None:
        """Create a missing store with its schema in a file beside it, then link that into place:
        a file at `path` is then always a store toolscout finished creating, and an empty one is
        damage (a truncation, a failed copy), never a store to start afresh."""
        if self.path.exists():
            return
        scratch = self.path.with_name(f"{self.path.name}.new-{os.getpid()}-{threading.get_ident()}")
        os.close(os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600))
        try:
            db = self._connect(scratch)
            try:
                _migrate(db, self.location, foreign_refused=False)
            finally:
                db.close()
            try:
                os.link(scratch, self.path)
            except FileExistsError:
                pass  # another process created it first: that one is used
        finally:
            scratch.unlink(missing_ok=True)

    def _refuse_if_empty(self) -> None:
        """An empty file is damage, never a store to start afresh. Told by its size: opening the
        file to read its header, then closing it, would release the POSIX locks SQLite holds on it
        for every other connection of this process (SQLite's "how to corrupt a database", 2.2)."""
        try:
            empty = self.path.stat().st_size == 0
        except OSError as exc:
            raise StateError(f"cannot read the state store {self.location}: {exc}") from exc
        if empty:
            raise StateError(
                f"the state store {self.location} is empty (0 bytes): it is damaged, or not toolscout's, and "
                f"cannot be used. {damage_advice(self.path)}"
            )

    def _refuse_unless_sqlite(self) -> None:
        """Only once SQLite has refused the file (its other connections here are then of no use)."""
        try:
            with self.path.open("rb") as handle:
                header = handle.read(len(SQLITE_HEADER))
        except OSError as exc:
            raise StateError(f"cannot read the state store {self.location}: {exc}") from exc
        if header == SQLITE_HEADER:
            return
        if _is_json_file(self.path):
            raise sqlite3.DatabaseError("file is not a database")  # the JSON pin file message, above
        what = "is empty (0 bytes)" if not header else "is not a SQLite database"
        raise StateError(
            f"the state store {self.location} {what}: it is damaged, or not toolscout's, and cannot be used. "
            f"{damage_advice(self.path)}"
        )

    def _holds_decisions(self) -> bool:
        marks = ", ".join("?" for _ in DECISION_KINDS)
        with self._lock:
            row = self._db.execute(f"SELECT 1 FROM records WHERE kind IN ({marks}) LIMIT 1", tuple(DECISION_KINDS)).fetchone()
        return row is not None

    def _failure(self, exc: sqlite3.Error, doing: str) -> StateError:
        """The error for `exc`, met while `doing` ("read", "write"): damage is a StateError with
        what to do; anything else (busy, locked, out of space) may pass, so StateUnavailable."""
        if self._keeps_decisions and _damage(exc):
            return StateError(
                f"cannot {doing} the state store {self.location}: it is damaged ({exc}). {damage_advice(self.path)}"
            )
        advice = (
            "another process holds it longer than usual; toolscout tries again at its next use"
            if "locked" in str(exc) or "busy" in str(exc)
            else "check that its disk has space and the file is writable; toolscout tries again at its next use"
        )
        return StateUnavailable(f"cannot {doing} the state store {self.location}: {exc}. {advice[0].upper()}{advice[1:]}")

    @contextmanager
    def _begin(self, mode: str = "IMMEDIATE") -> Iterator[sqlite3.Cursor]:
        """A cursor in a transaction, committed if the block ends well. IMMEDIATE holds the
        database's write lock from the start; DEFERRED takes it only at a first write."""
        with self._lock:
            try:
                self._db.execute(f"BEGIN {mode}")
            except sqlite3.Error as exc:
                raise self._failure(exc, "read") from exc
            try:
                yield self._db.cursor()
                self._db.execute("COMMIT")
            except sqlite3.Error as exc:
                self._rollback()
                raise self._failure(exc, "write") from exc
            except BaseException:
                self._rollback()
                raise

    def _rollback(self) -> None:
        with suppress(sqlite3.Error):  # none may be open after damage was found
            self._db.execute("ROLLBACK")

    def _backed_up(self, kind: str, changed: bool) -> None:
        if changed and self._keeps_decisions and kind in DECISION_KINDS:
            write_backup(self._db, self.path)

    @contextmanager
    def transaction(self, kind: str) -> Iterator[SqlRecords]:
        with self._lock:
            with self._begin() as cursor, records_in(cursor, kind, "?") as records:
                yield records
            self._backed_up(kind, records.changed)

    @contextmanager
    def sql(self, kind: str) -> Iterator[Sql]:
        with self._lock:
            with self._begin() as cursor, statements_in(cursor, kind, "?") as statements:
                yield statements
            self._backed_up(kind, statements.changed)

    @contextmanager
    def content(self) -> Iterator[Sql]:
        with self._begin("DEFERRED") as cursor:
            yield Sql(cursor, "?")

    def revision(self, kind: str) -> int:
        with self._lock:
            try:
                return read_revision(self._db.cursor(), kind, "?")
            except sqlite3.Error as exc:
                raise self._failure(exc, "read") from exc

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _migrate(db: sqlite3.Connection, location: str, *, foreign_refused: bool) -> None:
    """Bring the schema of `db` up to date in one transaction. `foreign_refused`: a database whose
    tables are not a state store's (another program's) is refused, not given toolscout's tables."""
    db.execute("BEGIN IMMEDIATE")
    try:
        version = db.execute("PRAGMA user_version").fetchone()[0]
        check_schema_version(version, location)
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if foreign_refused and (tables if version == 0 else "records" not in tables):
            raise StateError(
                f"{location} is a SQLite database of another program (tables: {', '.join(sorted(tables)) or 'none'}), "
                "not a toolscout state store; point --state at a toolscout store, or at a new file"
            )
        for step in MIGRATIONS[version:]:
            for statement in step:
                db.execute(statement)
        db.execute(f"PRAGMA user_version = {len(MIGRATIONS)}")
        db.execute("COMMIT")
    except BaseException:
        with suppress(sqlite3.Error):
            db.execute("ROLLBACK")
        raise
