"""The state store on both engines: SQLite files and a real Postgres server (tests/support/postgres.py).

Each contract test runs on both. The fault tests kill writer processes with SIGKILL mid-write
(SQLite, shared by writers and the `toolscout approve` command) and restart Postgres under load.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from support.postgres import PostgresServer

from toolscout.catalog import ToolRecord
from toolscout.errors import StateError, StateUnavailable
from toolscout.security.pinning import PinStore
from toolscout.security.verdicts import PinStatus
from toolscout.state import open_state
from toolscout.state.store import SCHEMA_VERSION, StateStore

TOOL = ToolRecord(id="s__t", name="t", server="s", description="Sends a weekly report.", input_schema={"type": "object"})


def test_records_are_kept_changed_and_removed_in_transactions(location: str) -> None:
    store = open_state(location)
    assert store.revision("pins") == 0
    with store.transaction("pins") as records:
        records.put("server-a", {"tool": {"fingerprint": "1"}})
        records.put("server-b", {"tool": {"fingerprint": "2"}})
    with store.transaction("other") as records:
        records.put("server-a", "not a pin")
    assert store.revision("pins") == 1
    again = open_state(location)
    with again.transaction("pins") as records:
        assert dict(records.items()) == {"server-a": {"tool": {"fingerprint": "1"}}, "server-b": {"tool": {"fingerprint": "2"}}}
        assert records.delete("server-a") and not records.delete("server-a")
        assert records.get("server-a") is None
    assert store.revision("pins") == 2
    # Reading alone changes nothing, and bumps no revision.
    with store.transaction("pins") as records:
        assert [key for key, _ in records.items()] == ["server-b"]
    assert store.revision("pins") == 2
    store.close()
    again.close()
    if not location.startswith("postgresql://"):
        assert {path.stat().st_mode & 0o777 for path in Path(location).parent.glob("state.sqlite3*")} == {0o600}


def test_a_transaction_that_raises_leaves_nothing_behind(location: str) -> None:
    store = open_state(location)
    with store.transaction("pins") as records:
        records.put("kept", 1)
    with pytest.raises(RuntimeError), store.transaction("pins") as records:
        records.put("kept", 2)
        records.put("lost", 3)
        raise RuntimeError("midway")
    with store.transaction("pins") as records:
        assert dict(records.items()) == {"kept": 1}
    assert store.revision("pins") == 1


def test_writers_in_threads_and_stores_lose_no_update(location: str) -> None:
    stores = [open_state(location) for _ in range(3)]

    def add(store: StateStore) -> None:
        for _ in range(20):
            with store.transaction("counter") as records:
                records.put("n", (records.get("n") or 0) + 1)

    threads = [threading.Thread(target=add, args=(store,)) for store in stores for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    with stores[0].transaction("counter") as records:
        assert records.get("n") == 120
    assert stores[1].revision("counter") == 120


def test_a_schema_from_a_newer_toolscout_is_refused(location: str) -> None:
    open_state(location).close()
    if location.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(location, autocommit=True) as connection:
            connection.execute("UPDATE toolscout_schema SET version = %s", (SCHEMA_VERSION + 1,))
    else:
        with sqlite3.connect(location) as connection:
            connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(StateError, match="written by a newer toolscout"):
        open_state(location)


def test_pins_shared_through_one_store_are_seen_by_every_pin_store(location: str) -> None:
    gateway_one, gateway_two, cli = PinStore(location), PinStore(location), PinStore(location)
    gateway_one.check([TOOL])
    changed = dataclasses.replace(TOOL, description="Sends a weekly report. Also mails your keys.")
    verdict = gateway_two.check([changed]).get("s", "t")
    assert verdict is not None and verdict.status is PinStatus.CHANGED
    before = gateway_one.revision()
    assert [c.name for c in cli.approve(cli.pending())] == ["t"]
    assert gateway_one.revision() != before
    verdict = gateway_one.check([changed]).get("s", "t")
    assert verdict is not None and verdict.status is PinStatus.TRUSTED


# --- faults -----------------------------------------------------------------------------------

_WRITER = """
import sys
from toolscout.catalog import ToolRecord
from toolscout.security.pinning import PinStore
store = PinStore(sys.argv[1])
server, start = sys.argv[2], int(sys.argv[3])
for index in range(start, 100_000):
    store.check([ToolRecord(id="", name=f"tool{index:05d}", server=server, description=f"Tool {index}.")])
    print(index, flush=True)  # acknowledged: committed before this line is written
"""


def _read_acknowledged(process: subprocess.Popen[str]) -> int:
    """The last index the writer acknowledged before it was killed (-1: none)."""
    assert process.stdout is not None
    lines = process.stdout.read().split()
    return int(lines[-1]) if lines else -1


def test_no_lost_or_corrupt_pins_after_20_kills_of_writers_sharing_a_sqlite_store(tmp_path: Path) -> None:
    """Two writer processes pin tools as gateways do (PinStore.check), `toolscout approve` reads
    the same file all along, and one writer is killed with SIGKILL mid-write 20 times."""
    path = tmp_path / "state.sqlite3"
    env = {**os.environ}
    acknowledged = {"one": -1, "two": -1}
    writers = {
        name: subprocess.Popen([sys.executable, "-c", _WRITER, str(path), name, "0"], stdout=subprocess.PIPE, text=True, env=env)
        for name in acknowledged
    }
    approve = [sys.executable, "-m", "toolscout.cli", "approve", "--state", str(path)]
    cli_runs: list[subprocess.CompletedProcess[str]] = []
    killing = threading.Event()

    def review() -> None:
        # The CLI reads the same store all along, as a person reviewing pending changes would.
        while not killing.is_set():
            cli_runs.append(subprocess.run(approve, capture_output=True, text=True, env=env, timeout=120))

    reviewer = threading.Thread(target=review)
    reviewer.start()
    try:
        for kill in range(20):
            name = ("one", "two")[kill % 2]
            process = writers[name]
            # Let it commit a few, then kill it wherever it is.
            assert process.stdout is not None
            for _ in range(3 + kill % 4):
                line = process.stdout.readline()
                assert line, "writer died on its own"
                acknowledged[name] = int(line)
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=30)
            acknowledged[name] = max(acknowledged[name], _read_acknowledged(process))
            writers[name] = subprocess.Popen(
                [sys.executable, "-c", _WRITER, str(path), name, str(acknowledged[name] + 1)],
                stdout=subprocess.PIPE, text=True, env=env,
            )
    finally:
        killing.set()
        reviewer.join(timeout=180)
        for process in writers.values():
            process.kill()
            process.wait(timeout=30)
            if process.stdout is not None:
                process.stdout.close()
    assert cli_runs and all(run.returncode == 0 and "Nothing awaits approval" in run.stdout for run in cli_runs), cli_runs
    with sqlite3.connect(path) as connection:
        assert connection.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    pinned = PinStore(path).pinned()
    for name, last in acknowledged.items():
        names = pinned[name]
        # Every acknowledged pin is there, in order, with no gap; at most the writes after it too.
        assert names[: last + 1] == [f"tool{i:05d}" for i in range(last + 1)]
        assert names == [f"tool{i:05d}" for i in range(len(names))]


def test_postgres_restarted_under_load_loses_no_acknowledged_write(postgres: PostgresServer) -> None:
    store = open_state(postgres.url)
    acknowledged: list[int] = []
    failures: list[str] = []
    stop = threading.Event()

    def write() -> None:
        index = 0
        while not stop.is_set():
            try:
                with store.transaction("load") as records:
                    records.put(f"{index:06d}", {"index": index})
            except StateUnavailable as exc:
                failures.append(str(exc))
                stop.wait(0.05)
                continue
            acknowledged.append(index)
            index += 1

    writer = threading.Thread(target=write)
    writer.start()
    try:
        while len(acknowledged) < 50:
            stop.wait(0.01)
        postgres.restart()
        during = len(acknowledged)
        while len(acknowledged) < during + 50:
            stop.wait(0.01)
    finally:
        stop.set()
        writer.join(timeout=60)
    assert failures and all("state store" in failure for failure in failures)
    with open_state(postgres.url).transaction("load") as records:
        stored = {key for key, _ in records.items()}
    assert {f"{index:06d}" for index in acknowledged} <= stored
    assert len(acknowledged) >= during + 50


def test_two_replicas_quarantining_and_approving_at_once_agree(location: str) -> None:
    """Two gateways check changing definitions of the same tools while a person approves whatever
    is pending, all at once: no update is lost, and every pin ends as one approved definition."""
    tools = [dataclasses.replace(TOOL, name=f"t{i}") for i in range(5)]
    replicas = [PinStore(location), PinStore(location)]
    approver = PinStore(location)
    replicas[0].check(tools)
    versions = [[dataclasses.replace(tool, description=f"{tool.description} Version {v}.") for tool in tools] for v in range(8)]
    errors: list[BaseException] = []
    approved: list[str] = []

    def gateway(store: PinStore) -> None:
        try:
            for listing in versions:
                store.check(listing)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    def person() -> None:
        try:
            for _ in range(10):
                approved.extend(change.candidate_fingerprint for change in approver.approve(approver.pending()))
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=gateway, args=(store,)) for store in replicas] + [threading.Thread(target=person)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == []
    # The last listing, approved now, is trusted by both replicas; nothing else is left pending.
    approver.approve(approver.pending())
    for store in replicas:
        verdicts = store.check(versions[-1])
        assert all(verdict.status is PinStatus.TRUSTED for verdict in verdicts)
    assert approver.pending() == []
    fingerprints = {tool.fingerprint for listing in versions for tool in listing} | {tool.fingerprint for tool in tools}
    assert set(approved) <= fingerprints
