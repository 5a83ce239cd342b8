"""Pinning (rug-pull defence): remember each tool definition as approved; hold back changed ones.

A server can present a harmless tool, get approved, and later change the description into an
attack. The pin store keeps, per (server, tool name), the SHA-256 fingerprint of the approved
definition (`ToolRecord.fingerprint`: name, title, description, input and output schemas,
annotations) and that definition itself. On every listing the gateway calls `check(records)`:

- trusted: the fingerprint matches the approved one;
- new: first sight, approved on first use (trust on first use) and usable at once;
- pending: first sight in strict mode: held back until a person approves it;
- changed: the definition differs from the approved one: quarantined (left out of search and
  refused by execute_tool) until a person approves it. The new definition is stored as the
  candidate, so `toolscout approve` can show and accept exactly that, without connecting.

The pins live in the state store (`toolscout.state`: SQLite in the user state directory, or
Postgres shared by replicas), one record per server key, each read-modify-write one transaction:
a running gateway sees approvals made by `toolscout approve` (or by another replica) on its next
check, and a process killed mid-write leaves the previous pins whole. The server key is whatever
`ToolRecord.server` holds; the store treats it as an opaque string.

Today's JSON pin file (`pins.json` in the user state directory, or $TOOLSCOUT_PINS) is imported
into a store that has no pins yet, the first time a PinStore uses it, and renamed
`pins.json.imported`. A file that cannot be read is an error, never silently skipped: skipping it
would re-trust every tool, which is what a rug pull wants.

Pins made before the fingerprint covered title and output schema (state file version 1, or an
entry without `fingerprint_version`) are upgraded in place when the fields they did cover still
match: the title and output schema seen at that moment are trusted. Otherwise they are changed.
`forget(keys)` drops the pins of tools their server no longer lists (`toolscout approve --forget`).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

import platformdirs

from toolscout.catalog import ToolRecord
from toolscout.errors import PinStateError
from toolscout.json_files import read_json_file
from toolscout.security.changes import compare
from toolscout.state import StateStore, open_state
from toolscout.state.store import Records

__all__ = [
    "PATH_ENV",
    "PINS_KIND",
    "PendingChange",
    "PinStatus",
    "PinStore",
    "PinVerdict",
    "PinVerdicts",
    "default_state_path",
    "definition_of",
    "record_from_definition",
]

logger = logging.getLogger(__name__)

# Where the JSON pin file of earlier versions is looked for, to be imported into the state store.
PATH_ENV = "TOOLSCOUT_PINS"
# The state store's kind holding pins: one record per server key, {tool name: entry}.
PINS_KIND = "pins"
# JSON pin files: version 2 added `fingerprint_version` to each pin and candidate.
_READABLE_VERSIONS = (1, 2)
# Fingerprint compositions: 1 = catalog.LEGACY_FIELDS, 2 = catalog.DEFINITION_FIELDS.
FINGERPRINT_VERSION = 2
_LEGACY_FINGERPRINT = 1
_RECOVERY = (
    "It records which tool definitions were approved. Repair it, or move it away to start over "
    "(every tool is then trusted again on first use, or pending in strict mode)."
)

Key = tuple[str, str]


class PinStatus(StrEnum):
    TRUSTED = "trusted"
    NEW = "new"
    PENDING = "pending"
    CHANGED = "changed"


@dataclass(frozen=True)
class PinVerdict:
    """What the pin store says about one tool as currently listed by its server."""

    server: str
    name: str
    status: PinStatus
    # For CHANGED/PENDING: which parts changed, naming paths but never quoting the new text.
    changes: tuple[str, ...] = ()

    @property
    def blocked(self) -> bool:
        return self.status in (PinStatus.PENDING, PinStatus.CHANGED)

    @property
    def message(self) -> str:
        """The refusal an agent gets from execute_tool for a blocked tool ('' when not blocked)."""
        command = f"toolscout approve --server {self.server} {self.name}"
        if self.status is PinStatus.CHANGED:
            return (
                f"Tool '{self.name}' of server '{self.server}' is quarantined: its definition changed "
                f"since it was approved ({'; '.join(self.changes)}). It stays unavailable until a person "
                f"reviews the change and runs `{command}`."
            )
        if self.status is PinStatus.PENDING:
            return (
                f"Tool '{self.name}' of server '{self.server}' is new and awaits approval (strict pinning). "
                f"It stays unavailable until a person reviews it and runs `{command}`."
            )
        return ""


@dataclass(frozen=True)
class PinVerdicts:
    """Verdicts of one `check`, by (server, tool name)."""

    by_key: Mapping[Key, PinVerdict]

    def get(self, server: str, name: str) -> PinVerdict | None:
        return self.by_key.get((server, name))

    def allows(self, server: str, name: str) -> bool:
        verdict = self.by_key.get((server, name))
        return verdict is None or not verdict.blocked

    @property
    def blocked(self) -> dict[Key, PinVerdict]:
        return {key: v for key, v in self.by_key.items() if v.blocked}

    def __iter__(self) -> Iterator[PinVerdict]:
        return iter(self.by_key.values())

    def __len__(self) -> int:
        return len(self.by_key)


@dataclass(frozen=True)
class PendingChange:
    """A definition waiting for a person: a changed tool, or a new one in strict mode."""

    server: str
    name: str
    approved: Mapping[str, Any] | None  # None: never approved
    candidate: Mapping[str, Any]
    candidate_fingerprint: str
    seen_at: str

    @property
    def kind(self) -> str:
        return "new" if self.approved is None else "changed"

    @property
    def diff(self) -> str:
        return compare(self.approved, self.candidate).diff

    @property
    def summary(self) -> tuple[str, ...]:
        return compare(self.approved, self.candidate).summary


def default_state_path() -> Path:
    """The JSON pin file of earlier versions: $TOOLSCOUT_PINS, else pins.json in the per-user
    state directory."""
    override = os.environ.get(PATH_ENV)
    if override:
        return Path(override).expanduser()
    return Path(platformdirs.user_state_dir("toolscout", appauthor=False)) / "pins.json"


def definition_of(record: ToolRecord) -> dict[str, Any]:
    """The fingerprinted fields of a record as plain JSON data, as stored."""
    # Same encoding as ToolRecord.fingerprint, so a stored definition fingerprints the same.
    return json.loads(json.dumps(record.definition(), ensure_ascii=False, default=_plain))


def _plain(value: Any) -> Any:
    return dict(value) if isinstance(value, Mapping) else str(value)


def record_from_definition(server: str, definition: Mapping[str, Any]) -> ToolRecord:
    return ToolRecord(
        id="",
        name=str(definition.get("name", "")),
        server=server,
        description=str(definition.get("description") or ""),
        input_schema=definition.get("input_schema") or {},
        title=definition.get("title"),
        annotations=definition.get("annotations"),
        output_schema=definition.get("output_schema"),
    )


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


class PinStore:
    """Approved tool definitions in the state store; see the module docstring.

    `state`: an open store, or where one is (`toolscout.state.open_state`; None: the default).
    """

    def __init__(
        self, state: StateStore | str | Path | None = None, *, strict: bool = False, legacy_file: Path | None = None
    ) -> None:
        self.state = open_state(state) if state is None or isinstance(state, (str, Path)) else state
        self.strict = strict
        self._legacy_file = legacy_file if legacy_file is not None else default_state_path()
        self._legacy_checked = False

    @property
    def location(self) -> str:
        return self.state.location

    def revision(self) -> int:
        """Changes whenever pins change, by this process or any other sharing the store."""
        return self.state.revision(PINS_KIND)

    # -- storage -------------------------------------------------------------------------------

    @contextmanager
    def _tools(self, servers: Iterable[str] | None = None) -> Iterator[dict[str, Any]]:
        """{server: {tool name: entry}} of `servers` (None: all), in one transaction; what the
        block changes in it is written back when it ends."""
        with self.state.transaction(PINS_KIND) as records:
            imported = self._import_legacy_file(records)
            if servers is None:
                tools = dict(records.items())
            else:
                tools = {server: records.get(server) or {} for server in dict.fromkeys(servers)}
            before = {server: _canonical(entries) for server, entries in tools.items()}
            yield tools
            for server, entries in tools.items():
                if not entries:
                    if server in before:
                        records.delete(server)
                elif _canonical(entries) != before.get(server):
                    records.put(server, entries)
            for server in before.keys() - tools.keys():
                records.delete(server)
        self._legacy_checked = True
        if imported is not None:
            # Only once the import is committed: a process killed before leaves the file to import.
            kept = imported.with_name(imported.name + ".imported")
            os.replace(imported, kept)
            logger.info("pins of %s imported into the state store %s; the file is kept as %s",
                        imported, self.state.location, kept)

    def _import_legacy_file(self, records: Records) -> Path | None:
        """Copy the JSON pin file into a store without pins; returns the file if it did."""
        path = self._legacy_file
        if self._legacy_checked or not path.exists() or next(records.items(), None) is not None:
            return None
        for server, entries in _read_legacy_file(path).items():
            if entries:
                records.put(server, entries)
        return path

    # -- operations ----------------------------------------------------------------------------

    def check(self, records: Iterable[ToolRecord]) -> PinVerdicts:
        """Verdicts for the tools a server lists now; pins new tools and records changed ones."""
        verdicts: dict[Key, PinVerdict] = {}
        records = list(records)
        with self._tools(record.server for record in records) as tools:
            for record in records:
                verdict, changed_state = self._check_one(tools, record)
                verdicts[(record.server, record.name)] = verdict
                if changed_state and verdict.blocked:
                    logger.warning("%s", verdict.message)  # once per new candidate, not per listing
        return PinVerdicts(verdicts)

    def _check_one(self, tools: dict[str, Any], record: ToolRecord) -> tuple[PinVerdict, bool]:
        entries = tools.setdefault(record.server, {})
        entry = entries.get(record.name)
        fingerprint, now = record.fingerprint, _now()
        if isinstance(entry, dict) and _upgraded(entry, record, now):
            logger.info("pin of %s/%s upgraded to the fingerprint that covers title and output schema",
                        record.server, record.name)
            return PinVerdict(record.server, record.name, PinStatus.TRUSTED), True
        pinned = entry.get("fingerprint") if isinstance(entry, dict) else None
        if pinned == fingerprint:
            if entry.get("candidate") is not None:
                entry["candidate"] = None  # the server went back to the approved definition
                return PinVerdict(record.server, record.name, PinStatus.TRUSTED), True
            return PinVerdict(record.server, record.name, PinStatus.TRUSTED), False
        definition = definition_of(record)
        if pinned is None and not self.strict:
            entries[record.name] = {"fingerprint": fingerprint, "fingerprint_version": FINGERPRINT_VERSION,
                                    "definition": definition, "approved_at": now, "approved_by": "first use",
                                    "candidate": None}
            return PinVerdict(record.server, record.name, PinStatus.NEW), True
        if not isinstance(entry, dict):
            entry = entries[record.name] = {"fingerprint": None, "definition": None, "approved_at": None}
        candidate = entry.get("candidate") or {}
        dirty = candidate.get("fingerprint") != fingerprint
        if dirty:
            entry["candidate"] = {"fingerprint": fingerprint, "fingerprint_version": FINGERPRINT_VERSION,
                                  "definition": definition, "seen_at": now}
        if pinned is None:
            return PinVerdict(record.server, record.name, PinStatus.PENDING, ("new tool, never approved",)), dirty
        summary = compare(entry.get("definition"), definition).summary
        return PinVerdict(record.server, record.name, PinStatus.CHANGED, summary), dirty

    def pending(self, server: str | None = None, names: Iterable[str] | None = None) -> list[PendingChange]:
        """Definitions awaiting approval, optionally only of one server and/or some tool names."""
        wanted = set(names) if names is not None else None
        with self._tools(None if server is None else [server]) as tools:
            pass
        found = []
        for server_name, entries in sorted(tools.items()):
            if server is not None and server_name != server:
                continue
            for name, entry in sorted(entries.items()):
                candidate = entry.get("candidate") if isinstance(entry, dict) else None
                if not candidate or (wanted is not None and name not in wanted):
                    continue
                found.append(PendingChange(server_name, name, entry.get("definition"), candidate["definition"],
                                           candidate["fingerprint"], candidate.get("seen_at", "")))
        return found

    def approve(self, changes: Iterable[PendingChange], approved_by: str = "approve") -> list[PendingChange]:
        """Accept exactly the candidates shown; one that changed again meanwhile is left pending."""
        accepted = []
        changes = list(changes)
        with self._tools(change.server for change in changes) as tools:
            for change in changes:
                entry = tools[change.server].get(change.name)
                candidate = entry.get("candidate") if isinstance(entry, dict) else None
                if not candidate or candidate.get("fingerprint") != change.candidate_fingerprint:
                    logger.warning("%s/%s changed again since it was shown; not approved", change.server, change.name)
                    continue
                # A candidate recorded before the upgrade keeps its composition; `check` upgrades it.
                entry.update(fingerprint=candidate["fingerprint"], definition=candidate["definition"],
                             fingerprint_version=candidate.get("fingerprint_version", _LEGACY_FINGERPRINT),
                             approved_at=_now(), approved_by=approved_by, candidate=None)
                accepted.append(change)
        return accepted

    def pinned(self) -> dict[str, list[str]]:
        """Tool names with a pin or a candidate, by server."""
        with self._tools() as tools:
            pass
        return {server: sorted(entries) for server, entries in sorted(tools.items()) if entries}

    def forget(self, keys: Iterable[Key]) -> list[Key]:
        """Drop the pins (and candidates) of these tools; returns those that were there.

        A forgotten tool that is listed again is a new tool: trusted on first use, or pending in
        strict mode. Callers forget only tools their server no longer lists.
        """
        removed = []
        keys = list(keys)
        with self._tools(server for server, _ in keys) as tools:
            for server, name in keys:
                if tools[server].pop(name, None) is not None:
                    removed.append((server, name))
        return removed


def _canonical(entries: Any) -> str:
    return json.dumps(entries, sort_keys=True, ensure_ascii=False, default=str)


def _read_legacy_file(path: Path) -> dict[str, Any]:
    """{server: {tool name: entry}} of a JSON pin file of earlier versions; PinStateError if unusable."""
    state = read_json_file(path, "pin state file", error=PinStateError, advice=_RECOVERY)
    version = state.get("version") if isinstance(state, dict) else None
    if isinstance(version, int) and version > max(_READABLE_VERSIONS) and isinstance(state.get("tools"), dict):
        raise PinStateError(
            f"pin state file {path} is version {version}, written by a newer toolscout; "
            "use that version, or move the file away."
        )
    if version not in _READABLE_VERSIONS or not isinstance(state.get("tools"), dict):
        raise PinStateError(
            f"pin state file {path} is not a toolscout pin file (version 1 or 2). "
            "Move it away to start over, or point TOOLSCOUT_PINS at another file."
        )
    return {str(server): entries for server, entries in state["tools"].items() if isinstance(entries, dict)}


def _upgraded(entry: dict[str, Any], record: ToolRecord, now: str) -> bool:
    """Upgrade a pin of the legacy composition in place if the fields it covered still match.

    The title and output schema listed now are trusted, as on first use: the pin never recorded
    them. A legacy pin that does not match is left as it is, so the tool is quarantined as changed.
    """
    if entry.get("fingerprint_version", _LEGACY_FINGERPRINT) != _LEGACY_FINGERPRINT:
        return False
    if entry.get("fingerprint") is None or entry["fingerprint"] != record.legacy_fingerprint:
        return False
    entry.update(fingerprint=record.fingerprint, fingerprint_version=FINGERPRINT_VERSION,
                 definition=definition_of(record), upgraded_at=now, candidate=None)
    return True
