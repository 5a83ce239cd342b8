import dataclasses
import json
import sqlite3

from toolscout.catalog import ToolRecord
from toolscout.cli import main
from toolscout.learning.expansion import apply_expansions
from toolscout.learning.expansion_cache import ExpansionCache, default_expansions_path
from toolscout.state.files import DATA_DIR_ENV
from toolscout.learning.usage import UsageStore

LOG = ToolRecord(id="git__git_log", name="git_log", server="git", description="Shows the commit logs")
STATUS = ToolRecord(id="git__git_status", name="git_status", server="git", description="Working tree status")


def cache_at(tmp_path) -> ExpansionCache:
    return ExpansionCache(tmp_path / "expansions.sqlite3", clock=lambda: 42.0)


def test_the_cache_lives_in_the_data_directory_unless_told_otherwise(tmp_path, monkeypatch):
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path))
    assert default_expansions_path() == tmp_path / "expansions.sqlite3"


def test_a_stored_expansion_is_found_by_the_tools_fingerprint_with_its_identity(tmp_path):
    with cache_at(tmp_path) as cache:
        cache.put(LOG, ["show history", "Show  History", "what changed"], model="fake-1")
        entry = cache.get(LOG.fingerprint)
        assert entry is not None
        assert (entry.tool_id, entry.name, entry.server, entry.model, entry.created) == (
            "git__git_log", "git_log", "git", "fake-1", 42.0
        )
        assert entry.phrases == ("show history", "what changed")
        assert cache.get(STATUS.fingerprint) is None


def test_missing_lists_only_tools_whose_current_version_was_never_expanded(tmp_path):
    with cache_at(tmp_path) as cache:
        cache.put(LOG, ["show history"])
        assert cache.missing([LOG, STATUS]) == [STATUS]
        changed = dataclasses.replace(LOG, description="Shows the commit logs of a branch")
        assert cache.missing([changed, STATUS]) == [changed, STATUS]


def test_expanding_a_changed_tool_replaces_the_stale_version(tmp_path):
    with cache_at(tmp_path) as cache:
        cache.put(LOG, ["old phrase"])
        changed = dataclasses.replace(LOG, description="Shows the commit logs of a branch")
        cache.put(changed, ["new phrase"])
        assert [entry.phrases for entry in cache.entries()] == [("new phrase",)]
        assert cache.get(LOG.fingerprint) is None


def test_lookup_feeds_apply_expansions(tmp_path):
    with cache_at(tmp_path) as cache:
        cache.put(LOG, ["show history"])
        generated = cache.lookup([LOG, STATUS])
    assert generated == {LOG.fingerprint: ("show history",)}
    log, status = apply_expansions([LOG, STATUS], generated=generated)
    assert (log.expansion, status.expansion) == (("show history",), ())


def test_entries_persist_filter_by_tool_id_and_can_be_forgotten(tmp_path):
    with cache_at(tmp_path) as cache:
        cache.put(LOG, ["a"])
        cache.put(STATUS, ["b"])
    with cache_at(tmp_path) as cache:
        assert [entry.tool_id for entry in cache.entries()] == ["git__git_log", "git__git_status"]
        assert [entry.tool_id for entry in cache.entries(["git__git_status"])] == ["git__git_status"]
        assert cache.forget(["git__git_log"]) == 1
        assert cache.missing([LOG, STATUS]) == [LOG]


def test_the_expansions_command_shows_each_source_of_a_tools_phrases(tmp_path, capsys):
    registry = tmp_path / "servers.json"
    registry.write_text('{"mcpServers": {}}', encoding="utf-8")
    (tmp_path / "servers.overlay.json").write_text(json.dumps(
        {"version": 1, "tools": {"git__*": {"synonyms": ["version control"]}}}
    ), encoding="utf-8")
    examples = tmp_path / "examples.jsonl"
    examples.write_text('{"query": "what changed last week", "tools": ["git__git_log"]}\n', encoding="utf-8")
    state = tmp_path / "state.sqlite3"
    with UsageStore(state) as store:
        store.record("show me the history", "git__git_log", "git")
    with ExpansionCache(state) as cache:
        cache.put(LOG, ["past commits"], model="fake-1")

    argv = ["expansions", "--registry", str(registry), "--examples", str(examples), "--state", str(state)]
    assert main([*argv, "--json"]) == 0
    [row] = json.loads(capsys.readouterr().out)
    assert (row["tool_id"], row["overlay"], row["examples"], row["generated"], row["generated_by"]) == (
        "git__git_log", ["version control"], ["what changed last week", "show me the history"],
        ["past commits"], "fake-1",
    )
    assert main([*argv, "git__git_status"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "git__git_status", "  overlay (1): version control", "  examples (0): -", "  generated (0): -",
    ]


def test_phrases_stored_under_the_fingerprint_of_before_titles_were_covered_are_kept(tmp_path):
    titled = dataclasses.replace(LOG, title="Git log")
    with cache_at(tmp_path) as cache:
        cache.put(LOG, ["show history"])
    # A cache written before fingerprints covered the title: rows keyed by the old composition.
    with sqlite3.connect(tmp_path / "expansions.sqlite3") as db:
        db.execute("UPDATE expansions SET fingerprint = ?", (titled.legacy_fingerprint,))
    with cache_at(tmp_path) as cache:
        assert cache.missing([titled]) == []
        assert cache.lookup([titled]) == {titled.fingerprint: ("show history",)}
        assert cache.get(titled.fingerprint) is not None
