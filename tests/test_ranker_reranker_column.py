"""Fitting the learned ranker with the reranker's score as a column: the columns it reads, the ranker
file that keeps the depth and the ranker fitted without it, and the cache of the reranker's logits
of each training request's first candidates (scored once; a deeper N only adds). The candidates
come from a real small engine on a deterministic hashing encoder."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
from test_learned_ranker import BY_COSINE, engine_with, ranker

from toolscout.errors import ConfigError
from toolscout.index.text import dense_document
from toolscout.search.ranker import RERANKER, RRF_K, LearnedRanker, feature_columns, fused_head, load_ranker
from toolscout.search.settings import DEFAULT_WEIGHTS

DEPTH = 3
# The reranker's logit alone, steep, with a vote that outweighs every signal; the ranker fitted
# without it orders by the cosine.
BY_RERANKER = dataclasses.replace(ranker({"reranker_logit": 20.0}, weight=100.0), reranker_depth=DEPTH,
                                  without_reranker=BY_COSINE)


def test_ranker_files_keep_the_depth_and_the_ranker_without_it(tmp_path: Path) -> None:
    BY_RERANKER.write(tmp_path / "ranker.json")
    loaded, _ = load_ranker(tmp_path)
    assert loaded is not None and loaded.reads_reranker and loaded.reranker_depth == DEPTH
    assert loaded.without_reranker is not None and loaded.without_reranker.features == BY_COSINE.features
    assert not loaded.without_reranker.reads_reranker
    document = json.loads((tmp_path / "ranker.json").read_text())
    with pytest.raises(ConfigError, match="names no reranker depth"):
        LearnedRanker.from_json({key: value for key, value in document.items() if key != "reranker"})


def test_unscored_candidates_count_as_the_worst_scored_one(tmp_path: Path) -> None:
    engine = engine_with(tmp_path, BY_COSINE)
    candidates = engine.candidates("rain forecast for a city")
    logits = np.full(len(candidates), np.nan)
    logits[:2] = [1.5, -0.5]
    columns = feature_columns(dataclasses.replace(candidates, extra={RERANKER: logits}))
    assert columns["reranker_logit"][:3].tolist() == [1.5, -0.5, -0.5]
    assert columns["reranker_scored"][:3].tolist() == [1.0, 1.0, 0.0]
    assert columns["reranker_first"][:3].tolist() == [1.0, 0.0, 0.0]
    assert columns["reranker_rrf"][:3].tolist() == pytest.approx([1 / (RRF_K + 1), 1 / (RRF_K + 2), 0.0])


def test_fitting_scores_each_request_once_and_a_deeper_n_only_adds(tmp_path: Path) -> None:
    from toolscout.training.ranker_fit import Example, fit, reranker_features
    from toolscout.training.reranker_column import ScoreCache, score_heads, with_reranker_column

    engine = engine_with(tmp_path, BY_COSINE)
    asked = {"rain forecast for a city": "weather__get_forecast", "send an email message to bob": "mail__send_email",
             "read the contents of a file on disk": "files__read_file"}
    examples = []
    for text, answer in asked.items():
        candidates = engine.candidates(text)
        examples.append(Example("test", text, candidates, np.array([t == answer for t in candidates.ids]), True))
    documents = {t.id: dense_document(t) for t in engine.tools}
    pairs: list[int] = []

    def logits(query: str, texts: list[str]) -> np.ndarray:  # deterministic stand-in: plumbing only
        pairs.append(len(texts))
        return np.array([float(len(set(query.split()) & set(text.lower().split()))) for text in texts])

    cache = ScoreCache.of(tmp_path / "scores", "model", "reranker", "train")
    score_heads(logits, examples, documents, cache, 2)
    assert pairs == [2, 2, 2]
    score_heads(logits, examples, documents, ScoreCache(cache.path), 2)  # read back from disk
    assert pairs == [2, 2, 2]
    score_heads(logits, examples, documents, cache, 3)
    assert pairs == [2, 2, 2, 1, 1, 1]
    scored = with_reranker_column(examples, cache, 2)
    for example in scored:
        column = example.candidates.extra[RERANKER]
        head = fused_head(example.candidates, DEFAULT_WEIGHTS, RRF_K, 2)
        assert np.isfinite(column[head]).all() and np.isnan(np.delete(column, head)).all()
    fitted = fit(scored, reranker_features(), l2=1.0)
    assert fitted.reads_reranker and len(fitted.features) == len(reranker_features())
