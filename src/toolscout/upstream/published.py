"""What a serving gateway knows about its upstreams, published for `toolscout tools` to read.

`toolscout tools` connects to every upstream once, on its own: a snapshot. What only a running
gateway knows (an upstream restarted five times, or given up on after repeated failures) lives in
that gateway's memory. So each `toolscout serve` keeps a small JSON file named by its process id
in `<data dir>/gateways/`, rewritten whenever a status changes and removed when it exits;
`toolscout tools` reads the files of the gateways still running over the same registries.

    async with anyio.create_task_group() as tg:
        tg.start_soon(publish_statuses, gateway.statuses, registries, "http")
    ...
    for gateway in running_gateways(registries):
        gateway.upstreams["broken"]["reason"]   # '... (gave up after 6 failed attempts)'

Replicas on other machines cannot be seen through files: with a `ReplicaBoard` (replicas sharing a
Postgres state store) each gateway also keeps its account, with a heartbeat, in the store, and
`running_gateways(..., board=board)` adds the live replicas of other hosts.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from toolscout.errors import StateError
from toolscout.registry.sources import RegistrySource, sources_of
from toolscout.state.replicas import BEAT_INTERVAL, ReplicaBoard
from toolscout.state.files import data_dir, write_private_json
from toolscout.upstream.status import UpstreamStatus

__all__ = [
    "PublishedGateway",
    "gateways_dir",
    "publish_statuses",
    "registry_key",
    "running_gateways",
    "status_file",
]

logger = logging.getLogger(__name__)

# Statuses change in several places (start, crash, restart, give-up); looking once a second costs
# nothing and is soon enough for a person reading `toolscout tools`.
_PUBLISH_INTERVAL = 1.0


def gateways_dir() -> Path:
    return data_dir() / "gateways"


@dataclass(frozen=True)
class PublishedGateway:
    """A running gateway's own account of its upstreams, by name."""

    pid: int
    transport: str
    started_at: float
    upstreams: dict[str, dict[str, Any]]
    # Another machine's replica, seen through the state store; "" for a gateway of this machine.
    host: str = ""


def status_file(directory: Path | None = None) -> Path:
    """This process's status file (which exists only while it serves)."""
    return (directory or gateways_dir()) / f"{os.getpid()}.json"


def registry_key(registries: Sequence[RegistrySource | Path | str]) -> list[str]:
    """The registries a gateway serves, in a form that compares equal however they were named
    (a URL is its own key; a file is keyed by its absolute path)."""
    return sorted(source.key for source in sources_of(registries))


async def publish_statuses(
    statuses: Callable[[], list[UpstreamStatus]],
    registries: Sequence[RegistrySource | Path | str],
    transport: str,
    *,
    directory: Path | None = None,
    board: ReplicaBoard | None = None,
) -> None:
    """Keep this process's status file (and its record on `board`) current until cancelled, then
    remove them.

    Publishing is a courtesy to the person running `toolscout tools`: if the file cannot be
    written, the gateway logs why once and goes on serving; a board that cannot be reached is
    tried again at the next beat.
    """
    path = status_file(directory)
    header = {"pid": os.getpid(), "transport": transport, "started_at": time.time(), "registries": registry_key(registries)}
    written: list[dict[str, Any]] | None = None
    file_ok = True
    beaten: tuple[list[dict[str, Any]], float] | None = None
    try:
        while True:
            current = [_status_row(status) for status in statuses()]
            if file_ok and current != written:
                file_ok = _write(path, {**header, "upstreams": current})
                written = current
            if board is not None and (beaten is None or beaten[0] != current or time.time() - beaten[1] >= BEAT_INTERVAL):
                if await anyio.to_thread.run_sync(_beat, board, {**header, "upstreams": current}):
                    beaten = (current, time.time())
            await anyio.sleep(_PUBLISH_INTERVAL)
    finally:
        path.unlink(missing_ok=True)
        if board is not None:
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(_leave, board)


def _beat(board: ReplicaBoard, entry: dict[str, Any]) -> bool:
    try:
        board.beat(entry)
    except StateError as exc:
        logger.debug("cannot publish upstream statuses to the state store now: %s", exc)
        return False
    return True


def _leave(board: ReplicaBoard) -> None:
    try:
        board.leave()
    except StateError as exc:
        logger.debug("cannot remove this replica from the state store (it expires by itself): %s", exc)


def running_gateways(
    registries: Sequence[RegistrySource | Path | str], *, directory: Path | None = None, board: ReplicaBoard | None = None
) -> list[PublishedGateway]:
    """The gateways running now over exactly these registries, oldest first: this machine's, from
    their status files, and with `board` the replicas of other hosts sharing the state store.

    Files left by gateways that died without cleaning up (killed, machine restarted) are ignored
    and removed; so are the records of replicas that stopped beating. StateError if `board`'s
    store cannot be reached.
    """
    wanted = registry_key(registries)
    found = []
    for path in sorted((directory or gateways_dir()).glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            pid = int(data["pid"])
        except (OSError, ValueError, KeyError, TypeError):
            continue  # being rewritten this instant, or not ours: skip it
        if not _alive(pid):
            path.unlink(missing_ok=True)
            continue
        if data.get("registries") != wanted or pid == os.getpid():
            continue
        found.append(_published(data))
    if board is not None:
        local = {gateway.pid for gateway in found} | {os.getpid()}
        for entry in board.live(wanted):
            host, pid = str(entry.get("host", "?")), int(entry.get("pid", 0))
            # A gateway of this machine is known from its file already; one that died is not shown
            # while its last beat ages (its process is known to be gone).
            if host == board.host and (pid in local or not _alive(pid)):
                continue
            found.append(_published(entry, host))
    return sorted(found, key=lambda gateway: gateway.started_at)


def _published(data: dict[str, Any], host: str = "") -> PublishedGateway:
    upstreams = {row["name"]: row for row in data.get("upstreams", []) if isinstance(row, dict) and "name" in row}
    return PublishedGateway(
        int(data["pid"]), str(data.get("transport", "?")), float(data.get("started_at", 0)), upstreams, str(host)
    )


def _status_row(status: UpstreamStatus) -> dict[str, Any]:
    return {
        "name": status.name,
        "state": status.state.value,
        "reason": status.reason,
        "tool_count": status.tool_count,
        "restarts": status.restarts,
        "gave_up": status.gave_up,
        "last_restart_reason": status.last_restart_reason,
        "next_attempt": status.next_attempt,
    }


def _write(path: Path, data: dict[str, Any]) -> bool:
    """Write the status file; False (logged) if that failed."""
    try:
        write_private_json(path, data)
    except OSError as exc:
        logger.warning("cannot publish upstream statuses to %s (toolscout tools will not show them): %s", path, exc)
        return False
    return True


def _alive(pid: int) -> bool:
    if os.name == "nt":
        return True  # signal 0 means CTRL_C_EVENT there; stale files stay until overwritten
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: alive, and its file is not ours to remove
    except OSError:
        return False
    return True
