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
from before identities, which the first server of that name to list its tools claims as its own.

A candidate stays until a person approves it, or until its own server is seen to go back to the
approved definition: by the process that saw that server list the candidate, or by one started
after the candidate was recorded. Several gateways share one state store (a desktop host's and an
IDE's, or replicas); one whose session is older than the candidate and still lists the approved
definition never drops the candidate another one recorded.

The pins live in the state store (`toolscout.state`: SQLite in the user state directory, or
Postgres shared by replicas), one record of kind "pins" per server identity key, each
read-modify-write one transaction: a running gateway sees approvals made by `toolscout approve`
(or by another replica) on its next check, and a process killed mid-write leaves the previous pins
whole. The store treats keys as opaque strings. How each key's server is launched, shown to the
person approving, is kept beside them in kind "servers" ({"name", "launch"} per key).

The JSON pin file of earlier versions (`pins.json` in the user state directory, or
$TOOLSCOUT_PINS; versions 1 to 3, version 3 filed by identity key with its `servers` map) is
imported into a store that has no pins yet, the first time a PinStore uses it, and renamed
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
import shlex
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import platformdirs

from toolscout.catalog import ToolRecord
from toolscout.errors import PinStateError
from toolscout.json_files import read_json_file
from toolscout.security.changes import compare
from toolscout.security.server_identity import ServerIdentity, name_of_key
from toolscout.security.verdicts import Key, PendingChange, PinStatus, PinVerdict, PinVerdicts
from toolscout.state import StateStore, open_state
from toolscout.state.location import STATE_FILE
from toolscout.state.store import Records

__all__ = [
    "PATH_ENV",
    "PINS_KIND",
    "SERVERS_KIND",
    "PinStore",
    "default_state_path",
    "definition_of",
    "record_from_definition",
]

logger = logging.getLogger(__name__)

# Where the JSON pin file of earlier versions is looked for, to be imported into the state store.
PATH_ENV = "TOOLSCOUT_PINS"
# The state store's kind holding pins: one record per server key, {tool name: entry}.
PINS_KIND = "pins"
# The state store's kind saying how each key's server is launched: {"name": ..., "launch": ...}.
SERVERS_KIND = "servers"
# JSON pin files: version 2 added `fingerprint_version` to each pin and candidate; version 3 filed
# pins by server identity key and kept `servers` (each key's name and launch).
_READABLE_VERSIONS = (1, 2, 3)
# Fingerprint compositions: 1 = catalog.LEGACY_FIELDS, 2 = catalog.DEFINITION_FIELDS.
FINGERPRINT_VERSION = 2
_LEGACY_FINGERPRINT = 1
_RECOVERY = (
    "It records which tool definitions were approved. Repair it, or move it away to start over "
    "(every tool is then trusted again on first use, or pending in strict mode)."
)

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
        # Identity keys whose launch this process has filed in SERVERS_KIND.
        self._registered: set[str] = set()
        # Candidates (key, tool, fingerprint) this process saw their own server list: only those it
        # may drop when the server lists the approved definition again.
        self._listed_candidates: set[tuple[str, str, str]] = set()
        # A candidate recorded before this store was opened, whose server this process sees list the
        # approved definition, is stale too: this process's sessions all began after it was seen.
        self._opened_at = _now()

    @property
    def location(self) -> str:
        return self.state.location

    def revision(self) -> int:
        """Changes whenever pins change, by this process or any other sharing the store."""
        return self.state.revision(PINS_KIND)

    def approve_command(self, key: str, tool: str) -> str:
        """The command a person runs to approve `tool` of the server filed under `key`, exactly:
        the store is named unless it is the per-user one (a host may set TOOLSCOUT_STATE or --state
        for the gateway alone, which the person's shell does not have)."""
        command = f"toolscout approve --server {shlex.quote(key)} {shlex.quote(tool)}"
        if not _is_user_store(self.location):
            command += f" --state {shlex.quote(self.location)}"
        return command

    # -- storage -------------------------------------------------------------------------------

    @contextmanager
    def _tools(self, servers: Iterable[str] | None = None) -> Iterator[dict[str, Any]]:
        """{server: {tool name: entry}} of `servers` (None: all), in one transaction; what the
        block changes in it is written back when it ends."""
        with self.state.transaction(PINS_KIND) as records:
            imported, launches = self._import_legacy_file(records)
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
            self._file_launches(launches)
            # Only once the import is committed: a process killed before leaves the file to import.
            kept = imported.with_name(imported.name + ".imported")
            os.replace(imported, kept)
            logger.info("pins of %s imported into the state store %s; the file is kept as %s",
                        imported, self.state.location, kept)

    def _import_legacy_file(self, records: Records) -> tuple[Path | None, dict[str, Any]]:
        """Copy the JSON pin file into a store without pins; returns the file if it did, and the
        launches of its servers (version 3) to file once the pins are committed."""
        path = self._legacy_file
        if self._legacy_checked or not path.exists() or next(records.items(), None) is not None:
            return None, {}
        tools, launches = _read_legacy_file(path)
        for server, entries in tools.items():
            if entries:
                records.put(server, entries)
        return path, launches

    def _file_launches(self, launches: Mapping[str, Any], dropped: Iterable[str] = ()) -> None:
        """Record how each key's server is launched ({key: {"name", "launch"}}) and drop the
        records of `dropped` keys, in one transaction of SERVERS_KIND."""
        with self.state.transaction(SERVERS_KIND) as servers:
            for key in dropped:
                servers.delete(key)
            for key, server in launches.items():
                if isinstance(server, Mapping) and servers.get(key) != dict(server):
                    servers.put(key, dict(server))

    def _launches(self) -> dict[str, str]:
        """How the server of each key is launched, as a person reads it."""
        with self.state.transaction(SERVERS_KIND) as servers:
            return {key: str(server.get("launch", "")) for key, server in servers.items() if isinstance(server, dict)}

    # -- operations ----------------------------------------------------------------------------

    def check(
        self, records: Iterable[ToolRecord], identities: Mapping[str, ServerIdentity] | None = None
    ) -> PinVerdicts:
        """Verdicts for the tools servers list now; pins new tools and records changed ones.

        `identities`: each server's identity by name (a server missing there is filed by its name).
        """
        verdicts: dict[Key, PinVerdict] = {}
        records = list(records)
        given = identities or {}
        listed = {record.server: given.get(record.server) or ServerIdentity(record.server) for record in records}
        # The bare names too: pins from before identities, for the identity to claim.
        filed = [*(identity.key for identity in listed.values()), *listed]
        with self._tools(filed) as tools:
            for identity in listed.values():
                _claim(tools, identity)
            for record in records:
                verdict, changed_state = self._check_one(tools, listed[record.server].key, record)
                verdicts[(record.server, record.name)] = verdict
                if changed_state and verdict.blocked:
                    logger.warning("%s", verdict.message)  # once per new candidate, not per listing
        unregistered = {i.key: {"name": i.name, "launch": i.launch} for i in listed.values() if i.key not in self._registered}
        if unregistered:
            self._file_launches(unregistered, dropped=[i.name for i in listed.values() if i.key != i.name])
            self._registered.update(unregistered)
        return PinVerdicts(verdicts)

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
        this process saw that server list the candidate, or the candidate is older than this store
        (so is every session this process has). Otherwise another gateway's session may be newer."""
        if (key, name, candidate.get("fingerprint")) in self._listed_candidates:
            return True
        seen_at = candidate.get("seen_at")
        return isinstance(seen_at, str) and seen_at < self._opened_at

    def pending(self, server: str | None = None, names: Iterable[str] | None = None) -> list[PendingChange]:
        """Definitions awaiting approval, optionally only of one server (a name, or an identity
        key for one of several same-named servers) and/or some tool names."""
        wanted = set(names) if names is not None else None
        with self._tools() as tools:
            pass
        launches = self._launches()
        found = []
        for key, entries in sorted(tools.items()):
            if server is not None and server not in (key, name_of_key(key)):
                continue
            for name, entry in sorted(entries.items()):
                candidate = entry.get("candidate") if isinstance(entry, dict) else None
                if not candidate or (wanted is not None and name not in wanted):
                    continue
                found.append(PendingChange(name_of_key(key), name, entry.get("definition"), candidate["definition"],
                                           candidate["fingerprint"], candidate.get("seen_at", ""), key,
                                           launches.get(key, ""), candidate.get("rejected_at", ""),
                                           candidate.get("rejected_by", "")))
        return found

    def approve(self, changes: Iterable[PendingChange], approved_by: str = "approve") -> list[PendingChange]:
        """Accept exactly the candidates shown; one that changed again meanwhile is left pending."""
        accepted = []
        changes = list(changes)
        with self._tools(change.pin_key for change in changes) as tools:
            for change, entry, candidate in _shown_candidates(tools, changes, "approved"):
                # A candidate recorded before the upgrade keeps its composition; `check` upgrades it.
                entry.update(fingerprint=candidate["fingerprint"], definition=candidate["definition"],
                             fingerprint_version=candidate.get("fingerprint_version", _LEGACY_FINGERPRINT),
                             approved_at=_now(), approved_by=approved_by, candidate=None)
                accepted.append(change)
        return accepted

    def reject(self, changes: Iterable[PendingChange], rejected_by: str = "reject") -> list[PendingChange]:
        """Mark exactly the candidates shown as rejected: their tools stay withheld, and every
        reviewer sees the verdict; a server that lists yet another definition makes a new candidate."""
        rejected = []
        changes = list(changes)
        with self._tools(change.pin_key for change in changes) as tools:
            for change, _entry, candidate in _shown_candidates(tools, changes, "rejected"):
                candidate.update(rejected_at=_now(), rejected_by=rejected_by)
                rejected.append(change)
        return rejected

    def pinned(self) -> dict[str, list[str]]:
        """Tool names with a pin or a candidate, by server identity key."""
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
        emptied = [server for server, entries in tools.items() if not entries]
        if removed and emptied:
            self._file_launches({}, dropped=emptied)
            self._registered.difference_update(emptied)
        return removed


def _shown_candidates(
    tools: dict[str, Any], changes: list[PendingChange], verb: str
) -> Iterator[tuple[PendingChange, dict[str, Any], dict[str, Any]]]:
    """(change, pin entry, candidate) of each change whose candidate is still the one shown; one
    that changed again meanwhile is logged and left as it is."""
    for change in changes:
        entry = tools[change.pin_key].get(change.name)
        candidate = entry.get("candidate") if isinstance(entry, dict) else None
        if not candidate or candidate.get("fingerprint") != change.candidate_fingerprint:
            logger.warning("%s/%s changed again since it was shown; not %s", change.pin_key, change.name, verb)
            continue
        yield change, entry, candidate


def _canonical(entries: Any) -> str:
    return json.dumps(entries, sort_keys=True, ensure_ascii=False, default=str)


def _claim(tools: dict[str, Any], identity: ServerIdentity) -> None:
    """`identity` claims the pins filed under its bare name from before identities, unless it has
    pins of its own already."""
    key, name = identity.key, identity.name
    if key != name and not tools.get(key) and tools.get(name):
        tools[key] = tools.pop(name)
        logger.info("pins of server '%s' from before pins were kept per server identity now belong to %s (%s)",
                    name, key, identity.launch)


def _is_user_store(location: str) -> bool:
    """Whether `location` is the per-user state store a person's shell finds without options."""
    user = Path(platformdirs.user_state_dir("toolscout", appauthor=False)) / STATE_FILE
    try:
        return Path(location).expanduser().resolve() == user.resolve()
    except (OSError, ValueError):
        return False


def _read_legacy_file(path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """({key: {tool name: entry}}, {key: {"name", "launch"}}) of a JSON pin file of earlier
    versions; PinStateError if unusable."""
    state = read_json_file(path, "pin state file", error=PinStateError, advice=_RECOVERY)
    version = state.get("version") if isinstance(state, dict) else None
    if isinstance(version, int) and version > max(_READABLE_VERSIONS) and isinstance(state.get("tools"), dict):
        raise PinStateError(
            f"pin state file {path} is version {version}, written by a newer toolscout; "
            "use that version, or move the file away."
        )
    if version not in _READABLE_VERSIONS or not isinstance(state.get("tools"), dict):
        raise PinStateError(
            f"pin state file {path} is not a toolscout pin file (version 1 to 3). "
            "Move it away to start over, or point TOOLSCOUT_PINS at another file."
        )
    tools = {str(server): entries for server, entries in state["tools"].items() if isinstance(entries, dict)}
    servers = state.get("servers")
    launches = {str(key): server for key, server in servers.items() if isinstance(server, dict)} if isinstance(servers, dict) else {}
    return tools, launches


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
