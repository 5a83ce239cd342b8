"""The shared state store: Postgres through psycopg 3, for replicas that must agree.

Each transaction takes a transaction-scoped advisory lock named after its kind, so writers of one
kind take turns across every replica and `toolscout approve`; Postgres makes the commit atomic and
durable. A lost connection (the server restarting, a network cut) is `StateUnavailable`: the
caller keeps what it had and tries again, and the next transaction connects anew. Any other error
of the database (a table dropped by hand) is a `StateError` that names the store and what to do.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from toolscout.errors import ConfigError, StateError, StateUnavailable
from toolscout.state.store import (
    MIGRATIONS,
    Sql,
    SqlRecords,
    check_schema_version,
    read_revision,
    records_in,
    statements_in,
)

__all__ = ["POSTGRES_EXTRA", "PostgresStateStore", "shown_location"]

POSTGRES_EXTRA = "pip install 'toolscout[postgres]'"
# First half of every advisory lock key toolscout takes: keeps clear of other applications' locks.
_LOCK_SPACE = 0x7A5C
_CONNECT_TIMEOUT = 5


def shown_location(url: str) -> str:
    """`url` without its password."""
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    try:
        parts = conninfo_to_dict(url)
    except Exception:  # noqa: BLE001 - an unparsable URL is shown as its scheme alone
        return "postgresql://..."
    if "password" in parts:
        parts["password"] = "***"
    return make_conninfo(**{k: v for k, v in parts.items() if v is not None})


class PostgresStateStore:
    def __init__(self, url: str) -> None:
        try:
            import psycopg
        except ImportError as exc:
            raise ConfigError(f"a Postgres state store needs psycopg: {POSTGRES_EXTRA}") from exc
        self._psycopg = psycopg
        self._url = url
        self.location = shown_location(url)
        self._lock = threading.RLock()
        self._connection: Any = None
        self._migrate()

    def _connected(self) -> Any:
        if self._connection is None or self._connection.closed:
            try:
                self._connection = self._psycopg.connect(
                    self._url, autocommit=True, connect_timeout=_CONNECT_TIMEOUT, application_name="toolscout"
                )
            except self._psycopg.OperationalError as exc:
                raise StateUnavailable(f"cannot reach the state store {self.location}: {_first_line(exc)}") from exc
        return self._connection

    def _lost(self, exc: Exception) -> StateUnavailable:
        # The connection is unusable after a failure of the server or the network: start afresh.
        if self._connection is not None:
            self._connection.close()
            self._connection = None
        return StateUnavailable(f"lost the state store {self.location}: {_first_line(exc)}")

    def _migrate(self) -> None:
        with self._lock, self._open_transaction() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s, 0)", (_LOCK_SPACE,))
            cursor.execute("CREATE TABLE IF NOT EXISTS toolscout_schema (version INTEGER NOT NULL)")
            cursor.execute("SELECT version FROM toolscout_schema")
            row = cursor.fetchone()
            version = 0 if row is None else int(row[0])
            check_schema_version(version, self.location)
            for step in MIGRATIONS[version:]:
                for statement in step:
                    cursor.execute(statement)
            if row is None:
                cursor.execute("INSERT INTO toolscout_schema (version) VALUES (%s)", (len(MIGRATIONS),))
            else:
                cursor.execute("UPDATE toolscout_schema SET version = %s", (len(MIGRATIONS),))

    @contextmanager
    def _open_transaction(self) -> Iterator[Any]:
        connection = self._connected()
        try:
            with connection.transaction(), connection.cursor() as cursor:
                yield cursor
        except (self._psycopg.OperationalError, self._psycopg.InterfaceError) as exc:
            raise self._lost(exc) from exc
        except self._psycopg.DatabaseError as exc:
            # The server answered, but not as a toolscout store does (a table dropped or altered).
            raise StateError(
                f"the state store {self.location} answered with an error: {_first_line(exc)}. Its tables "
                "(records, revisions, toolscout_schema) may have been changed by hand or by another program: "
                "restore the database from its backups, or point --state at another database"
            ) from exc

    @contextmanager
    def content(self) -> Iterator[Sql]:
        with self._lock, self._open_transaction() as cursor:
            yield Sql(cursor, "%s")

    @contextmanager
    def _locked(self, kind: str) -> Iterator[Any]:
        """A cursor in a transaction holding the advisory lock of `kind`."""
        with self._lock, self._open_transaction() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(%s, hashtext(%s))", (_LOCK_SPACE, kind))
            yield cursor

    @contextmanager
    def transaction(self, kind: str) -> Iterator[SqlRecords]:
        with self._locked(kind) as cursor, records_in(cursor, kind, "%s") as records:
            yield records

    @contextmanager
    def sql(self, kind: str) -> Iterator[Sql]:
        with self._locked(kind) as cursor, statements_in(cursor, kind, "%s") as statements:
            yield statements

    def revision(self, kind: str) -> int:
        with self._lock:
            connection = self._connected()
            try:
                with connection.cursor() as cursor:
                    return read_revision(cursor, kind, "%s")
            except (self._psycopg.OperationalError, self._psycopg.InterfaceError) as exc:
                raise self._lost(exc) from exc

    def close(self) -> None:
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None


def _first_line(exc: Exception) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
