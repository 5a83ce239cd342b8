"""Runs of a ranker over queries: per-query scoring, slices, sampling, ablation rows."""

from toolscout.eval import Query, by_slice, evaluate, sample_queries
from toolscout.eval.ablation import HYBRID, LEXICAL_FUSION, configurations
from toolscout.search.settings import SearchSettings


def query(qid, relevant, level):
    return Query(id=qid, text=f"find {relevant}", relevant=(relevant,), level=level)


def echo_ranker(text, k):
    # Ranks the tool named in the text first when it is "a" or "b"; never finds "c".
    name = text.split()[-1]
    return [name, "z"][:k] if name in ("a", "b") else ["z"]


def test_evaluate_scores_each_query_and_keeps_answers_and_latency():
    queries = [query("1", "a", 1), query("2", "b", 2), query("3", "c", 2)]
    run = evaluate(echo_ranker, queries, 10, label="echo")
    assert [outcome.retrieved for outcome in run.outcomes] == [("a", "z"), ("b", "z"), ("z",)]
    assert run.summary.recall == 2 / 3
    assert run.summary.n_queries == 3
    assert all(outcome.latency_ms >= 0 for outcome in run.outcomes)


def test_slices_summarise_each_value_of_a_query_field():
    queries = [query("1", "a", 1), query("2", "b", 2), query("3", "c", 2)]
    slices = by_slice(evaluate(echo_ranker, queries, 10), "level")
    assert list(slices) == ["L1", "L2"]
    assert slices["L1"].recall == 1.0 and slices["L2"].recall == 0.5
    assert slices["L2"].n_queries == 2


def test_a_query_sample_is_spread_over_the_whole_file():
    queries = [query(str(i), "a", i // 10) for i in range(40)]
    sample = sample_queries(queries, 4)
    assert [q.id for q in sample] == ["0", "10", "20", "30"]
    assert sample_queries(queries, None) == tuple(queries)


def test_ablation_rows_are_each_signal_then_lexical_fusion_then_hybrid():
    base = SearchSettings()
    rows = configurations(base, ["bm25_name", "tfidf", "dense"])
    assert list(rows) == ["bm25_name", "tfidf", "dense", LEXICAL_FUSION, HYBRID]
    assert dict(rows["tfidf"].weights) == {"tfidf": base.weights["tfidf"]}
    assert rows["tfidf"].model is None and rows["dense"].model == base.model
    assert not rows["tfidf"].exact_name_boost and rows[LEXICAL_FUSION].exact_name_boost
    assert set(rows[LEXICAL_FUSION].weights) == {"bm25_name", "tfidf"}
    assert rows[HYBRID] is base
    assert list(configurations(base, ["bm25_name", "tfidf"])) == ["bm25_name", "tfidf", LEXICAL_FUSION]
