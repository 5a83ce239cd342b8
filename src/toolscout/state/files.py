"""toolscout's own state files (learned use, caches, status files): private to the user, and
rebuilt when damaged rather than stopping the gateway.

    path = private_file(data_dir() / "usage.sqlite3")       # created 0600 if it is not there
    connection = open_or_set_aside(path, lambda: sqlite3.connect(path))

A state file holds what toolscout learned or cached, never what a person wrote: when it cannot be
read it is moved aside (`usage.sqlite3` -> `usage.sqlite3.damaged-20261126T101500`), one warning
line says so and where it went, and a fresh one is started. Files a person writes (registries,
overlays, pins, token files) are not state files: those are refused with a message instead
(`json_files.py`), since guessing would lose or override a person's decision.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import platformdirs

__all__ = [
    "DATA_DIR_ENV",
    "PRIVATE_DIR_MODE",
    "PRIVATE_FILE_MODE",
    "data_dir",
    "open_or_set_aside",
    "private_dir",
    "private_file",
    "set_aside",
    "write_private_json",
]

logger = logging.getLogger(__name__)

PRIVATE_FILE_MODE = 0o600
PRIVATE_DIR_MODE = 0o700
# What SQLite keeps beside a database in WAL mode; moved with it.
_SQLITE_SIDECARS = ("-wal", "-shm", "-journal")

T = TypeVar("T")

# Overrides the per-user data directory (tests, portable installs, several profiles side by side).
DATA_DIR_ENV = "TOOLSCOUT_DATA_DIR"


def data_dir() -> Path:
    """The directory of the files toolscout keeps per user beside the state store (catalog and status files)."""
    override = os.environ.get(DATA_DIR_ENV)
    if override:
        return Path(override).expanduser()
    return platformdirs.user_data_path("toolscout", appauthor=False)


def private_dir(path: Path) -> Path:
    """`path` as a directory, created (with its parents) readable by the user only if missing."""
    path.mkdir(mode=PRIVATE_DIR_MODE, parents=True, exist_ok=True)
    return path


def private_file(path: Path) -> Path:
    """`path`, created empty with mode 0600 if missing, so whatever writes it next (SQLite, which
    gives its journal files the database's mode) does not create it readable by others."""
    private_dir(path.parent)
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PRIVATE_FILE_MODE))
    except FileExistsError:
        pass
    return path


def set_aside(path: Path, problem: str) -> Path:
    """Move the damaged state file `path` (and its SQLite journals) aside; one warning says so."""
    stamp = time.strftime("%Y%m%dT%H%M%S", time.gmtime())
    aside = path.with_name(f"{path.name}.damaged-{stamp}")
    path.replace(aside)
    for suffix in _SQLITE_SIDECARS:
        sidecar = path.with_name(path.name + suffix)
        if sidecar.exists():
            sidecar.replace(aside.with_name(aside.name + suffix))
    logger.warning("state file %s is damaged (%s); moved it to %s and started a new one", path, problem, aside.name)
    return aside


def open_or_set_aside(path: Path, open_it: Callable[[], T]) -> T:
    """`open_it()`; if it finds the SQLite file at `path` damaged (a `sqlite3.DatabaseError`, raised
    as it is or as the cause of the error a store raises), set the file aside and open a fresh one.
    Errors that are not damage (locked, no permission, no space) are raised as they are."""
    try:
        return open_it()
    except Exception as exc:
        damage = exc if isinstance(exc, sqlite3.DatabaseError) else exc.__cause__
        if not isinstance(damage, sqlite3.DatabaseError) or isinstance(damage, sqlite3.OperationalError) or not path.exists():
            raise
        set_aside(path, str(damage))
    private_file(path)
    return open_it()


def write_private_json(path: Path, data: dict[str, Any]) -> None:
    """Replace the file in one step, so a reader never sees half of it; OSError if that failed.

    Readable by this user only: reasons can quote an upstream's stderr.
    """
    partial = path.with_suffix(".partial")
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE_MODE)
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        json.dump(data, file, ensure_ascii=False)
    os.replace(partial, path)
