"""The command line as a new user meets it, run as a real process: the bundled registry has a name
to add files to, a URL says it is not supported yet, -q/-v work anywhere, search and tools log
warnings only, search --json is the search_tools answer, and the tools table tells served tools
from withheld ones."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from support.registries import failing_server, python_server, write_registry
from support.wiring import NOTE, POISON, SEND, scripted

from toolscout.registry.loading import load_registries
from toolscout.registry.sources import default_registry_path


def toolscout(*args: str) -> subprocess.CompletedProcess[str]:
    # PYTHONPATH and the test's private state folders travel in the environment (see conftest.py).
    return subprocess.run(
        [sys.executable, "-m", "toolscout.cli", *args],
        capture_output=True, text=True, timeout=240, env=os.environ.copy(), check=False,
    )


def test_default_names_the_bundled_registry_so_a_file_adds_to_it(tmp_path: Path) -> None:
    registry = write_registry(tmp_path / "mine.json", {"notes": python_server("notes_server.py")})
    done = toolscout("tools", "--running", "--json", "--registry", "default", "--registry", str(registry))
    assert done.returncode == 0, done.stderr
    bundled = {spec.name for spec in load_registries([default_registry_path()])}
    assert {row["name"] for row in json.loads(done.stdout)} == bundled | {"notes"}


def test_a_registry_url_toolscout_cannot_fetch_is_a_clear_error() -> None:
    done = toolscout("search", "anything", "--registry", "ftp://127.0.0.1/servers.json")
    assert done.returncode == 2
    assert "'ftp://127.0.0.1/servers.json' is a URL toolscout cannot fetch" in done.stderr
    assert "No such file" not in done.stderr and "ftp:/127" not in done.stderr
    # A registry URL that cannot be reached (and was never cached) says so, without a traceback.
    done = toolscout("search", "anything", "--registry", "http://127.0.0.1:9/servers.json")
    assert done.returncode == 2
    assert "registry http://127.0.0.1:9/servers.json: cannot reach it" in done.stderr
    assert "Traceback" not in done.stderr


def test_search_and_tools_log_warnings_only_unless_asked_and_q_v_work_anywhere(tmp_path: Path) -> None:
    registry = str(write_registry(tmp_path / "servers.json", {
        "notes": python_server("notes_server.py"), "broken": failing_server("cannot open the database"),
    }))
    plain = toolscout("search", "delete a note", "--registry", registry, "--model", "none", "--refresh")
    assert plain.returncode == 0, plain.stderr
    assert " INFO " not in plain.stderr and " WARNING " in plain.stderr  # broken is still reported
    assert plain.stdout.startswith(" 1. notes__delete_note")
    verbose = toolscout("search", "delete a note", "--registry", registry, "--model", "none", "--refresh", "-v")
    assert " INFO " in verbose.stderr
    quiet = toolscout("tools", "--registry", registry, "--refresh", "-q")
    assert quiet.returncode == 0 and " WARNING " not in quiet.stderr and " INFO " not in quiet.stderr
    before = toolscout("-v", "tools", "--registry", registry, "--refresh")
    assert " INFO " in before.stderr


def test_search_json_is_the_search_tools_answer_with_weak_match_and_notice(tmp_path: Path) -> None:
    registry = str(write_registry(tmp_path / "servers.json", {
        "paged": python_server("paged_server.py"),
        "weather": python_server("weather_server.py"),
        "notes": python_server("notes_server.py"),
    }))
    # Without tfidf the learned ranker cannot run, and the cosine rule judges the match: the shipped
    # ranker's match model, held to 1% false alarms on every dev set, flags almost nothing
    # (docs/benchmarks.md, "Weak-match notice re-calibrated").
    done = toolscout("search", "order a pizza delivery", "--json", "--registry", registry, "--refresh", "-k", "2",
                     "--weights", "bm25_description=0.5,dense=1")
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert set(answer) == {"tools", "notice", "omitted", "confidence", "weak_match", "servers"}
    assert answer["confidence"] is None  # the ranker it reads cannot run here
    assert answer["weak_match"] is True
    assert answer["notice"].startswith("No connected tool matches this request closely")
    assert sorted(line.split(" (")[0] for line in answer["servers"]) == ["notes", "paged", "weather"]


def test_the_tools_table_counts_withheld_tools_apart_from_served_ones(tmp_path: Path) -> None:
    entry, _ = scripted(tmp_path, "office", [dict(SEND, description=POISON), NOTE])
    registry = str(write_registry(tmp_path / "servers.json", {"office": entry}))
    done = toolscout("tools", "--registry", registry, "--refresh")
    assert done.returncode == 0, done.stderr
    header, row = done.stdout.splitlines()[:2]
    assert header.split()[:4] == ["SERVER", "STATE", "SERVED", "WITHHELD"]
    assert row.split()[:4] == ["office", "up", "1", "1"]
    rows = json.loads(toolscout("tools", "--registry", registry, "--json").stdout)
    assert rows[0]["tool_count"] == 2 and rows[0]["withheld_count"] == 1
