"""Generated expansions in the state store, keyed by tool fingerprint: each tool is expanded once
(by whichever replica gets there first, when replicas share a Postgres).

A tool's fingerprint covers its whole definition (name, title, description, schemas, annotations),
so a tool that changes gets a new key and is expanded again, while an unchanged catalog costs no
model call on restart. Rows keyed by the fingerprint of before title and output schema were covered
are re-keyed when their tool is next seen, rather than expanded again.
Rows also keep the tool id, name and server, for `toolscout expansions` to show without a catalog.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from toolscout.catalog import ToolRecord
from toolscout.learning.phrases import merge_phrases
from toolscout.learning.storage import LearningStore
from toolscout.state.files import data_dir

__all__ = ["EXPANSIONS_FILE", "CachedExpansion", "ExpansionCache", "default_expansions_path"]

EXPANSIONS_FILE = "expansions.sqlite3"

_COLUMNS = "fingerprint, tool_id, name, server, phrases, model, created"


def default_expansions_path() -> Path:
    """Where an earlier version kept generated phrases (imported into the state store on first start)."""
    return data_dir() / EXPANSIONS_FILE


@dataclass(frozen=True)
class CachedExpansion:
    """The phrases generated for one version (fingerprint) of one tool."""

    fingerprint: str
    tool_id: str
    name: str
    server: str
    phrases: tuple[str, ...]
    # Which model wrote them, as the client reported it ('' when unknown).
    model: str
    created: float


def _entry(row: Sequence[object]) -> CachedExpansion:
    fingerprint, tool_id, name, server, phrases, model, created = row
    return CachedExpansion(
        str(fingerprint), str(tool_id), str(name), str(server),
        tuple(json.loads(str(phrases))), str(model), float(created),  # type: ignore[arg-type]
    )


class ExpansionCache(LearningStore):
    """fingerprint -> generated phrases, a table of the state store at `location` (None: the
    default); one row per tool version."""

    KIND = "expansions"

    def __init__(self, location: str | Path | None = None, *, clock: Callable[[], float] = time.time) -> None:
        super().__init__(location, clock)
        self._import(default_expansions_path(), "expansions", _COLUMNS.split(", "))

    def get(self, fingerprint: str) -> CachedExpansion | None:
        with self.state.sql(self.KIND) as sql:
            row = sql.execute(f"SELECT {_COLUMNS} FROM expansions WHERE fingerprint = ?", (fingerprint,)).fetchone()
        return _entry(row) if row else None

    def put(self, record: ToolRecord, phrases: Iterable[str], *, model: str = "") -> CachedExpansion:
        """Store the phrases generated for `record`; older versions of the same tool are dropped."""
        entry = CachedExpansion(
            record.fingerprint, record.id, record.name, record.server,
            merge_phrases(phrases), model, self._clock(),
        )
        with self.state.sql(self.KIND) as sql:
            # The previous version's phrases describe a tool that no longer exists.
            sql.execute(
                "DELETE FROM expansions WHERE server = ? AND name = ? AND fingerprint != ?",
                (entry.server, entry.name, entry.fingerprint),
            )
            sql.execute(
                f"INSERT INTO expansions ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (fingerprint) DO UPDATE"
                " SET tool_id = excluded.tool_id, name = excluded.name, server = excluded.server,"
                " phrases = excluded.phrases, model = excluded.model, created = excluded.created",
                (entry.fingerprint, entry.tool_id, entry.name, entry.server,
                 json.dumps(list(entry.phrases)), entry.model, entry.created),
            )
            sql.changed = True
        return entry

    def _fingerprints(self, records: Collection[ToolRecord] = ()) -> dict[str, tuple[str, ...]]:
        """fingerprint -> phrases; rows of `records` keyed by their legacy fingerprint are re-keyed."""
        with self.state.sql(self.KIND) as sql:
            rows = sql.execute("SELECT fingerprint, phrases FROM expansions").fetchall()
            cached = {fingerprint: tuple(json.loads(phrases)) for fingerprint, phrases in rows}
            for record in records:
                legacy = record.legacy_fingerprint
                if record.fingerprint not in cached and legacy in cached:
                    sql.execute("UPDATE expansions SET fingerprint = ? WHERE fingerprint = ?",
                                (record.fingerprint, legacy))
                    cached[record.fingerprint] = cached.pop(legacy)
                    sql.changed = True
        return cached

    def lookup(self, records: Iterable[ToolRecord]) -> dict[str, tuple[str, ...]]:
        """fingerprint -> phrases for the records that have an entry (what `apply_expansions` takes)."""
        records = list(records)
        cached = self._fingerprints(records)
        return {
            record.fingerprint: cached[record.fingerprint]
            for record in records
            if record.fingerprint in cached
        }

    def missing(self, records: Iterable[ToolRecord]) -> list[ToolRecord]:
        """The records whose current version has never been expanded, in the given order."""
        records = list(records)
        cached = self._fingerprints(records)
        return [record for record in records if record.fingerprint not in cached]

    def entries(self, tool_ids: Collection[str] | None = None) -> list[CachedExpansion]:
        """Cached entries, optionally only those of `tool_ids`, ordered by tool id."""
        with self.state.sql(self.KIND) as sql:
            rows = sql.execute(f"SELECT {_COLUMNS} FROM expansions ORDER BY tool_id, created").fetchall()
        entries = [_entry(row) for row in rows]
        if tool_ids is None:
            return entries
        wanted = set(tool_ids)
        return [entry for entry in entries if entry.tool_id in wanted]

    def forget(self, tool_ids: Collection[str]) -> int:
        """Drop the entries of `tool_ids`, so they are expanded again; returns how many rows went."""
        with self.state.sql(self.KIND) as sql:
            removed = sum(
                int(sql.execute("DELETE FROM expansions WHERE tool_id = ?", (tool_id,)).rowcount)
                for tool_id in tool_ids
            )
            sql.changed = removed > 0
        return removed
