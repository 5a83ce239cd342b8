"""`toolscout restore-state`: put back the copy of a damaged state store kept after its last decision.

    toolscout restore-state [--state FILE]

A SQLite state store is copied to `<file>.backup` after each trust decision (pins, approvals,
quarantined definitions). When the store is found damaged, the gateway refuses to start and says
so; this command is how a person says to use the copy. The damaged file is kept beside it
(`<file>.damaged-<time>`). A store that is sound is left alone: there is nothing to restore.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from toolscout.commands._gateway import add_state_option, fail
from toolscout.errors import StateError
from toolscout.state import default_state_location, open_state
from toolscout.state.backup import backup_path, is_whole_store, restore_backup
from toolscout.state.location import is_postgres

__all__ = ["register", "run"]


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "restore-state",
        help="put back the backup of a damaged state store (pins, approvals, quarantine)",
        description="Replace a damaged SQLite state store with the copy toolscout kept after its last trust "
        "decision (<file>.backup); the damaged file is kept beside it as <file>.damaged-<time>.",
    )
    add_state_option(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    location = args.state or default_state_location()
    if is_postgres(location):
        return fail("restore-state", "a Postgres state store is restored with the database's own backups (pg_restore)")
    path = Path(location).expanduser()
    if is_whole_store(path):
        return fail("restore-state", f"the state store {path} is sound; nothing was restored")
    try:
        aside = restore_backup(path)
        open_state(path).close()
    except StateError as exc:
        return fail("restore-state", str(exc))
    kept = f"; the damaged file is kept as {aside}" if aside != path else ""
    print(f"Restored the state store {path} from {backup_path(path)}{kept}.")
    return 0
