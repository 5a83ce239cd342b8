"""What toolscout learns lives in the state store: learned examples and generated phrases on SQLite
and on a real Postgres (tests/support/postgres.py), shared by every gateway using the store,
imported from the files of earlier versions, and whole after writers are killed with SIGKILL."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import anyio
import pytest
from support.gateway_session import app_config
from support.postgres import PostgresServer
from support.registries import write_registry
from support.wiring import NOTE, SEND, catalog_where, echoed, ids, scripted
from mcp import Client

from toolscout.app import App, PinOptions
from toolscout.catalog import ToolRecord
from toolscout.learning import ExpansionCache, UsageStore
from toolscout.learning.options import LearningOptions
from toolscout.state.files import data_dir
from toolscout.state import open_state
from toolscout.state.store import MIGRATIONS, SCHEMA_VERSION

LOG = ToolRecord(id="git__git_log", name="git_log", server="git", description="Show the commit log.",
                 input_schema={"type": "object"})


class Clock:
    def __init__(self, now: float = 1_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_learned_examples_are_kept_counted_and_seen_by_every_store_on_the_location(location: str) -> None:
    clock = Clock()
    with UsageStore(location, clock=clock) as one, UsageStore(location, max_rows=3, clock=clock) as two:
        before = two.revision()
        one.record("what changed in my repo", "git__git_log", "git")
        assert two.revision() != before
        clock.now += 1
        two.record("What changed in  my repo", "git__git_log", "git")  # the same request: counted
        assert [(e.query, e.tool_id, e.count, e.first_seen, e.last_seen) for e in one.entries()] == [
            ("What changed in my repo", "git__git_log", 2, 1000.0, 1001.0)
        ]
        for query in ("time in tokyo", "weather in oslo", "list my notes"):
            clock.now += 1
            two.record(query, "x__y", "x")
        # Bounded at 3 by the store that wrote last: the least recently used went first.
        assert {e.query for e in one.entries()} == {"time in tokyo", "weather in oslo", "list my notes"}
        one.withdraw("time in tokyo", "x__y")
        assert [e.query for e in two.examples()] == ["list my notes", "weather in oslo"]
        assert one.prune(tool_id="x__y") == 2 and two.entries() == []


def test_generated_phrases_are_shared_by_every_cache_on_the_location(location: str) -> None:
    with ExpansionCache(location, clock=lambda: 5.0) as one, ExpansionCache(location) as two:
        assert two.missing([LOG]) == [LOG]
        one.put(LOG, ["past commits", "history of the repo"], model="fake-1")
        assert two.lookup([LOG]) == {LOG.fingerprint: ("past commits", "history of the repo")}
        assert two.missing([LOG]) == []
        changed = ToolRecord(id=LOG.id, name=LOG.name, server=LOG.server, description="Show the log, newest first.")
        two.put(changed, ["recent commits"])
        # The earlier version's phrases went with it.
        assert [(e.fingerprint, e.phrases) for e in one.entries()] == [(changed.fingerprint, ("recent commits",))]
        assert one.forget([LOG.id]) == 1 and two.entries() == []


def _legacy_files(directory: Path) -> None:
    """The usage and expansions files an earlier toolscout kept in the data directory."""
    directory.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(directory / "usage.sqlite3") as db:
        db.execute(
            "CREATE TABLE usage (query_key TEXT NOT NULL, tool_id TEXT NOT NULL, query TEXT NOT NULL, "
            "server TEXT NOT NULL DEFAULT '', count INTEGER NOT NULL DEFAULT 1, first_seen REAL NOT NULL, "
            "last_seen REAL NOT NULL, PRIMARY KEY (query_key, tool_id))"
        )
        db.execute("INSERT INTO usage VALUES ('show the history', 'git__git_log', 'Show the history', 'git', 3, 10, 20)")
    db.close()
    with sqlite3.connect(directory / "expansions.sqlite3") as db:
        db.execute(
            "CREATE TABLE expansions (fingerprint TEXT PRIMARY KEY, tool_id TEXT NOT NULL, name TEXT NOT NULL, "
            "server TEXT NOT NULL, phrases TEXT NOT NULL, model TEXT NOT NULL DEFAULT '', created REAL NOT NULL)"
        )
        db.execute("INSERT INTO expansions VALUES (?, 'git__git_log', 'git_log', 'git', ?, 'old-model', 7)",
                   (LOG.fingerprint, json.dumps(["past commits"])))
    db.close()


def test_stores_of_an_earlier_version_are_imported_on_first_start_and_never_counted_twice(location: str) -> None:
    _legacy_files(data_dir())
    with UsageStore(location) as usage, ExpansionCache(location) as cache:
        assert [(e.query, e.count) for e in usage.entries()] == [("Show the history", 3)]
        assert cache.lookup([LOG]) == {LOG.fingerprint: ("past commits",)}
    assert sorted(path.name for path in data_dir().iterdir()) == ["expansions.sqlite3.imported", "usage.sqlite3.imported"]
    # An import cut short before the rename runs again: what is already there is kept as it is.
    _legacy_files(data_dir() / "again")
    for name in ("usage.sqlite3", "expansions.sqlite3"):
        (data_dir() / "again" / name).replace(data_dir() / name)
    with UsageStore(location) as usage:
        assert [(e.query, e.count) for e in usage.entries()] == [("Show the history", 3)]


def test_a_store_of_the_previous_schema_is_upgraded_in_place_keeping_its_pins(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite3"
    with sqlite3.connect(path) as db:
        for step in MIGRATIONS[:2]:
            for statement in step:
                db.execute(statement)
        db.execute("INSERT INTO records VALUES ('pins', 'k', '{\"a\": 1}')")
        db.execute("PRAGMA user_version = 2")
    db.close()
    store = open_state(path)
    with store.transaction("pins") as records:
        assert records.get("k") == {"a": 1}
    store.close()
    with UsageStore(path) as usage:
        usage.record("show the history", "git__git_log")
        assert len(usage.entries()) == 1
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    db.close()


@pytest.mark.anyio
async def test_two_gateways_on_one_postgres_learn_from_each_others_use(tmp_path: Path, postgres: PostgresServer) -> None:
    """A search and a successful call on one gateway teach the other, which re-indexes without a restart."""
    entry, _ = scripted(tmp_path, "office", [SEND, NOTE])
    registry = write_registry(tmp_path / "servers.json", {"office": entry})
    url = postgres.database("learning_replicas")
    config = app_config(
        registry, pins=PinOptions(state=url), learning=LearningOptions(record=True, follow_interval=0.2)
    )
    with anyio.fail_after(60):
        async with App(config) as one, App(config) as two:
            await one.gateway.ready(30)
            await two.gateway.ready(30)
            async with Client(one.server, mode="legacy") as client:
                found = ids(await client.call_tool("search_tools", {"query": "send the weekly status report"}))
                assert found[0] == "office__send_report"
                echoed(await client.call_tool("execute_tool", {"name": found[0], "arguments": {"to": "a"}}))
            learned = await catalog_where(two.gateway, lambda c: c.by_id["office__send_report"].expansion)
    assert learned.by_id["office__send_report"].expansion == ("send the weekly status report",)


_LEARNER = """
import sys
from toolscout.learning import UsageStore
store = UsageStore(sys.argv[1], max_rows=1_000_000)
for index in range(int(sys.argv[2]), 1_000_000):
    store.record(f"request number {index}", f"s__tool{index % 7}", "s")
    print(index, flush=True)  # acknowledged: committed before this line is written
"""


def test_no_lost_or_corrupt_learning_after_20_kills_of_a_writer_while_the_cli_reads(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite3"
    acknowledged = -1
    readers: list[subprocess.CompletedProcess[str]] = []
    done = threading.Event()

    def read() -> None:
        # `toolscout examples` reads the same store all along, as a person would.
        while not done.is_set():
            readers.append(subprocess.run(
                [sys.executable, "-m", "toolscout.cli", "examples", "--state", str(path), "--json"],
                capture_output=True, text=True, timeout=120,
            ))

    reader = threading.Thread(target=read)
    reader.start()
    try:
        for kill in range(20):
            writer = subprocess.Popen([sys.executable, "-c", _LEARNER, str(path), str(acknowledged + 1)],
                                      stdout=subprocess.PIPE, text=True)
            assert writer.stdout is not None
            for _ in range(2 + kill % 4):
                line = writer.stdout.readline()
                assert line, "the writer died on its own"
                acknowledged = int(line)
            writer.send_signal(signal.SIGKILL)  # wherever it is: most likely mid-write
            writer.wait(timeout=30)
            rest = writer.stdout.read().split()
            writer.stdout.close()
            acknowledged = int(rest[-1]) if rest else acknowledged
    finally:
        done.set()
        reader.join(timeout=180)
    assert readers and all(run.returncode == 0 and isinstance(json.loads(run.stdout), list) for run in readers)
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
    db.close()
    with UsageStore(path) as usage:
        entries = usage.entries()
    queries = {entry.query for entry in entries}
    # A write committed but not yet acknowledged when its writer died is written again by the next
    # writer: at most one such per kill.
    assert sum(entry.count - 1 for entry in entries) <= 20
    # Every acknowledged observation is there; at most the one in flight beyond it too.
    assert {f"request number {i}" for i in range(acknowledged + 1)} <= queries
    assert len(queries) <= acknowledged + 2
