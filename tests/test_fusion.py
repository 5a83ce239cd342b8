import pytest

from toolscout.search.fusion import weighted_rrf


def test_weighted_rrf_matches_a_hand_worked_example():
    # k=1: x = 1/(1+1) + 2/(1+2) = 1.1667; y = 1/(1+2) + 2/(1+1) = 1.3333; z = 1/(1+3) = 0.25
    fused = weighted_rrf({"a": ["x", "y", "z"], "b": ["y", "x"]}, {"a": 1.0, "b": 2.0}, k=1)
    assert [item for item, _ in fused] == ["y", "x", "z"]
    assert [round(score, 4) for _, score in fused] == [1.3333, 1.1667, 0.25]


def test_signals_with_zero_or_missing_weight_do_not_contribute():
    fused = weighted_rrf({"a": ["x"], "b": ["y"], "c": ["z"]}, {"a": 1.0, "b": 0.0}, k=60)
    assert fused == [("x", 1 / 61)]


def test_equal_scores_keep_the_order_items_were_first_seen_in():
    fused = weighted_rrf({"a": ["x", "y"], "b": ["y", "x"]}, {"a": 1.0, "b": 1.0}, k=60)
    assert [item for item, _ in fused] == ["x", "y"]


def test_no_rankings_fuse_to_nothing_and_negative_k_is_refused():
    assert weighted_rrf({}, {"a": 1.0}, k=60) == []
    with pytest.raises(ValueError, match="k must be"):
        weighted_rrf({"a": ["x"]}, {"a": 1.0}, k=-1)
