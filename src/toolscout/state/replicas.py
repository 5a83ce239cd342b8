"""Which gateways serve from a shared state store now, and what each knows of its upstreams.

A status file per process (`toolscout.upstream.published`) tells `toolscout tools --running` about
the gateways of one machine. Replicas on other machines are seen through the Postgres they share:
each serving replica keeps one record of kind "replicas" current, with a heartbeat, and removes
it when it stops. A replica that died without removing it (kill -9, a lost machine) stops beating:
its record is ignored once its heartbeat is older than `STALE_AFTER`, and deleted by the next
reader after that.

    board = ReplicaBoard(open_state(url))
    board.beat(entry)                 # every few seconds while serving (entry: a JSON object)
    board.live(registries)            # the live replicas' entries over those registries
    board.leave()
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
from typing import Any

from toolscout.state.location import default_state_location, is_postgres, open_state
from toolscout.state.store import StateStore

__all__ = ["BEAT_INTERVAL", "STALE_AFTER", "ReplicaBoard", "replica_board"]

KIND = "replicas"
# A replica writes its record at least this often (seconds), changed or not ...
BEAT_INTERVAL = 5.0
# ... and is taken for gone once its last beat is this old: three beats missed.
STALE_AFTER = 3 * BEAT_INTERVAL


class ReplicaBoard:
    def __init__(self, state: StateStore, *, clock: Callable[[], float] = time.time) -> None:
        self.state = state
        self._clock = clock
        self.host = socket.gethostname()
        self.key = f"{self.host}:{os.getpid()}"

    def beat(self, entry: dict[str, Any]) -> None:
        """Publish this replica's `entry` (with its host, pid and the time); StateError if unreachable."""
        with self.state.transaction(KIND) as records:
            records.put(self.key, {**entry, "host": self.host, "pid": os.getpid(), "heartbeat": self._clock()})

    def leave(self) -> None:
        with self.state.transaction(KIND) as records:
            records.delete(self.key)

    def live(self, registries: list[str]) -> list[dict[str, Any]]:
        """Entries of the replicas beating now over `registries`, oldest replica first; records of
        replicas gone silent are deleted. StateError if the store is unreachable."""
        now = self._clock()
        found = []
        with self.state.transaction(KIND) as records:
            for key, entry in list(records.items()):
                beat = entry.get("heartbeat") if isinstance(entry, dict) else None
                if not isinstance(beat, (int, float)) or now - beat > STALE_AFTER:
                    records.delete(key)
                elif entry.get("registries") == registries:
                    found.append(entry)
        return sorted(found, key=lambda entry: entry.get("started_at", 0))


def replica_board(location: str | None) -> ReplicaBoard | None:
    """The board of the state store at `location` (None: the default) when replicas may share it
    (Postgres); None for a SQLite file, whose gateways are all on this machine and publish files."""
    where = location or default_state_location()
    return ReplicaBoard(open_state(where)) if is_postgres(where) else None
