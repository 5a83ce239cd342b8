"""read_json_file: every way a hand-edited JSON file fails becomes one clear error of the caller's type."""

from __future__ import annotations

from pathlib import Path

import pytest

from toolscout.errors import ConfigError
from toolscout.json_files import read_json_file


class StateError(ConfigError):
    pass


def test_a_valid_file_is_parsed(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    path.write_text('{"tools": {"x": [1, 2]}, "name": "café"}', encoding="utf-8")
    assert read_json_file(path, "state file") == {"tools": {"x": [1, 2]}, "name": "café"}


def test_bad_syntax_reports_the_kind_path_line_column_and_advice(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    path.write_text('{\n  "a": 1,\n  "b": ,\n}', encoding="utf-8")
    with pytest.raises(StateError) as caught:
        read_json_file(path, "state file", error=StateError, advice="Repair it.")
    assert str(caught.value) == f"state file {path} is not valid JSON: line 3, column 8: Expecting value. Repair it."


def test_a_missing_file_is_an_error_naming_it_unless_a_default_is_given(tmp_path: Path) -> None:
    path = tmp_path / "absent.json"
    with pytest.raises(ConfigError, match=rf"^cannot read state file {path}: No such file or directory\. Pass --state\.$"):
        read_json_file(path, "state file", advice="Pass --state.")
    assert read_json_file(path, "state file", if_missing={"tools": {}}) == {"tools": {}}


def test_a_directory_is_unreadable_even_with_a_default(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=rf"^cannot read state file {tmp_path}: "):
        read_json_file(tmp_path, "state file", if_missing={})


def test_a_file_that_is_not_utf8_reports_where_the_bad_byte_is(tmp_path: Path) -> None:
    path = tmp_path / "latin1.json"
    # "é" in UTF-8 on line 1 (fine), then "café" saved as Latin-1 on line 2.
    path.write_bytes(b'{"a": "\xc3\xa9",\n "b": "caf\xe9"}')
    with pytest.raises(ValueError) as caught:
        read_json_file(path, "weights file", error=ValueError)
    assert str(caught.value) == f"weights file {path} is not UTF-8 text: line 2, column 11: invalid continuation byte"


def test_a_byte_order_mark_is_accepted(tmp_path: Path) -> None:
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + b'{"a": 1}')
    assert read_json_file(path, "state file") == {"a": 1}


def test_the_same_key_twice_in_one_object_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "dup.json"
    path.write_text('{"servers": {"git": {}, "git": {"x": 1}}}', encoding="utf-8")
    with pytest.raises(ConfigError, match=r"state file .*dup\.json: key 'git' appears twice in one object"):
        read_json_file(path, "state file")


def test_nesting_too_deep_to_parse_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    with pytest.raises(ConfigError, match="is nested too deeply to read"):
        read_json_file(path, "state file")
