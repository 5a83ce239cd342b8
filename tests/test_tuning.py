import json

import pytest

from test_eval_command import tiny_dataset
from toolscout.cli import main
from toolscout.eval import metrics
from toolscout.eval.datasets import Query
from toolscout.eval.tuning import coordinate_ascent, record, score
from toolscout.search.fusion import weighted_rrf
from toolscout.search.settings import SearchSettings, apply_weights_option

QUERIES = [
    Query(id="1", text="first", relevant=("a", "b")),
    Query(id="2", text="second", relevant=("c",), acceptable=("d",)),
    Query(id="3", text="third", relevant=("e",)),
]
# What each signal ranked for each query: "good" is right more often, "noisy" ranks answers lower.
RANKINGS = {
    "first": {"good": ["a", "x", "b"], "noisy": ["x", "y", "a"]},
    "second": {"good": ["y", "d"], "noisy": ["c", "x"]},
    "third": {"good": ["e"], "noisy": ["x", "y", "z", "e"]},
}


def replay():
    return record(lambda text, depth: (RANKINGS[text], {}), QUERIES, ["good", "noisy"], depth=4)


@pytest.mark.parametrize("weights, k", [({"good": 1.0, "noisy": 1.0}, 5), ({"good": 2.0, "noisy": 0.5}, 1),
                                        ({"good": 0.0, "noisy": 1.0}, 0)])
def test_replayed_fusion_scores_what_fusing_and_scoring_each_query_gives(weights, k):
    cut = 2
    fused = {q.text: [item for item, _ in weighted_rrf(RANKINGS[q.text], weights, k=k)] for q in QUERIES}
    full_recall = sum(metrics.full_recall(fused[q.text], q, cut) for q in QUERIES) / len(QUERIES)
    mrr = sum(metrics.mrr(fused[q.text], q, cut) for q in QUERIES) / len(QUERIES)
    replayed = score(replay(), weights, k, cut)
    assert replayed.full_recall == pytest.approx(full_recall) and replayed.mrr == pytest.approx(mrr)


def test_coordinate_ascent_finds_at_least_the_better_signal_alone_and_never_scores_worse():
    start = score(replay(), {"good": 1.0, "noisy": 1.0}, 5, 1)
    good_alone = score(replay(), {"good": 1.0}, 5, 1)
    assert good_alone.objective > start.objective
    fit = coordinate_ascent(replay(), {"good": 1.0, "noisy": 1.0}, 5, params=["good", "noisy", "rrf_k"], cut=1)
    assert fit.score.objective >= good_alone.objective


def test_tune_writes_a_weights_file_that_eval_and_the_settings_accept(tmp_path, capsys):
    folder = tiny_dataset(tmp_path)
    out = tmp_path / "weights.json"
    weights = "--weights=bm25_name=1,bm25_description=1,tfidf=1"
    assert main(["tune", folder, weights, "--folds", "3", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "| fold 3 |" in printed and "| all folds |" in printed
    document = json.loads(out.read_text())
    assert set(document["weights"]) <= {"bm25_name", "bm25_description", "tfidf"}
    assert len(document["how"]["held_out"]) == 3
    settings = apply_weights_option(SearchSettings(), str(out))
    assert settings.rrf_k == document["rrf_k"] and settings.weights == document["weights"]
    assert main(["eval", folder, "--weights", str(out), "--json"]) == 0


def test_a_weights_file_that_is_not_one_is_a_clear_error(tmp_path):
    bad = tmp_path / "weights.json"
    bad.write_text(json.dumps({"weights": {"bm42": 1}}))
    with pytest.raises(ValueError, match="weights.json: unknown signal"):
        apply_weights_option(SearchSettings(), str(bad))
    bad.write_text("{")
    with pytest.raises(ValueError, match=r"weights.json is not valid JSON: line 1, column 2: .*toolscout tune"):
        apply_weights_option(SearchSettings(), str(bad))
