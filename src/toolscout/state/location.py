"""Where the state store is: `--state`, else $TOOLSCOUT_STATE, else state.sqlite3 in the user
state directory; a `postgresql://` (or `postgres://`) URL is Postgres, anything else a SQLite file."""

from __future__ import annotations

import os
from pathlib import Path

import platformdirs

from toolscout.state.store import StateStore

__all__ = ["STATE_ENV", "STATE_FILE", "default_state_location", "is_postgres", "open_state", "state_exists"]

STATE_ENV = "TOOLSCOUT_STATE"
STATE_FILE = "state.sqlite3"


def default_state_location() -> str:
    override = os.environ.get(STATE_ENV)
    if override:
        return override
    return str(Path(platformdirs.user_state_dir("toolscout", appauthor=False)) / STATE_FILE)


def is_postgres(location: str) -> bool:
    return location.startswith(("postgresql://", "postgres://"))


def state_exists(location: str | Path | None = None) -> bool:
    """Whether the store at `location` may hold something: a Postgres always, a SQLite file once created.
    Read-only commands look before opening, so as not to create an empty store."""
    where = str(location) if location is not None else default_state_location()
    return is_postgres(where) or Path(where).expanduser().exists()


def open_state(location: str | Path | None = None) -> StateStore:
    """The store at `location` (None: the default); StateError if it cannot be used."""
    where = str(location) if location is not None else default_state_location()
    if is_postgres(where):
        from toolscout.state.postgres import PostgresStateStore

        return PostgresStateStore(where)
    from toolscout.state.sqlite import SqliteStateStore

    return SqliteStateStore(Path(where))
