import dataclasses

from toolscout.catalog import ToolRecord
from toolscout.learning.expansion import apply_expansions
from toolscout.learning.expansion_cache import ExpansionCache, default_expansions_path
from toolscout.learning.storage import DATA_DIR_ENV

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
