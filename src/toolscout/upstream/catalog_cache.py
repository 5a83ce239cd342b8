"""The last catalog a gateway saw, kept on disk, so `toolscout search` and `toolscout tools` answer
in about a second instead of starting every upstream again (12-16 s on the bundled registry).

Every gateway that connects to the upstreams (`toolscout serve` while it runs; `search` and `tools`
with `--refresh`, or when nothing is cached yet) writes what it sees after each change: one record
of kind "catalogs" in the state store per set of registries (`toolscout.state`, so replicas sharing
a Postgres share it too), holding each upstream's status and the tools it listed, and when that was
seen; written in one transaction, so a reader never sees half of one. Earlier versions kept a JSON
file per set of registries in `<data dir>/catalogs/`; such a file is read (and moved into the store)
when the store has no record yet. An upstream still starting keeps what was seen of it before.
A file written for other registry contents (a server added, a command or URL changed) is not used.
Tools are kept as listed, before any screen: the reader screens and enriches them as a gateway
does, so it answers as `serve` would. Each upstream's tools are kept as one JSON text rather than
as JSON values of the record: a store orders the keys of the values it keeps (SQLite's rows are
written with sorted keys, Postgres's jsonb sorts them), and the order of a schema's properties is
part of what is indexed (the dense document names the parameters in that order), so a catalog read
back with its keys sorted would rank differently from the one the gateway listed.

    save_catalog(registries, specs, listed, statuses, state=location)     # a gateway, after each change
    seen = load_catalog(registries, specs, state=location)   # None: nothing usable; connect instead
    seen.catalog, seen.statuses, seen.age()
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolscout.catalog import Catalog, ToolRecord
from toolscout.errors import StateError
from toolscout.state.files import data_dir
from toolscout.naming import NameMap
from toolscout.registry.sources import RegistrySource
from toolscout.registry.spec import ServerSpec
from toolscout.state import Records, open_state
from toolscout.upstream.published import registry_key
from toolscout.upstream.status import State, UpstreamStatus

__all__ = ["SeenCatalog", "catalogs_dir", "load_catalog", "save_catalog"]

logger = logging.getLogger(__name__)

# 2: each upstream's tools as one JSON text, key order kept (version 1's came back with keys sorted).
_VERSION = 2


def catalogs_dir() -> Path:
    """Where earlier versions kept cached catalogs (read once, then moved into the state store)."""
    return data_dir() / "catalogs"


@dataclass(frozen=True)
class SeenCatalog:
    """What a gateway last saw of the upstreams of one set of registries."""

    # When the longest-unseen upstream in it was seen (seconds since the epoch).
    seen_at: float
    statuses: tuple[UpstreamStatus, ...]
    # Every listed tool of the upstreams that were up, ids assigned over all of them, unscreened.
    catalog: Catalog

    def age(self, now: float | None = None) -> float:
        return max(0.0, (time.time() if now is None else now) - self.seen_at)


_KIND = "catalogs"


def _key(registries: Sequence[RegistrySource | Path | str]) -> str:
    return hashlib.sha256(json.dumps(registry_key(registries)).encode()).hexdigest()[:16]


def _specs_key(specs: Sequence[ServerSpec]) -> str:
    """Changes when an entry would start another server; holds no secret (only env and header names)."""
    entries = [
        [spec.name, spec.transport, spec.command, list(spec.args), sorted(spec.env), spec.cwd, spec.url,
         sorted(spec.headers), spec.error]
        for spec in sorted(specs, key=lambda spec: spec.name)
    ]
    return hashlib.sha256(json.dumps(entries, default=str).encode()).hexdigest()


def save_catalog(
    registries: Sequence[RegistrySource | Path | str],
    specs: Sequence[ServerSpec],
    listed: Catalog,
    statuses: Sequence[UpstreamStatus],
    *,
    state: str | None = None,
) -> bool:
    """Record what a gateway sees now in the state store at `state` (None: the default); False
    (logged) if it cannot be written.

    An upstream still starting keeps the tools and status seen of it before, if any.
    """
    spec_key = _specs_key(specs)
    try:
        store = open_state(state)
        try:
            with store.transaction(_KIND) as records:
                previous = _read(records, registries, spec_key) or {}
                now = time.time()
                upstreams: dict[str, Any] = {}
                for status in statuses:
                    if status.state is State.STARTING and status.name in previous:
                        upstreams[status.name] = previous[status.name]
                        continue
                    tools = _tools_text([tool for tool in listed.tools if tool.server == status.name])
                    upstreams[status.name] = {"seen_at": now, "status": _status_row(status), "tools": tools}
                records.put(_key(registries), {
                    "version": _VERSION, "registries": registry_key(registries), "specs": spec_key, "upstreams": upstreams,
                })
        finally:
            store.close()
    except StateError as exc:
        logger.warning("cannot keep the catalog for the command line: %s", exc)
        return False
    return True


def load_catalog(
    registries: Sequence[RegistrySource | Path | str], specs: Sequence[ServerSpec], *, state: str | None = None
) -> SeenCatalog | None:
    """The catalog last seen over these registries as they are now; None if there is none (or broken)."""
    try:
        store = open_state(state)
        try:
            with store.transaction(_KIND) as records:
                upstreams = _read(records, registries, _specs_key(specs))
        finally:
            store.close()
    except StateError as exc:
        logger.info("cannot read the cached catalog (%s); connecting instead", exc)
        return None
    if not upstreams:
        return None
    try:
        statuses = tuple(_status(upstreams[spec.name]["status"]) for spec in sorted(specs, key=lambda s: s.name))
        records = [ToolRecord(**{**row, "expansion": ()}) for spec in specs for row in _tool_rows(upstreams[spec.name])]
        seen_at = min(float(upstreams[spec.name]["seen_at"]) for spec in specs)
    except (KeyError, TypeError, ValueError) as exc:
        logger.info("the cached catalog is incomplete or from another version (%s); connecting instead", exc)
        return None
    # Ids as a pool assigns them over these tools, in its order (by server, then as listed).
    ids = NameMap.of((record.server, record.name) for record in records).by_pair
    records.sort(key=lambda record: record.server)
    tools = [dataclasses.replace(record, id=ids[(record.server, record.name)]) for record in records]
    return SeenCatalog(seen_at=seen_at, statuses=statuses, catalog=Catalog.of(tools))


def _read(records: Records, registries: Sequence[RegistrySource | Path | str], spec_key: str) -> dict[str, Any] | None:
    key = _key(registries)
    data = records.get(key)
    if data is None:
        data = _legacy(key)
        if data is not None:
            records.put(key, data)
    if (
        not isinstance(data, dict)
        or data.get("version") != _VERSION
        or data.get("registries") != registry_key(registries)
        or data.get("specs") != spec_key
        or not isinstance(data.get("upstreams"), dict)
    ):
        return None
    return data["upstreams"]


def _legacy(key: str) -> Any:
    """The catalog file an earlier version kept for these registries, moved aside once read; None if none."""
    path = catalogs_dir() / f"{key}.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        path.replace(path.with_name(path.name + ".imported"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        logger.info("cannot read the cached catalog %s of an earlier version (%s)", path, exc)
        return None
    return data


def _tools_text(tools: Sequence[ToolRecord]) -> str:
    """The tools as one JSON text, every mapping in the order the upstream listed it."""
    rows = []
    for tool in tools:
        row = dataclasses.asdict(tool)
        del row["expansion"]  # added by the reader's own enrichment, as a gateway adds it
        rows.append(row)
    return json.dumps(rows, ensure_ascii=False)


def _tool_rows(upstream: dict[str, Any]) -> list[dict[str, Any]]:
    rows = json.loads(upstream["tools"])
    if not isinstance(rows, list) or not all(isinstance(row, dict) for row in rows):
        raise TypeError("the kept tools are not a list of records")
    return rows


def _status_row(status: UpstreamStatus) -> dict[str, Any]:
    return {**dataclasses.asdict(status), "state": status.state.value}


def _status(row: dict[str, Any]) -> UpstreamStatus:
    return UpstreamStatus(**{**row, "state": State(row["state"])})
