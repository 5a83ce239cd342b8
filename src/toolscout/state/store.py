"""The state store's interface, and the SQL both engines share.

A store keeps JSON records by (kind, key). Everything is read and written inside a transaction of
one kind: writers of that kind take turns across every process using the store (a lock the engine
holds until commit), readers never see half of another's changes, and a process killed at any
moment leaves either all or none of a transaction's writes. Each committed transaction that changed
something bumps the kind's revision, which is how other processes notice (`revision`).

The schema is versioned (`SCHEMA_VERSION`, kept in the store itself); a store opens only a schema
it knows, upgrading older ones in place with the steps in `MIGRATIONS`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import AbstractContextManager
from typing import Any, Protocol

from toolscout.errors import StateError

__all__ = [
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "Records",
    "SqlRecords",
    "StateStore",
    "check_schema_version",
    "read_revision",
]

# Each step brings the schema from version N to N+1; same SQL on SQLite and Postgres.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        "CREATE TABLE IF NOT EXISTS records (kind TEXT NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, "
        "PRIMARY KEY (kind, key))",
        "CREATE TABLE IF NOT EXISTS revisions (kind TEXT PRIMARY KEY, revision BIGINT NOT NULL)",
    ),
    # Embeddings shared by replicas (`toolscout.state.vectors`), keyed by model and text hash.
    (
        "CREATE TABLE IF NOT EXISTS embeddings (model TEXT NOT NULL, text_hash TEXT NOT NULL, "
        "vector BYTEA NOT NULL, PRIMARY KEY (model, text_hash))",
        "CREATE TABLE IF NOT EXISTS embedding_models (source TEXT PRIMARY KEY, model TEXT NOT NULL)",
    ),
)
SCHEMA_VERSION = len(MIGRATIONS)


class Records(Protocol):
    """The records of one kind, inside a transaction."""

    def get(self, key: str) -> Any | None: ...

    def put(self, key: str, value: Any) -> None: ...

    def delete(self, key: str) -> bool: ...

    def items(self) -> Iterator[tuple[str, Any]]: ...


class StateStore(Protocol):
    # Where it is, for messages (a Postgres password is never shown).
    location: str

    def transaction(self, kind: str) -> AbstractContextManager[Records]:
        """The records of `kind`, changed atomically when the block ends without an exception."""
        ...

    def revision(self, kind: str) -> int:
        """A number that changes whenever a committed transaction changed `kind`."""
        ...

    def close(self) -> None: ...


def check_schema_version(version: int, location: str) -> None:
    if version > SCHEMA_VERSION:
        raise StateError(
            f"the state store {location} has schema version {version}, written by a newer toolscout "
            f"(this one knows up to {SCHEMA_VERSION}); upgrade toolscout, or use another --state"
        )


class SqlRecords:
    """`Records` over a DB-API connection in an open transaction; `mark` is `?` or `%s`."""

    def __init__(self, cursor: Any, kind: str, mark: str) -> None:
        self._cursor = cursor
        self._kind = kind
        self._mark = mark
        self.changed = False

    def _sql(self, text: str) -> str:
        return text.replace("?", self._mark)

    def get(self, key: str) -> Any | None:
        self._cursor.execute(self._sql("SELECT value FROM records WHERE kind = ? AND key = ?"), (self._kind, key))
        row = self._cursor.fetchone()
        return None if row is None else json.loads(row[0])

    def put(self, key: str, value: Any) -> None:
        self._cursor.execute(
            self._sql(
                "INSERT INTO records (kind, key, value) VALUES (?, ?, ?) "
                "ON CONFLICT (kind, key) DO UPDATE SET value = excluded.value"
            ),
            (self._kind, key, json.dumps(value, ensure_ascii=False, sort_keys=True)),
        )
        self.changed = True

    def delete(self, key: str) -> bool:
        self._cursor.execute(self._sql("DELETE FROM records WHERE kind = ? AND key = ?"), (self._kind, key))
        removed = self._cursor.rowcount > 0
        self.changed = self.changed or removed
        return removed

    def items(self) -> Iterator[tuple[str, Any]]:
        self._cursor.execute(self._sql("SELECT key, value FROM records WHERE kind = ? ORDER BY key"), (self._kind,))
        for key, value in self._cursor.fetchall():
            yield key, json.loads(value)

    def bump_revision(self) -> None:
        """Called before commit when something changed."""
        self._cursor.execute(
            self._sql(
                "INSERT INTO revisions (kind, revision) VALUES (?, 1) "
                "ON CONFLICT (kind) DO UPDATE SET revision = revisions.revision + 1"
            ),
            (self._kind,),
        )


def read_revision(cursor: Any, kind: str, mark: str) -> int:
    cursor.execute(f"SELECT revision FROM revisions WHERE kind = {mark}", (kind,))
    row = cursor.fetchone()
    return 0 if row is None else int(row[0])
