"""Ranking metrics against hand-computed cases."""

import math

import pytest

from toolscout.eval import Query, score_query, summarize
from toolscout.eval import metrics


def single(relevant="a", acceptable=()):
    return Query(id="q", text="t", relevant=(relevant,), acceptable=tuple(acceptable))


def multi(*groups, kind="multi"):
    return Query(
        id="q",
        text="t",
        relevant=tuple(group[0] for group in groups),
        acceptable=tuple(tool for group in groups for tool in group[1:]),
        relevant_groups=tuple(tuple(group) for group in groups),
        kind=kind,
    )


def test_recall_counts_an_acceptable_tool_as_a_hit():
    query = single("a", acceptable=["b"])
    assert metrics.recall(["x", "b"], query, 10) == 1.0
    assert metrics.recall(["x", "y"], query, 10) == 0.0


def test_mrr_is_the_reciprocal_rank_of_the_first_relevant_or_acceptable_tool():
    query = single("a", acceptable=["b"])
    assert metrics.mrr(["x", "y", "b", "a"], query, 10) == pytest.approx(1 / 3)
    assert metrics.mrr(["a"], query, 10) == 1.0
    assert metrics.mrr([], query, 10) == 0.0


def test_hits_below_the_cut_off_do_not_count():
    query = multi(["a"], ["b"])
    retrieved = ["x", "a", "y", "b"]
    assert metrics.recall(retrieved, query, 1) == 0.0
    assert metrics.mrr(retrieved, query, 1) == 0.0
    assert metrics.full_recall(retrieved, query, 3) == 0.5
    assert metrics.complete(retrieved, query, 3) == 0.0
    assert metrics.complete(retrieved, query, 4) == 1.0


def test_a_step_is_covered_when_any_member_of_its_group_is_retrieved():
    query = multi(["a", "a2"], ["b", "b2", "b3"], ["c"])
    assert metrics.full_recall(["a2", "b3", "z"], query, 10) == pytest.approx(2 / 3)
    # Two members of one group cover one step, not two.
    assert metrics.full_recall(["b", "b2", "b3"], query, 10) == pytest.approx(1 / 3)
    assert metrics.complete(["c", "b2", "a"], query, 10) == 1.0


def test_ndcg_gains_once_per_step_with_binary_gain():
    query = multi(["a", "a2"], ["b"])
    # Ranks 1 (a) and 3 (b) cover new steps; a2 at rank 2 repeats step 1 and gains nothing.
    dcg = 1 / math.log2(2) + 1 / math.log2(4)
    ideal = 1 / math.log2(2) + 1 / math.log2(3)
    assert metrics.ndcg(["a", "a2", "b"], query, 10) == pytest.approx(dcg / ideal)
    assert metrics.ndcg(["b", "a2"], query, 10) == pytest.approx(1.0)
    assert metrics.ndcg(["x", "y"], query, 10) == 0.0


def test_ndcg_ideal_is_truncated_at_k():
    query = multi(["a"], ["b"], ["c"])
    # With k = 2 at most two steps fit, so covering two of three is perfect.
    assert metrics.ndcg(["c", "a", "b"], query, 2) == pytest.approx(1.0)
    assert metrics.ndcg(["x", "a"], query, 2) == pytest.approx(
        (1 / math.log2(3)) / (1 + 1 / math.log2(3))
    )


def test_without_groups_each_relevant_tool_is_one_step():
    query = Query(id="q", text="t", relevant=("a", "b"), acceptable=("c",), kind="multi")
    assert query.relevant_groups == (("a",), ("b",))
    # An acceptable tool of a multi-tool query without groups counts for Recall and MRR only.
    assert metrics.recall(["c"], query, 10) == 1.0
    assert metrics.mrr(["x", "c"], query, 10) == 0.5
    assert metrics.full_recall(["c", "a"], query, 10) == 0.5


def test_a_single_relevant_tool_shares_its_step_with_the_acceptable_ones():
    query = single("a", acceptable=["b"])
    assert query.relevant_groups == (("a", "b"),)
    assert metrics.full_recall(["b"], query, 10) == 1.0
    assert metrics.ndcg(["x", "b", "a"], query, 10) == pytest.approx(1 / math.log2(3))


def test_multi_recall_averages_full_recall_over_multi_queries_only():
    one, two = multi(["a"], ["b"]), single("a")
    assert metrics.multi_recall([(one, 0.5), (two, 0.0), (one, 1.0)]) == 0.75
    assert metrics.multi_recall([(two, 1.0)]) is None


def test_summary_averages_queries_and_reports_no_multi_recall_without_multi_queries():
    first, second = single("a"), single("b")
    outcomes = [
        score_query(first, ["a", "x"], 10, latency_ms=1.0),
        score_query(second, ["x", "b"], 10, latency_ms=3.0),
    ]
    summary = summarize(outcomes, 10)
    assert summary.recall == 1.0
    assert summary.mrr == 0.75
    assert summary.full_recall == 1.0
    assert summary.multi_recall is None
    assert summary.latency_ms_p50 == 2.0
    assert summary.n_queries == 2
    assert list(summary.as_dict()) == [
        "recall", "mrr", "full_recall", "multi_recall", "complete", "ndcg",
        "latency_ms_p50", "latency_ms_p95", "n_queries", "k",
    ]
