"""The audit trail's rows in the state store: one per call, written as each call ends, read by
`toolscout audit` and the dashboard, pruned after the retention the operator sets.

    log = AuditLog(open_audit_state(location))     # beside a SQLite state file, or in its Postgres
    log.write(AuditEntry(...))                       # one committed transaction: a kill -9 after
                                                     # it keeps the row, during it loses that row only
    log.read(client="alpha", since=time.time() - 3600)
    log.prune(older_than=time.time() - 30 * 86400)

Replicas sharing a Postgres store write one trail; each row has its own random id, so they never
collide.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from toolscout.state.location import default_state_location, is_postgres, open_state
from toolscout.state.store import StateStore

__all__ = ["KIND", "AuditEntry", "AuditLog", "audit_location", "open_audit_state"]

KIND = "audit"
_COLUMNS = ("id", "at", "client", "profile", "tool", "arguments", "outcome", "detail", "duration_ms", "request_id")


@dataclass(frozen=True)
class AuditEntry:
    """One call: when it began (epoch seconds), who made it, what it ran, and how it ended."""

    at: float
    client: str
    tool: str
    # A digest of the arguments (`toolscout.serving.audit.argument_digest`), as JSON text.
    arguments: str
    # "ok", "error" (the tool answered with an error), or why it was refused or failed.
    outcome: str
    duration_ms: float
    profile: str = ""
    detail: str = ""
    request_id: str = ""
    id: str = field(default_factory=lambda: uuid.uuid4().hex)

    def as_json(self) -> dict[str, Any]:
        entry = asdict(self)
        entry["arguments"] = json.loads(self.arguments) if self.arguments.startswith("{") else self.arguments
        return entry


def audit_location(location: str | None) -> str:
    """Where the trail of the state store at `location` (None: the default) is: the same Postgres,
    or, beside a SQLite file, a file of its own (`state.sqlite3` -> `state.audit.sqlite3`)."""
    where = location or default_state_location()
    if is_postgres(where):
        return where
    path = Path(where).expanduser()
    return str(path.with_name(f"{path.stem}.audit{path.suffix or '.sqlite3'}"))


def open_audit_state(location: str | None) -> StateStore:
    """The store the audit trail of the state store at `location` is written to; StateError if unusable.

    On SQLite, a file of its own, committed without waiting for the disk: no other writer (the
    learning stores, the embeddings) holds its lock, so a call's entry is written at once, in the
    call's own thread, and survives a kill -9 once committed. Postgres: the shared store itself,
    one trail for every replica."""
    where = audit_location(location)
    if is_postgres(where):
        return open_state(where)
    from toolscout.state.sqlite import SqliteStateStore

    return SqliteStateStore(Path(where), keeps_decisions=False, synchronous="NORMAL")


class AuditLog:
    def __init__(self, state: StateStore) -> None:
        self.state = state
        # A write is a local commit of a few tenths of a millisecond, never waiting on a network.
        self.local = not is_postgres(state.location)

    def write(self, entry: AuditEntry) -> None:
        """Commit `entry`; StateError if the store cannot take it."""
        with self.state.sql(KIND) as sql:
            sql.execute(f"INSERT INTO audit ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))})",
                        [getattr(entry, column) for column in _COLUMNS])

    def read(
        self, *, client: str | None = None, tool: str | None = None, since: float | None = None, limit: int | None = None
    ) -> list[AuditEntry]:
        """The entries matching every filter given, oldest first (the newest `limit` of them)."""
        where: list[str] = []
        params: list[Any] = []
        for column, value in (("client", client), ("tool", tool)):
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        if since is not None:
            where.append("at >= ?")
            params.append(since)
        text = f"SELECT {', '.join(_COLUMNS)} FROM audit"
        if where:
            text += " WHERE " + " AND ".join(where)
        text += " ORDER BY at DESC, id"
        if limit is not None:
            text += f" LIMIT {int(limit)}"
        with self.state.sql(KIND) as sql:
            rows: Sequence[Sequence[Any]] = sql.execute(text, params).fetchall()
        return [AuditEntry(**dict(zip(_COLUMNS, row, strict=True))) for row in reversed(rows)]

    def prune(self, older_than: float) -> int:
        """Delete the entries begun before `older_than`; how many went."""
        with self.state.sql(KIND) as sql:
            return int(sql.execute("DELETE FROM audit WHERE at < ?", [older_than]).rowcount or 0)
