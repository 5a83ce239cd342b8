import json
from pathlib import Path

import pytest

from toolscout.catalog import ToolRecord
from toolscout.errors import ConfigError
from toolscout.learning.examples import Example
from toolscout.learning.expansion import apply_expansions
from toolscout.learning.overlays import (
    discover_overlays,
    load_overlay,
    parse_overlay,
    unmatched_patterns,
)


def tool(tool_id: str, description: str = "") -> ToolRecord:
    server, name = tool_id.split("__", 1)
    return ToolRecord(id=tool_id, name=name, server=server, description=description)


def write(path: Path, document: object) -> Path:
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def test_an_overlay_adds_phrases_synonyms_and_examples_to_the_tool_it_names(tmp_path):
    overlay = load_overlay(write(tmp_path / "servers.overlay.json", {
        "version": 1,
        "tools": {"git__git_log": {
            "phrases": ["show commit history"],
            "synonyms": ["changelog"],
            "examples": ["what changed last week?"],
        }},
    }))
    [log, status] = apply_expansions([tool("git__git_log"), tool("git__git_status")], overlays=[overlay])
    assert log.expansion == ("show commit history", "changelog", "what changed last week?")
    assert status.expansion == ()


def test_a_glob_key_applies_to_every_matching_tool_id():
    overlay = parse_overlay(
        {"version": 1, "tools": {"sqlite__*": {"synonyms": ["database"]}}}, "inline"
    )
    records = apply_expansions(
        [tool("sqlite__read_query"), tool("sqlite__write_query"), tool("git__git_log")],
        overlays=[overlay],
    )
    assert [record.expansion for record in records] == [("database",), ("database",), ()]


def test_phrases_are_deduplicated_ignoring_case_and_whitespace_and_keep_first_seen_order():
    overlay = parse_overlay({"version": 1, "tools": {
        "git__*": {"phrases": ["Commit  history", "version control"]},
        "git__git_log": {"phrases": ["commit history", "log"], "synonyms": ["VERSION CONTROL"]},
    }}, "inline")
    [record] = apply_expansions([tool("git__git_log")], overlays=[overlay])
    assert record.expansion == ("Commit history", "version control", "log")


def test_expansion_is_bounded_per_tool_with_overlays_winning_over_examples_and_generated():
    overlay = parse_overlay(
        {"version": 1, "tools": {"a__t": {"phrases": [f"overlay {i}" for i in range(3)]}}}, "inline"
    )
    examples = [Example(query=f"example {i}", tool_ids=("a__t",)) for i in range(10)]
    record = tool("a__t")
    generated = {record.fingerprint: [f"generated {i}" for i in range(10)]}
    [expanded] = apply_expansions([record], overlays=[overlay], examples=examples,
                                  generated=generated, limit=8)
    assert expanded.expansion == (
        "overlay 0", "overlay 1", "overlay 2",
        "example 0", "example 1", "example 2", "example 3", "example 4",
    )


def test_generated_phrases_attach_by_fingerprint_so_a_changed_tool_loses_stale_ones():
    old = tool("a__t", "reads a file")
    changed = tool("a__t", "reads and writes a file")
    [expanded] = apply_expansions([changed], generated={old.fingerprint: ["open a document"]})
    assert expanded.expansion == ()
    [expanded] = apply_expansions([old], generated={old.fingerprint: ["open a document"]})
    assert expanded.expansion == ("open a document",)


def test_a_record_that_gains_nothing_is_returned_unchanged():
    record = tool("a__t")
    assert apply_expansions([record])[0] is record


def test_an_invalid_overlay_names_the_file_the_key_and_what_to_fix(tmp_path):
    path = write(tmp_path / "bad.json", {"version": 1, "tools": {"git__git_log": {"phrases": ["ok", 5]}}})
    with pytest.raises(ConfigError) as caught:
        load_overlay(path)
    message = str(caught.value)
    assert str(path) in message
    assert 'tools["git__git_log"]["phrases"][1]' in message
    assert "lists of non-empty strings" in message


def test_an_unknown_field_in_a_tool_entry_is_rejected_with_the_allowed_fields():
    with pytest.raises(ConfigError, match="'phrase' was unexpected.*phrases, synonyms, examples"):
        parse_overlay({"version": 1, "tools": {"a__t": {"phrase": ["x"]}}}, "inline")


def test_a_wrong_version_asks_for_version_1():
    with pytest.raises(ConfigError, match='set "version": 1'):
        parse_overlay({"version": 2, "tools": {}}, "inline")


def test_a_key_that_cannot_be_a_tool_id_or_glob_is_rejected():
    with pytest.raises(ConfigError, match="glob over ids"):
        parse_overlay({"version": 1, "tools": {"git/git log": {"phrases": ["x"]}}}, "inline")


def test_malformed_json_reports_the_line_and_column(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{"version": 1,\n "tools": {,}}', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"broken.json is not valid JSON: line 2, column"):
        load_overlay(path)


def test_an_overlay_file_that_is_not_utf8_is_a_clear_error(tmp_path):
    path = tmp_path / "latin1.overlay.json"
    path.write_bytes(b'{"version": 1, "tools": {"git__log": {"synonyms": ["caf\xe9"]}}}')
    with pytest.raises(ConfigError, match=r"latin1.overlay.json is not UTF-8 text: line 1, column 56"):
        load_overlay(path)


def test_a_missing_overlay_file_is_a_clear_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot read overlay file .*absent.json"):
        load_overlay(tmp_path / "absent.json")


def test_the_overlay_next_to_a_registry_is_discovered_by_name(tmp_path):
    write(tmp_path / "servers.json", {"mcpServers": {}})
    write(tmp_path / "servers.overlay.json", {"version": 1, "tools": {}})
    write(tmp_path / "other.json", {"mcpServers": {}})
    found = discover_overlays([tmp_path / "servers.json", tmp_path / "other.json"])
    assert found == [tmp_path / "servers.overlay.json"]


def test_patterns_matching_no_tool_are_reported_for_a_warning():
    overlay = parse_overlay({"version": 1, "tools": {
        "git__*": {"phrases": ["x"]}, "gti__git_log": {"phrases": ["y"]},
    }}, "servers.overlay.json")
    assert unmatched_patterns([overlay], ["git__git_log"]) == [("servers.overlay.json", "gti__git_log")]
