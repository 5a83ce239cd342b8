import json
import logging

import pytest

from toolscout.errors import DatasetError
from toolscout.eval.crossval import (
    about_other_tools,
    cross_validation_folds,
    load_eval_examples,
    split_folds,
    without_overlap,
)
from toolscout.eval.datasets import Query
from toolscout.learning.examples import Example


def query(number: int, text: str) -> Query:
    return Query(id=str(number), text=text, relevant=(f"tool{number % 3}",))


QUERIES = [query(i, f"request number {i}") for i in range(20)] + [
    query(20, "Book a table!"),
    query(21, "book a  TABLE"),
]


def test_folds_are_disjoint_deterministic_and_keep_copies_of_a_request_together():
    parts = split_folds(QUERIES, 5, seed=3)
    assert sorted(q.id for part in parts for q in part) == sorted(q.id for q in QUERIES)
    assert parts == split_folds(QUERIES, 5, seed=3)
    assert parts != split_folds(QUERIES, 5, seed=4)
    holding = [part for part in parts if any(q.id == "20" for q in part)][0]
    assert any(q.id == "21" for q in holding)


def test_each_fold_learns_from_the_other_folds_only():
    for fold in cross_validation_folds(QUERIES, 4):
        evaluated = {q.text for q in fold.queries}
        assert not evaluated & {example.query for example in fold.examples}
        assert len(fold.queries) + len(fold.examples) == len(QUERIES)


def test_examples_equal_to_an_evaluated_request_are_dropped_and_counted():
    examples = [Example("book a table", ("t",)), Example("order a taxi", ("u",))]
    kept, dropped = without_overlap(examples, [QUERIES[20]])
    assert kept == [examples[1]] and dropped == 1


def test_examples_files_may_use_the_examples_or_the_benchmark_query_format(tmp_path):
    path = tmp_path / "examples.jsonl"
    lines = [{"query": "a", "tools": ["x", "y"]}, {"id": "7", "query": "b", "relevant": ["z"], "kind": "single"}]
    path.write_text("\n".join(map(json.dumps, lines)) + "\n")
    assert load_eval_examples(path) == [Example("a", ("x", "y")), Example("b", ("z",))]
    path.write_text(json.dumps({"query": "c"}) + "\n")
    with pytest.raises(DatasetError, match="examples.jsonl:1.*tools"):
        load_eval_examples(path)


def test_fewer_distinct_requests_than_folds_is_a_clear_error():
    with pytest.raises(DatasetError, match="cannot be split into 30 folds"):
        split_folds(QUERIES, 30)


def test_eval_cross_validates_and_drops_file_examples_equal_to_an_evaluated_request(tmp_path, capsys, caplog):
    from test_eval_command import tiny_dataset

    from toolscout.cli import main

    folder = tiny_dataset(tmp_path)
    examples = tmp_path / "examples.jsonl"
    lines = [{"query": "any severe alerts in my region", "tools": ["weather::get_alerts"]},
             {"query": "is a storm coming", "tools": ["weather::get_alerts"]}]
    examples.write_text("\n".join(map(json.dumps, lines)) + "\n")
    signals = "--signals=bm25_description,bm25_expansion,tfidf"
    with caplog.at_level(logging.INFO, logger="toolscout"):
        assert main(["eval", folder, signals, "--folds", "3", "--examples", str(examples), "--ablation"]) == 0
    out = capsys.readouterr().out
    assert "| lexical fusion |" in out and "lexical fusion per fold" in out
    assert "| fold 3 |" in out and "| all folds |" in out
    # The file's example equal to the request evaluated in one fold is dropped there.
    assert "1 examples from" in caplog.text and "1 dropped" in caplog.text


def test_a_split_by_tool_set_keeps_every_request_with_the_same_tools_in_one_fold():
    for fold in cross_validation_folds(QUERIES, 3, by="tools"):
        evaluated = {frozenset(q.relevant) for q in fold.queries}
        seen = {frozenset(example.tool_ids) for example in fold.examples}
        assert fold.queries and not evaluated & seen


def test_examples_about_other_tools_share_no_tool_with_any_evaluated_request():
    queries = [Query(id=str(i), text=f"request {i}", relevant=tools) for i, tools in
               enumerate([("a",), ("a", "b"), ("b",), ("c",), ("c", "d"), ("d",)])]
    for fold in cross_validation_folds(queries, 3, by="tools"):
        narrowed = about_other_tools(fold)
        used = {tool for q in fold.queries for tool in q.relevant}
        assert all(used.isdisjoint(example.tool_ids) for example in narrowed.examples)
        kept = [e for e in fold.examples if used.isdisjoint(e.tool_ids)]
        assert list(narrowed.examples) == kept
        assert narrowed.dropped == fold.dropped + len(fold.examples) - len(kept)


def test_an_unknown_split_is_a_clear_error():
    with pytest.raises(DatasetError, match="unknown fold split 'topic'"):
        split_folds(QUERIES, 3, by="topic")


def test_a_split_without_folds_is_refused_with_the_fix(tmp_path, capsys):
    from test_eval_command import tiny_dataset

    from toolscout.cli import main

    assert main(["eval", tiny_dataset(tmp_path), "--model", "none", "--split", "tools"]) == 2
    assert "add --folds N" in capsys.readouterr().err
