"""Learning from use adds right answers and takes none away: the bundled registry's dev set
searched with the shipped model before and after a handful of learned examples (one short agent
session's worth, written for this check: benchmarks/data/learned/bundled_session.jsonl), and a
request no past request is close to is answered exactly as without them."""

from __future__ import annotations

from pathlib import Path

from toolscout.eval.crossval import load_eval_examples, without_overlap
from toolscout.eval.datasets import Dataset, load_queries
from toolscout.eval.dev_sets import BUNDLED_DIR, load_bundled_tools
from toolscout.eval.runner import build_engine
from toolscout.search.settings import SearchSettings

SESSION = Path(__file__).resolve().parents[1] / "benchmarks" / "data" / "learned" / "bundled_session.jsonl"


def _bundled() -> tuple[Dataset, list]:
    dataset = Dataset(name="bundled", tools=load_bundled_tools(BUNDLED_DIR / "tools.jsonl"),
                      queries=load_queries(BUNDLED_DIR / "queries.jsonl"))
    examples, dropped = without_overlap(load_eval_examples(SESSION), dataset.queries)
    assert dropped == 0 and len(examples) >= 6
    return dataset, examples


def _right_first(settings: SearchSettings, dataset: Dataset, examples) -> list[bool]:
    engine, _ = build_engine(settings, dataset, examples=examples)
    return [
        bool(hits) and hits[0].tool.id in query.answers
        for query in dataset.queries
        for hits in [engine.search(query.text, limit=5).hits]
    ]


def test_learned_examples_take_no_right_first_tool_away(tmp_path: Path) -> None:
    dataset, examples = _bundled()
    settings = SearchSettings(cache_dir=tmp_path / "cache")
    before = _right_first(settings, dataset, ())
    after = _right_first(settings, dataset, examples)
    lost = [q.text for q, b, a in zip(dataset.queries, before, after) if b and not a]
    assert not lost, f"learning took these right first tools away: {lost}"
    assert sum(after) >= sum(before)


def test_a_request_no_past_request_is_close_to_is_answered_as_without_them(tmp_path: Path) -> None:
    # The learned phrases join the keyword documents; a request that only shares a word with one
    # ("show", "table", "time") must not move with them.
    dataset, examples = _bundled()
    settings = SearchSettings(cache_dir=tmp_path / "cache")
    plain, _ = build_engine(settings, dataset)
    learned, _ = build_engine(settings, dataset, examples=examples)
    unrelated = [q.text for q in dataset.queries if not learned.rankings(q.text, depth=5).weight_scale.get("intent")]
    assert len(unrelated) >= len(dataset.queries) // 2
    for text in unrelated:
        before, after = plain.search(text, limit=5), learned.search(text, limit=5)
        assert [(h.tool.id, h.ranks.get("tfidf")) for h in after.hits] == [
            (h.tool.id, h.ranks.get("tfidf")) for h in before.hits], text
        assert after.match == before.match, text
