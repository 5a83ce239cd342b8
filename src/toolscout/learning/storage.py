"""Where what toolscout learns is kept: the state store (`toolscout.state`), shared by replicas.

Learned examples and generated phrases are tables of the state store: by default the SQLite file
every local process shares, or the Postgres of a deployment's replicas (`--state`), so that what
one replica learns, every replica searches with. Earlier versions kept them in SQLite files of
their own in the data directory (`usage.sqlite3`, `expansions.sqlite3`); such a file is imported
into the store the first time a store opens, then renamed `<name>.imported` (an interrupted import
runs again: rows already there are kept, never counted twice).
"""

from __future__ import annotations

import logging
import sqlite3
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Self


from toolscout.errors import StateError
from toolscout.state import StateStore, open_state
from toolscout.state.files import set_aside

__all__ = ["LearningStore", "import_legacy_file"]

logger = logging.getLogger(__name__)

def import_legacy_file(state: StateStore, path: Path, table: str, columns: Sequence[str], kind: str) -> int:
    """Copy the rows of `table` in the SQLite file `path` (an earlier version's store) into the same
    table of `state`, keeping rows already there; then rename the file `<name>.imported`.
    Returns how many rows were read (0 when there is no file). A damaged file is set aside."""
    if not path.is_file():
        return 0
    names = ", ".join(columns)
    try:
        legacy = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5.0)
        try:
            rows = legacy.execute(f"SELECT {names} FROM {table}").fetchall()
        finally:
            legacy.close()
    except sqlite3.OperationalError as exc:
        logger.warning("cannot import %s into the state store now (%s); trying again at the next start", path, exc)
        return 0
    except sqlite3.DatabaseError as exc:
        set_aside(path, str(exc))
        return 0
    marks = ", ".join("?" * len(columns))
    with state.sql(kind) as sql:
        sql.executemany(f"INSERT INTO {table} ({names}) VALUES ({marks}) ON CONFLICT DO NOTHING", rows)
        sql.changed = bool(rows)
    imported = path.with_name(path.name + ".imported")
    path.replace(imported)
    for suffix in ("-wal", "-shm"):
        path.with_name(path.name + suffix).unlink(missing_ok=True)
    logger.info("imported %d row(s) of %s into the state store %s; the file is now %s",
                len(rows), path.name, state.location, imported.name)
    return len(rows)


class LearningStore:
    """Base of the learning stores: tables of the state store at `location` (None: the default)."""

    # The state store's kind whose revision changes when the table does (replicas poll it).
    KIND = ""

    def __init__(self, location: str | Path | None, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self.state = open_state(location)
        self.location = self.state.location

    def _import(self, path: Path, table: str, columns: Sequence[str]) -> None:
        try:
            import_legacy_file(self.state, path, table, columns, self.KIND)
        except (StateError, OSError) as exc:
            logger.warning("cannot import %s into the state store now (%s); trying again at the next start", path, exc)

    def revision(self) -> int:
        """Changes whenever any process changed this store's table."""
        return self.state.revision(self.KIND)

    def close(self) -> None:
        self.state.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()
