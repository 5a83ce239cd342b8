"""The last good copy of a SQLite state store, kept beside it, and what to do when the store is damaged.

A store holds trust decisions (pins, approvals, quarantined definitions). Losing them silently is
what a rug pull wants: every tool would be trusted again on first use. So after each transaction
that changed a decision, the store is copied whole to `<file>.backup` (SQLite's online backup,
written beside and renamed into place, so the copy is always a whole store). A damaged store is
refused with a message that names the file, offers the copy, and says what to do:

    write_backup(connection, path)           # after a committed change of a DECISION_KINDS kind
    damage_advice(path)                      # the what-to-do part of every damaged-store message
    restore_backup(path)                     # `toolscout restore-state`: the copy put back

Postgres stores are not copied: their backups are the database's own (pg_dump, replication).
"""

from __future__ import annotations

import logging
import os
import shlex
import sqlite3
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

from toolscout.errors import StateError

__all__ = [
    "DECISION_KINDS",
    "SQLITE_HEADER",
    "backup_path",
    "damage_advice",
    "is_whole_store",
    "restore_backup",
    "write_backup",
]

logger = logging.getLogger(__name__)

# The kinds whose records are trust decisions (`toolscout.security.pinning`: pins with approvals
# and quarantined candidates; how each pinned server is launched). A change to one is backed up.
DECISION_KINDS = frozenset({"pins", "servers"})
# The first 16 bytes of every SQLite database file.
SQLITE_HEADER = b"SQLite format 3\x00"
# What SQLite keeps beside a database in WAL mode.
_SIDECARS = ("-wal", "-shm", "-journal")


def backup_path(path: Path) -> Path:
    return path.with_name(f"{path.name}.backup")


def write_backup(db: sqlite3.Connection, path: Path) -> None:
    """Copy the store open as `db` (at `path`) to its backup file. Never raises: a copy that cannot
    be written is logged, and the store itself is as good as before."""
    target = backup_path(path)
    scratch = target.with_name(f"{target.name}.{os.getpid()}-{threading.get_ident()}")
    try:
        fd = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.close(fd)
        copy = sqlite3.connect(scratch)
        try:
            db.backup(copy)
            # One self-contained file: no write-ahead log beside it to lose when it is copied.
            copy.execute("PRAGMA journal_mode=DELETE")
        finally:
            copy.close()
        with scratch.open("rb") as handle:
            os.fsync(handle.fileno())
        os.replace(scratch, target)
    except (OSError, sqlite3.Error) as exc:
        logger.warning("could not copy the state store %s to %s: %s", path, target, exc)
        scratch.unlink(missing_ok=True)


def damage_advice(path: Path) -> str:
    """What a person can do about the damaged store at `path`: restore the backup if there is one,
    else start over, knowing what that costs."""
    backup = backup_path(path)
    start_over = (
        f"or move {path} away to start over (every approval and pin is then lost: tools are trusted again on "
        "first use, and quarantined ones are offered again)"
    )
    if is_whole_store(backup):
        taken = datetime.fromtimestamp(backup.stat().st_mtime, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        return (
            f"A copy of it from {taken} is at {backup}: `toolscout restore-state --state {shlex.quote(str(path))}` "
            f"puts it back (keeping the damaged file beside it), {start_over}."
        )
    return f"No backup of it is kept ({backup} is missing or unusable): restore it from your own backups, {start_over}."


def restore_backup(path: Path) -> Path:
    """Put the backup of the store at `path` in its place; the file found there (if any) is moved to
    `<file>.damaged-<time>`, which is returned (or `path` when nothing was there). StateError if
    the backup is missing or unusable."""
    backup = backup_path(path)
    if not is_whole_store(backup):
        raise StateError(f"there is no usable backup of the state store {path} ({backup} is missing or damaged)")
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    aside = path.with_name(f"{path.name}.damaged-{stamp}")
    scratch = path.with_name(f"{path.name}.restoring-{os.getpid()}")
    try:
        fd = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.close(fd)
        source, copy = sqlite3.connect(f"file:{backup}?mode=ro", uri=True), sqlite3.connect(scratch)
        try:
            source.backup(copy)
        finally:
            source.close()
            copy.close()
        moved = path.exists()
        if moved:
            path.replace(aside)
        for suffix in _SIDECARS:
            sidecar = path.with_name(path.name + suffix)
            if sidecar.exists():
                sidecar.replace(aside.with_name(aside.name + suffix))
        os.replace(scratch, path)
    except (OSError, sqlite3.Error) as exc:
        scratch.unlink(missing_ok=True)
        raise StateError(f"cannot restore the state store {path} from {backup}: {exc}") from exc
    return aside if moved else path


def is_whole_store(path: Path) -> bool:
    """Whether `path` is a whole SQLite database with a schema (as a backup must be)."""
    try:
        with path.open("rb") as handle:
            if handle.read(16) != SQLITE_HEADER:
                return False
        db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            return db.execute("PRAGMA quick_check").fetchone() == ("ok",) and db.execute("PRAGMA user_version").fetchone()[0] > 0
        finally:
            db.close()
    except (OSError, sqlite3.Error):
        return False
