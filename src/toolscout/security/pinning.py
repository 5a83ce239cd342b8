"""Pinning (rug-pull defence): remember each tool definition as approved; hold back changed ones.

A server can present a harmless tool, get approved, and later change the description into an
attack. The pin store keeps, per (server identity, tool name), the SHA-256 fingerprint of the approved
definition (`ToolRecord.fingerprint`: name, title, description, input and output schemas,
annotations) and that definition itself. On every listing the gateway calls `check(records)`:

- trusted: the fingerprint matches the approved one;
- new: first sight, approved on first use (trust on first use) and usable at once;
- pending: first sight in strict mode: held back until a person approves it;
- changed: the definition differs from the approved one: quarantined (left out of search and
  refused by execute_tool) until a person approves it. The new definition is stored as the
  candidate, so `toolscout approve` can show and accept exactly that, without connecting.

A server identity (`toolscout.security.server_identity`) is the server's name with its launch
command or URL: two registries with a same-named server keep separate pins, so neither quarantines
the other's tools. Pins are filed under the identity's key ("time@3f2a1c0d"); a bare name is a pin
from before identities (state file version 1 or 2), which the first server of that name to list
its tools claims as its own.

A candidate stays until a person approves it, or until its own server is seen to go back to the
approved definition: by the process that saw that server list the candidate, or by one started
after the candidate was recorded. Several gateways share one state file (a desktop host's and an
IDE's); one whose session is older than the candidate and still lists the approved definition
never drops the candidate another one recorded.

The state file is JSON, read and rewritten under a lock file for every operation (so a running
gateway sees approvals made by `toolscout approve` on its next check), and replaced atomically
(temporary file + os.replace) so a crash never leaves half a file. A file that cannot be read is
an error, never silently reset: resetting would re-trust every tool, which is what a rug pull
wants.

Pins made before the fingerprint covered title and output schema (state file version 1, or an
entry without `fingerprint_version`) are upgraded in place when the fields they did cover still
match: the title and output schema seen at that moment are trusted. Otherwise they are changed.
`forget(keys)` drops the pins of tools their server no longer lists (`toolscout approve --forget`).
"""

from __future__ import annotations

import json
import logging
import os
import shlex
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from pathlib import Path
from typing import Any

import platformdirs
from filelock import FileLock, Timeout

from toolscout.catalog import ToolRecord
from toolscout.errors import ConfigError, PinStateError
from toolscout.json_files import read_json_file
from toolscout.security.changes import compare
from toolscout.security.server_identity import ServerIdentity, name_of_key

__all__ = [
    "PATH_ENV",
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

PATH_ENV = "TOOLSCOUT_PINS"
# Version 2 added `fingerprint_version` to each pin and candidate; version 3 files pins by server
# identity key and keeps `servers` (each key's name and launch). Older files are read and rewritten
# as version 3 (an older toolscout then refuses the file rather than misreading it).
STATE_VERSION = 3
_READABLE_VERSIONS = (1, 2, 3)
# Fingerprint compositions: 1 = catalog.LEGACY_FIELDS, 2 = catalog.DEFINITION_FIELDS.
FINGERPRINT_VERSION = 2
_LEGACY_FINGERPRINT = 1
_LOCK_TIMEOUT = 10.0
_RECOVERY = (
    "It records which tool definitions were approved. Repair it, or move it away to start over "
    "(every tool is then trusted again on first use, or pending in strict mode)."
)

# (server identity key, tool name)
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
    # The command that approves exactly this definition (`PinStore.approve_command`).
    command: str = ""

    @property
    def blocked(self) -> bool:
        return self.status in (PinStatus.PENDING, PinStatus.CHANGED)

    @property
    def message(self) -> str:
        """The refusal an agent gets from execute_tool for a blocked tool ('' when not blocked)."""
        command = self.command or f"toolscout approve --server {self.server} {self.name}"
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
    # The server identity key it is filed under (the name alone for pins from before identities),
    # and how that server is launched, as a person reads it ('' when unknown).
    key: str = ""
    launch: str = ""

    @property
    def pin_key(self) -> str:
        return self.key or self.server

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
    """$TOOLSCOUT_PINS, else pins.json in the per-user state directory."""
    override = os.environ.get(PATH_ENV)
    if override:
        return Path(override).expanduser()
    return _user_state_path()


def _user_state_path() -> Path:
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
    """Approved tool definitions in a JSON state file; see the module docstring."""

    def __init__(self, path: Path | str | None = None, *, strict: bool = False) -> None:
        self.path = Path(path).expanduser() if path is not None else default_state_path()
        self.strict = strict
        self._lock = FileLock(str(self.path) + ".lock", timeout=_LOCK_TIMEOUT)
        # Candidates (key, tool, fingerprint) this process saw their own server list: only those it
        # may drop when the server lists the approved definition again.
        self._listed_candidates: set[tuple[str, str, str]] = set()
        # A candidate recorded before this store existed, whose server this process sees list the
        # approved definition, is stale too: this process's sessions all began after it was seen.
        self._opened_at = _now()

    def approve_command(self, key: str, tool: str) -> str:
        """The command a person runs to approve `tool` of the server filed under `key`, exactly:
        the state file is named unless it is the per-user one (a host may set TOOLSCOUT_PINS for
        the gateway alone, which the person's shell does not have)."""
        command = f"toolscout approve --server {shlex.quote(key)} {shlex.quote(tool)}"
        if self.path.resolve() != _user_state_path().resolve():
            command += f" --pins {shlex.quote(str(self.path))}"
        return command

    # -- file handling -------------------------------------------------------------------------

    def _load(self) -> dict[str, Any]:
        state = read_json_file(
            self.path, "pin state file", error=PinStateError, advice=_RECOVERY,
            if_missing={"version": STATE_VERSION, "tools": {}},
        )
        version = state.get("version") if isinstance(state, dict) else None
        if isinstance(version, int) and version > STATE_VERSION and isinstance(state.get("tools"), dict):
            raise PinStateError(
                f"pin state file {self.path} is version {version}, written by a newer toolscout; "
                "use that version, or point TOOLSCOUT_PINS / --pins at another file."
            )
        if version not in _READABLE_VERSIONS or not isinstance(state.get("tools"), dict):
            raise PinStateError(
                f"pin state file {self.path} is not a toolscout pin file (version 1 to 3). "
                "Move it away to start over, or point TOOLSCOUT_PINS / --pins at another file."
            )
        return state

    def _save(self, state: dict[str, Any]) -> None:
        state["version"] = STATE_VERSION  # a version-1 file is upgraded by its first write
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle = tempfile.NamedTemporaryFile(
            "w", encoding="utf-8", dir=self.path.parent, prefix=f".{self.path.name}.", suffix=".tmp", delete=False
        )
        try:
            with handle:
                json.dump(state, handle, indent=1, sort_keys=True, ensure_ascii=False, default=str)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(handle.name, self.path)
        except BaseException:
            Path(handle.name).unlink(missing_ok=True)
            raise

    @contextmanager
    def _locked(self) -> Iterator[None]:
        # Read-modify-write under one lock, so a gateway and `toolscout approve` never lose each
        # other's updates.
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._lock.acquire()
        except Timeout as exc:
            raise PinStateError(
                f"pin state file {self.path} stayed locked for {_LOCK_TIMEOUT:.0f} s by another toolscout "
                f"process; if none is running, delete {self._lock.lock_file}"
            ) from exc
        except OSError as exc:
            raise PinStateError(f"cannot use pin state directory {self.path.parent}: {exc}") from exc
        try:
            yield
        finally:
            self._lock.release()

    # -- operations ----------------------------------------------------------------------------

    def check(self, records: Iterable[ToolRecord], identities: Mapping[str, ServerIdentity] | None = None) -> PinVerdicts:
        """Verdicts for the tools servers list now; pins new tools and records changed ones.

        `identities`: each server's identity by name (a server missing there is filed by its name).
        """
        verdicts: dict[tuple[str, str], PinVerdict] = {}
        identities = identities or {}
        with self._locked():
            state = self._load()
            dirty = False
            for record in records:
                identity = identities.get(record.server) or ServerIdentity(record.server)
                dirty = self._register(state, identity) or dirty
                verdict, changed_state = self._check_one(state["tools"], identity.key, record)
                verdicts[(record.server, record.name)] = verdict
                if changed_state and verdict.blocked:
                    logger.warning("%s", verdict.message)  # once per new candidate, not per listing
                dirty = dirty or changed_state
            if dirty:
                self._save(state)
        return PinVerdicts(verdicts)

    def _register(self, state: dict[str, Any], identity: ServerIdentity) -> bool:
        """File `identity` in the state; it claims the pins of its name from before identities.
        True if the state changed."""
        key, tools, servers = identity.key, state["tools"], state.setdefault("servers", {})
        dirty = False
        if key != identity.name and key not in tools and isinstance(tools.get(identity.name), dict):
            tools[key] = tools.pop(identity.name)
            servers.pop(identity.name, None)
            logger.info("pins of server '%s' from before pins were kept per server identity now belong to %s (%s)",
                        identity.name, key, identity.launch)
            dirty = True
        if key not in servers:
            servers[key] = {"name": identity.name, "launch": identity.launch}
            dirty = True
        return dirty

    def _check_one(self, tools: dict[str, Any], key: str, record: ToolRecord) -> tuple[PinVerdict, bool]:
        entries = tools.setdefault(key, {})
        entry = entries.get(record.name)
        fingerprint, now = record.fingerprint, _now()
        command = self.approve_command(key, record.name)

        def verdict(status: PinStatus, changes: tuple[str, ...] = ()) -> PinVerdict:
            return PinVerdict(record.server, record.name, status, changes, command)

        if isinstance(entry, dict) and _upgraded(entry, record, now):
            logger.info("pin of %s/%s upgraded to the fingerprint that covers title and output schema",
                        key, record.name)
            return verdict(PinStatus.TRUSTED), True
        pinned = entry.get("fingerprint") if isinstance(entry, dict) else None
        if pinned == fingerprint:
            candidate = entry.get("candidate")
            if candidate is not None and self._went_back(key, record.name, candidate):
                entry["candidate"] = None  # its server went back to the approved definition
                return verdict(PinStatus.TRUSTED), True
            # A candidate another gateway recorded stays: this session may just not have seen the change.
            return verdict(PinStatus.TRUSTED), False
        definition = definition_of(record)
        if pinned is None and not self.strict:
            entries[record.name] = {"fingerprint": fingerprint, "fingerprint_version": FINGERPRINT_VERSION,
                                    "definition": definition, "approved_at": now, "approved_by": "first use",
                                    "candidate": None}
            return verdict(PinStatus.NEW), True
        if not isinstance(entry, dict):
            entry = entries[record.name] = {"fingerprint": None, "definition": None, "approved_at": None}
        candidate = entry.get("candidate") or {}
        dirty = candidate.get("fingerprint") != fingerprint
        if dirty:
            entry["candidate"] = {"fingerprint": fingerprint, "fingerprint_version": FINGERPRINT_VERSION,
                                  "definition": definition, "seen_at": now}
        self._listed_candidates.add((key, record.name, fingerprint))
        if pinned is None:
            return verdict(PinStatus.PENDING, ("new tool, never approved",)), dirty
        return verdict(PinStatus.CHANGED, compare(entry.get("definition"), definition).summary), dirty

    def _went_back(self, key: str, name: str, candidate: Mapping[str, Any]) -> bool:
        """Whether listing the approved definition now shows the candidate's server went back to it:
        this process saw that server list the candidate, or the candidate is older than this process
        (so is every session it has). Otherwise another gateway's session may be newer than ours."""
        if (key, name, candidate.get("fingerprint")) in self._listed_candidates:
            return True
        seen_at = candidate.get("seen_at")
        return isinstance(seen_at, str) and seen_at < self._opened_at

    def pending(self, server: str | None = None, names: Iterable[str] | None = None) -> list[PendingChange]:
        """Definitions awaiting approval, optionally only of one server (a name, or an identity
        key for one of several same-named servers) and/or some tool names."""
        wanted = set(names) if names is not None else None
        with self._locked():
            state = self._load()
        servers = state.get("servers", {})
        found = []
        for key, entries in sorted(state["tools"].items()):
            if server is not None and server not in (key, name_of_key(key)):
                continue
            launch = str(servers.get(key, {}).get("launch", ""))
            for name, entry in sorted(entries.items()):
                candidate = entry.get("candidate") if isinstance(entry, dict) else None
                if not candidate or (wanted is not None and name not in wanted):
                    continue
                found.append(PendingChange(name_of_key(key), name, entry.get("definition"), candidate["definition"],
                                           candidate["fingerprint"], candidate.get("seen_at", ""), key, launch))
        return found

    def approve(self, changes: Iterable[PendingChange], approved_by: str = "approve") -> list[PendingChange]:
        """Accept exactly the candidates shown; one that changed again meanwhile is left pending."""
        accepted = []
        with self._locked():
            state = self._load()
            for change in changes:
                entry = state["tools"].get(change.pin_key, {}).get(change.name)
                candidate = entry.get("candidate") if isinstance(entry, dict) else None
                if not candidate or candidate.get("fingerprint") != change.candidate_fingerprint:
                    logger.warning("%s/%s changed again since it was shown; not approved", change.pin_key, change.name)
                    continue
                # A candidate recorded before the upgrade keeps its composition; `check` upgrades it.
                entry.update(fingerprint=candidate["fingerprint"], definition=candidate["definition"],
                             fingerprint_version=candidate.get("fingerprint_version", _LEGACY_FINGERPRINT),
                             approved_at=_now(), approved_by=approved_by, candidate=None)
                accepted.append(change)
            if accepted:
                self._save(state)
        return accepted

    def pinned(self) -> dict[str, list[str]]:
        """Tool names with a pin or a candidate, by server identity key."""
        with self._locked():
            state = self._load()
        return {server: sorted(entries) for server, entries in sorted(state["tools"].items()) if entries}

    def forget(self, keys: Iterable[Key]) -> list[Key]:
        """Drop the pins (and candidates) of these tools; returns those that were there.

        A forgotten tool that is listed again is a new tool: trusted on first use, or pending in
        strict mode. Callers forget only tools their server no longer lists.
        """
        removed = []
        with self._locked():
            state = self._load()
            for key, name in keys:
                entries = state["tools"].get(key, {})
                if entries.pop(name, None) is not None:
                    removed.append((key, name))
                if not entries:
                    state["tools"].pop(key, None)
                    state.get("servers", {}).pop(key, None)
            if removed:
                self._save(state)
        return removed


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
