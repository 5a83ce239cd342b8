import io
import json

import pytest

from toolscout.catalog import ToolRecord
from toolscout.cli import main
from toolscout.errors import ConfigError
from toolscout.learning.examples import (
    MAX_EXAMPLES_PER_TOOL,
    Example,
    example_pairs,
    load_examples,
    read_examples,
    write_examples,
)
from toolscout.learning.expansion import apply_expansions
from toolscout.state.files import DATA_DIR_ENV
from toolscout.learning.usage import UsageStore, UsageTracker, default_usage_path


class Clock:
    """A settable clock, so window and age logic is tested without waiting."""

    def __init__(self, now: float = 1_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def store_at(tmp_path, **kwargs) -> UsageStore:
    return UsageStore(tmp_path / "usage.sqlite3", **kwargs)


# --- example files ---------------------------------------------------------------------------

def test_an_examples_file_is_read_as_queries_with_their_tool_ids(tmp_path):
    path = tmp_path / "examples.jsonl"
    path.write_text(
        '{"query": "what time is it in Tokyo", "tools": ["time__get_current_time"]}\n'
        "\n# comments and blank lines are skipped\n"
        '{"query": "  show   the diff ", "tools": ["git__git_diff", "git__git_diff"], "id": "q7"}\n',
        encoding="utf-8",
    )
    assert load_examples(path) == [
        Example("what time is it in Tokyo", ("time__get_current_time",)),
        Example("show the diff", ("git__git_diff",)),
    ]


def test_a_bad_examples_line_is_reported_with_file_line_and_expected_shape():
    with pytest.raises(ConfigError, match=r"ex.jsonl:2: at tools: .*\"tools\": \[\"tool id\""):
        read_examples(['{"query": "a", "tools": ["t"]}', '{"query": "b", "tools": "t"}'], "ex.jsonl")
    with pytest.raises(ConfigError, match=r"ex.jsonl:1: not valid JSON"):
        read_examples(["{query: b}"], "ex.jsonl")


def test_an_examples_file_that_is_not_utf8_is_a_clear_error_not_a_traceback(tmp_path):
    path = tmp_path / "ex.jsonl"
    path.write_bytes('{"query": "caf\u00e9", "tools": ["t"]}\n'.encode("latin-1"))
    with pytest.raises(ConfigError, match=r"ex.jsonl is not UTF-8 text .*save it as UTF-8 JSON Lines"):
        load_examples(path)


def test_examples_round_trip_through_the_file_format():
    examples = [Example("convert a pdf to markdown", ("markitdown__convert",))]
    stream = io.StringIO()
    assert write_examples(examples, stream) == 1
    assert read_examples(stream.getvalue().splitlines(), "memory") == examples


def test_example_pairs_give_one_query_per_tool_for_the_intent_signal():
    pairs = example_pairs([Example("log and diff", ("git__log", "git__diff")), Example("t", ("a__b",))])
    assert pairs == [("log and diff", "git__log"), ("log and diff", "git__diff"), ("t", "a__b")]


def test_examples_attach_to_their_tools_bounded_and_deduplicated():
    record = ToolRecord(id="a__t", name="t", server="a")
    examples = [Example(f"request {i % 40}", ("a__t",)) for i in range(80)]
    examples.append(Example("REQUEST 0", ("a__t", "other__tool")))
    [expanded] = apply_expansions([record], examples=examples)
    assert len(expanded.expansion) == MAX_EXAMPLES_PER_TOOL
    assert expanded.expansion[:2] == ("request 0", "request 1")


# --- the usage store -------------------------------------------------------------------------

def test_the_store_lives_in_the_data_directory_unless_told_otherwise(tmp_path, monkeypatch):
    monkeypatch.setenv(DATA_DIR_ENV, str(tmp_path / "data"))
    assert default_usage_path() == tmp_path / "data" / "usage.sqlite3"


def test_the_same_normalised_query_and_tool_increments_a_count(tmp_path):
    clock = Clock()
    with store_at(tmp_path, clock=clock) as store:
        store.record("Show commit history", "git__git_log", "git")
        clock.now += 10
        store.record("show  commit HISTORY ", "git__git_log", "git")
        clock.now += 10
        store.record("show commit history", "git__git_show", "git")
        [latest, first] = store.entries()
        assert (first.tool_id, first.count, first.first_seen, first.last_seen) == (
            "git__git_log", 2, 1_000.0, 1_010.0
        )
        assert first.query == "show commit HISTORY"  # the latest wording, whitespace collapsed
        assert latest.tool_id == "git__git_show"


def test_examples_group_tools_by_query_most_used_first(tmp_path):
    with store_at(tmp_path) as store:
        store.record("read a table", "sqlite__read_query")
        store.record("read a table", "excel__read_sheet")
        store.record("read a table", "excel__read_sheet")
        store.record("what time is it", "time__now")
        assert store.examples() == [
            Example("read a table", ("excel__read_sheet", "sqlite__read_query")),
            Example("what time is it", ("time__now",)),
        ]


def test_the_store_is_bounded_and_evicts_the_least_recently_used(tmp_path):
    clock = Clock()
    with store_at(tmp_path, max_rows=3, clock=clock) as store:
        for index in range(5):
            clock.now += 1
            store.record(f"query {index}", "a__t")
        clock.now += 1
        store.record("query 2", "a__t")  # used again: now the most recent
        assert [entry.query for entry in store.entries()] == ["query 2", "query 4", "query 3"]


def test_prune_deletes_by_age_or_tool_and_clear_deletes_everything(tmp_path):
    clock = Clock()
    with store_at(tmp_path, clock=clock) as store:
        store.record("old", "a__t")
        clock.now += 100
        store.record("new", "a__t")
        store.record("other", "b__t")
        assert store.prune(older_than=1_050.0) == 1
        assert store.prune(tool_id="b__t") == 1
        assert [entry.query for entry in store.entries()] == ["new"]
        with pytest.raises(ValueError):
            store.prune()
        assert store.clear() == 1
        assert store.examples() == []


def test_the_store_persists_across_reopening(tmp_path):
    with store_at(tmp_path) as store:
        store.record("list my files", "fs__list")
    with store_at(tmp_path) as store:
        assert store.examples() == [Example("list my files", ("fs__list",))]


def test_an_unusable_store_path_is_a_clear_error(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    with pytest.raises(ConfigError, match="cannot create the state store"):
        UsageStore(blocker / "usage.sqlite3")


# --- the tracker -----------------------------------------------------------------------------

def tracker_at(tmp_path, clock, **kwargs) -> UsageTracker:
    return UsageTracker(store_at(tmp_path), clock=clock, **kwargs)


def test_executing_a_tool_the_last_search_returned_records_the_query(tmp_path):
    clock = Clock()
    tracker = tracker_at(tmp_path, clock)
    tracker.on_search("s1", "what changed in the repo", ["git__git_log", "git__git_diff"])
    clock.now += 30
    assert tracker.on_execute_success("s1", "git__git_log", "git")
    assert tracker.store.examples() == [Example("what changed in the repo", ("git__git_log",))]
    assert tracker.store.entries()[0].server == "git"


def test_nothing_is_recorded_outside_the_window_in_another_session_or_for_unreturned_tools(tmp_path):
    clock = Clock()
    tracker = tracker_at(tmp_path, clock, window_s=300)
    tracker.on_search("s1", "what changed", ["git__git_log"])
    assert not tracker.on_execute_success("s2", "git__git_log")
    assert not tracker.on_execute_success("s1", "git__git_status")
    clock.now += 301
    assert not tracker.on_execute_success("s1", "git__git_log")
    assert tracker.store.entries() == []


def test_repeated_executions_after_one_search_count_once(tmp_path):
    clock = Clock()
    tracker = tracker_at(tmp_path, clock)
    tracker.on_search("s", "current time", ["time__now"])
    assert tracker.on_execute_success("s", "time__now")
    assert not tracker.on_execute_success("s", "time__now")
    tracker.on_search("s", "current time", ["time__now"])
    assert tracker.on_execute_success("s", "time__now")
    assert tracker.store.entries()[0].count == 2


def test_the_most_recent_search_that_returned_the_tool_gets_the_credit(tmp_path):
    clock = Clock()
    tracker = tracker_at(tmp_path, clock)
    tracker.on_search("s", "first wording", ["a__t"])
    tracker.on_search("s", "unrelated", ["b__t"])
    tracker.on_search("s", "second wording", ["a__t", "c__t"])
    tracker.on_execute_success("s", "a__t")
    assert [entry.query for entry in tracker.store.entries()] == ["second wording"]


def test_a_disabled_tracker_records_nothing(tmp_path):
    clock = Clock()
    tracker = tracker_at(tmp_path, clock, enabled=False)
    tracker.on_search("s", "what changed", ["git__git_log"])
    assert not tracker.on_execute_success("s", "git__git_log")
    assert tracker.store.entries() == []
    assert not UsageTracker(None).enabled


def test_searching_for_the_exact_tool_id_teaches_nothing(tmp_path):
    tracker = tracker_at(tmp_path, Clock())
    tracker.on_search("s", "git__git_log", ["git__git_log"])
    assert not tracker.on_execute_success("s", "git__git_log")


def test_exported_usage_is_a_valid_examples_file(tmp_path):
    with store_at(tmp_path) as store:
        store.record("make a chart", "excel__chart")
        stream = io.StringIO()
        write_examples(store.examples(), stream)
    assert [json.loads(line) for line in stream.getvalue().splitlines()] == [
        {"query": "make a chart", "tools": ["excel__chart"]}
    ]


# --- the `toolscout examples` command --------------------------------------------------------

def test_the_examples_command_lists_exports_and_prunes_learned_examples(tmp_path, capsys):
    path = tmp_path / "state.sqlite3"
    with UsageStore(path) as store:
        store.record("what changed in my repo", "git__git_log", "git")
        store.record("time in tokyo", "time__now", "time")
    assert main(["examples", "--state", str(path), "--json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert {(entry["query"], entry["tool_id"]) for entry in listed} == {
        ("what changed in my repo", "git__git_log"), ("time in tokyo", "time__now"),
    }
    assert main(["examples", "export", "--state", str(path), "--tool", "time__now"]) == 0
    assert capsys.readouterr().out == '{"query": "time in tokyo", "tools": ["time__now"]}\n'
    assert main(["examples", "prune", "--state", str(path), "--tool", "git__git_log"]) == 0
    assert "removed 1" in capsys.readouterr().out
    assert main(["examples", "clear", "--state", str(path)]) == 0
    assert main(["examples", "--state", str(path)]) == 0
    assert "no learned examples" in capsys.readouterr().out


def test_pruning_without_a_filter_is_refused_with_what_to_do(tmp_path, capsys):
    assert main(["examples", "prune", "--state", str(tmp_path / "state.sqlite3")]) == 2
    assert "use 'clear' to delete all" in capsys.readouterr().err
