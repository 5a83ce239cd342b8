"""Loading benchmark folders, and the errors malformed ones produce."""

import json

import pytest

from toolscout.errors import DatasetError
from toolscout.eval import load_dataset, load_queries


def write_jsonl(path, rows):
    path.write_text("".join((row if isinstance(row, str) else json.dumps(row)) + "\n" for row in rows))


TOOLS = [
    {"id": "weather::forecast", "name": "forecast", "server": "weather", "description": "Forecast",
     "input_schema": {"type": "object"}},
    {"id": "weather::alerts", "name": "alerts", "server": "weather", "description": "Alerts",
     "input_schema": {}},
    {"id": "mail::send", "name": "send", "server": "mail", "description": "Send mail",
     "input_schema": {}, "category": "Email"},
]


def dataset_folder(tmp_path, queries, tools=TOOLS):
    write_jsonl(tmp_path / "tools.jsonl", tools)
    write_jsonl(tmp_path / "queries.jsonl", queries)
    return tmp_path


def test_tools_keep_the_dataset_ids_and_queries_keep_their_groups_and_slices(tmp_path):
    folder = dataset_folder(tmp_path, [
        {"id": "q1", "query": "rain tomorrow?", "relevant": ["weather::forecast"],
         "acceptable": ["weather::alerts"], "kind": "single", "level": 2,
         "relevant_groups": [["weather::forecast", "weather::alerts"]]},
        {"id": 7, "query": "storm then email", "relevant": ["weather::alerts", "mail::send"],
         "acceptable": [], "kind": "multi", "group": "G2"},
    ])
    dataset = load_dataset(folder)
    assert [tool.id for tool in dataset.tools] == ["weather::forecast", "weather::alerts", "mail::send"]
    assert dataset.tools[0].server == "weather" and dataset.tools[0].input_schema == {"type": "object"}
    first, second = dataset.queries
    assert first.relevant_groups == (("weather::forecast", "weather::alerts"),)
    assert first.slice_value("level") == "L2"
    assert second.id == "7"
    assert second.relevant_groups == (("weather::alerts",), ("mail::send",))
    assert second.slice_value("group") == "G2" and second.slice_value("level") == "-"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{not json", "queries.jsonl:2: not valid JSON"),
        ("[1, 2]", "queries.jsonl:2: each line must be a JSON object"),
        ('{"id": "q", "query": "x", "acceptable": []}', "queries.jsonl:2: 'relevant' is missing"),
        ('{"id": "q", "query": "x", "relevant": []}', "queries.jsonl:2: 'relevant' is empty"),
        ('{"id": "q", "query": "x", "relevant": ["mail::send"], "kind": "many"}', "'kind' must be one of"),
        ('{"id": "q", "query": "", "relevant": ["mail::send"]}', "queries.jsonl:2: 'query' is missing"),
        ('{"id": "q", "query": "x", "relevant": "mail::send"}', "'relevant' must be a list"),
        ('{"id": "q", "query": "x", "relevant": ["mail::send"], "relevant_groups": [[]]}', "empty group"),
        ('{"id": "q0", "query": "x", "relevant": ["mail::send"]}', "queries.jsonl:2: duplicate query id 'q0'"),
    ],
)
def test_a_malformed_query_line_is_reported_with_its_file_and_line(tmp_path, line, message):
    good = {"id": "q0", "query": "send mail", "relevant": ["mail::send"], "acceptable": []}
    folder = dataset_folder(tmp_path, [good, line])
    with pytest.raises(DatasetError, match=message.replace("[", r"\[").replace("(", r"\(")):
        load_dataset(folder)


def test_a_malformed_tool_line_is_reported_with_its_file_and_line(tmp_path):
    tools = [*TOOLS, {"id": "mail::send", "name": "send", "server": "mail"}]
    folder = dataset_folder(tmp_path, [], tools=tools)
    with pytest.raises(DatasetError, match=r"tools.jsonl:4: duplicate tool id 'mail::send'"):
        load_dataset(folder)
    write_jsonl(tmp_path / "tools.jsonl", [{"id": "x", "name": "x", "server": "s", "input_schema": []}])
    with pytest.raises(DatasetError, match=r"tools.jsonl:1: 'input_schema' must be a JSON object"):
        load_dataset(folder)


def test_a_query_naming_an_unknown_tool_is_rejected(tmp_path):
    folder = dataset_folder(tmp_path, [{"id": "q", "query": "x", "relevant": ["nowhere::tool"]}])
    with pytest.raises(DatasetError, match="query 'q' names tools not in tools.jsonl: nowhere::tool"):
        load_dataset(folder)


def test_a_missing_folder_or_file_says_what_to_pass(tmp_path):
    with pytest.raises(DatasetError, match="not a directory"):
        load_dataset(tmp_path / "absent")
    with pytest.raises(DatasetError, match="queries.jsonl: file not found"):
        load_queries(tmp_path / "queries.jsonl")


def test_blank_lines_are_skipped(tmp_path):
    (tmp_path / "queries.jsonl").write_text(
        '\n{"id": "q", "query": "x", "relevant": ["a", "b"]}\n\n'
    )
    (query,) = load_queries(tmp_path / "queries.jsonl")
    assert query.kind == "multi"
