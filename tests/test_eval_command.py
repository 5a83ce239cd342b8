"""`toolscout eval` end to end on a tiny benchmark folder, with lexical signals only (no model)."""

import json

from toolscout.cli import main

TOOLS = [
    ("weather", "get_forecast", "Weather forecast for a city for the next days"),
    ("weather", "get_alerts", "Active severe weather alerts for a region"),
    ("mail", "send_email", "Send an email message to a recipient"),
    ("mail", "list_inbox", "List the messages in the inbox"),
    ("files", "read_file", "Read the contents of a file from disk"),
    ("files", "write_file", "Write text to a file on disk"),
]
QUERIES = [
    {"id": "q1", "query": "what is the weather forecast for Paris", "relevant": ["weather::get_forecast"],
     "acceptable": [], "kind": "single", "level": 1},
    {"id": "q2", "query": "send an email with the file contents",
     "relevant": ["files::read_file", "mail::send_email"], "acceptable": [], "kind": "multi", "level": 3},
    {"id": "q3", "query": "any severe alerts in my region", "relevant": ["weather::get_alerts"],
     "acceptable": [], "kind": "single", "level": 1},
]


def tiny_dataset(folder):
    with (folder / "tools.jsonl").open("w") as out:
        for server, name, description in TOOLS:
            out.write(json.dumps({"id": f"{server}::{name}", "name": name, "server": server,
                                  "description": description, "input_schema": {}}) + "\n")
    with (folder / "queries.jsonl").open("w") as out:
        out.writelines(json.dumps(query) + "\n" for query in QUERIES)
    return str(folder)


def lexical_signals():
    # Keyword signals only: the embedding model never loads, so these tests stay fast.
    return "bm25_name,bm25_description,tfidf"


def test_eval_json_prints_exactly_the_documented_keys(tmp_path, capsys):
    folder = tiny_dataset(tmp_path)
    assert main(["eval", folder, "--json", "-k", "3", "--signals", lexical_signals()]) == 0
    scores = json.loads(capsys.readouterr().out)
    assert set(scores) == {
        "recall", "mrr", "full_recall", "multi_recall", "complete", "ndcg",
        "latency_ms_p50", "latency_ms_p95", "n_queries", "k",
    }
    assert scores["n_queries"] == 3 and scores["k"] == 3
    assert scores["recall"] == 1.0
    assert scores["multi_recall"] is not None
    assert 0 <= scores["latency_ms_p50"] <= scores["latency_ms_p95"]


def test_eval_by_level_adds_one_row_per_level(tmp_path, capsys):
    folder = tiny_dataset(tmp_path)
    assert main(["eval", folder, "--by", "level", "--signals", lexical_signals()]) == 0
    out = capsys.readouterr().out
    assert "| system | Recall@10 | MRR@10 |" in out
    assert "| L1 |" in out and "| L3 |" in out


def test_eval_ablation_lists_each_signal_in_one_table(tmp_path, capsys):
    folder = tiny_dataset(tmp_path)
    signals = lexical_signals()
    assert main(["eval", folder, "--ablation", "--signals", signals]) == 0
    out = capsys.readouterr().out
    for name in [*signals.split(","), "lexical fusion"]:
        assert f"| {name} |" in out


def test_eval_report_writes_markdown_and_a_chart(tmp_path, capsys):
    folder = tiny_dataset(tmp_path)
    reports = tmp_path / "reports"
    assert main(["eval", folder, "--signals", lexical_signals(), "--report", str(reports)]) == 0
    (markdown,) = reports.glob("*.md")
    (chart,) = reports.glob("*.png")
    assert "## By level" in markdown.read_text()
    assert chart.read_bytes().startswith(b"\x89PNG")


def test_eval_reports_a_bad_dataset_or_signal_without_a_traceback(tmp_path, capsys):
    assert main(["eval", str(tmp_path / "missing")]) == 2
    assert "not a directory" in capsys.readouterr().err
    folder = tiny_dataset(tmp_path)
    assert main(["eval", folder, "--signals", "telepathy"]) == 2
    assert "unknown signal(s) 'telepathy'" in capsys.readouterr().err
