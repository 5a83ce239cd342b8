"""Learning from use adds right answers and takes none away: the bundled registry's dev set
searched with the shipped model before and after a handful of learned examples (one short agent
session's worth, written for this check: benchmarks/data/learned/bundled_session.jsonl)."""

from __future__ import annotations

from pathlib import Path

from toolscout.eval.crossval import load_eval_examples, without_overlap
from toolscout.eval.datasets import Dataset, load_queries
from toolscout.eval.dev_sets import BUNDLED_DIR, load_bundled_tools
from toolscout.eval.runner import build_engine
from toolscout.search.settings import SearchSettings

SESSION = Path(__file__).resolve().parents[1] / "benchmarks" / "data" / "learned" / "bundled_session.jsonl"


def _right_first(settings: SearchSettings, dataset: Dataset, examples) -> list[bool]:
    engine, _ = build_engine(settings, dataset, examples=examples)
    return [
        bool(hits) and hits[0].tool.id in query.answers
        for query in dataset.queries
        for hits in [engine.search(query.text, limit=5).hits]
    ]


def test_learned_examples_take_no_right_first_tool_away(tmp_path: Path) -> None:
    dataset = Dataset(name="bundled", tools=load_bundled_tools(BUNDLED_DIR / "tools.jsonl"),
                      queries=load_queries(BUNDLED_DIR / "queries.jsonl"))
    examples, dropped = without_overlap(load_eval_examples(SESSION), dataset.queries)
    assert dropped == 0 and len(examples) >= 6
    settings = SearchSettings(cache_dir=tmp_path / "cache")
    before = _right_first(settings, dataset, ())
    after = _right_first(settings, dataset, examples)
    lost = [q.text for q, b, a in zip(dataset.queries, before, after) if b and not a]
    assert not lost, f"learning took these right first tools away: {lost}"
    assert sum(after) >= sum(before)
