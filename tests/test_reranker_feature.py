"""The reranker's score as a column of the learned ranker: the engine scores the first N candidates
of the signals' weighted RRF with the shipped cross-encoder, once per search, before the ranker
runs; with the reranker off, the ranker fitted without the column stands in (or weighted RRF), and
`fusion` says so. The dense signal runs on a deterministic hashing encoder; the cross-encoder is
the real one shipped in the package."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from test_learned_ranker import BY_COSINE, CATALOG
from test_ranker_reranker_column import BY_RERANKER, DEPTH

from toolscout.errors import ConfigError
from toolscout.index.cross_encoder import CrossEncoderScorer, load_cross_encoder
from toolscout.index.model_files import bundled_reranker_dir, resolve_reranker
from toolscout.index.text import dense_document
from toolscout.search import SearchSettings, ToolSearch
from toolscout.search.ranker import RRF_K, LearnedRanker, fused_head
from toolscout.search.settings import DEFAULT_WEIGHTS
from support.fake_encoder import HashingEncoder


def _installed() -> bool:
    try:
        bundled_reranker_dir()
    except ConfigError:
        return False
    return True


pytestmark = pytest.mark.skipif(not _installed(), reason="the toolscout-reranker package is not installed (scripts/setup.sh installs it)")

# BY_RERANKER: the reranker's logit alone, steep, and a vote that outweighs every signal, so its
# order decides the first DEPTH places; the ranker fitted without it (BY_COSINE) orders by the cosine.
REQUEST = "Is it going to rain in Paris tomorrow? Then email the forecast to bob."


def engine_with(tmp_path: Path, learned: LearnedRanker, **settings) -> ToolSearch:
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "ranker.json"
    learned.write(path)
    options = {"fusion": "learned", "reranker": "bundled", "rerank_mode": "feature", **settings}
    engine = ToolSearch(SearchSettings(cache_dir=tmp_path / "cache", ranker_file=path, **options),
                        encoder=HashingEncoder(dimension=4096))
    engine.index(CATALOG)
    engine.complete()
    return engine


@pytest.fixture(scope="module")
def scorer(tmp_path_factory: pytest.TempPathFactory) -> CrossEncoderScorer:
    location = resolve_reranker("bundled")
    return load_cross_encoder(location, work_dir=tmp_path_factory.mktemp("work"))


def test_the_ranker_reads_the_reranker_score_of_the_first_fused_candidates(
    tmp_path: Path, scorer: CrossEncoderScorer
) -> None:
    engine = engine_with(tmp_path, BY_RERANKER)
    query = "is it going to rain tomorrow"
    response = engine.search(query, limit=5)
    assert response.fusion.startswith("learned ranker (ranker.json, 1 features)")
    # The reranker scored the first DEPTH candidates of the signals' weighted RRF, and the ranker's
    # vote put them first in the reranker's order.
    candidates = engine.candidates(query)
    head = [candidates.ids[i] for i in fused_head(candidates, DEFAULT_WEIGHTS, RRF_K, DEPTH)]
    tools = {t.id: t for t in engine.tools}
    expected = scorer.scores(query, [dense_document(tools[t]) for t in head])
    by_reranker = [head[i] for i in np.argsort(-expected, kind="stable")]
    assert [hit.tool.id for hit in response.hits[:DEPTH]] == by_reranker
    # --explain shows its score (after the model's sigmoid) of the tools it scored, and only those.
    shown = {hit.tool.id: hit.rerank_score for hit in response.hits if hit.rerank_score is not None}
    assert shown == pytest.approx(dict(zip(head, map(float, expected))), abs=1e-5)


def test_one_batch_per_search_and_each_sentence_reuses_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    engine = engine_with(tmp_path, BY_RERANKER)
    calls: list[tuple[str, int]] = []
    original = CrossEncoderScorer.logits

    def counted(self: CrossEncoderScorer, query: str, documents) -> np.ndarray:
        calls.append((query, len(documents)))
        return original(self, query, documents)

    monkeypatch.setattr(CrossEncoderScorer, "logits", counted)
    response = engine.search(REQUEST, limit=3)  # two sentences: three fusions, one reranker call
    assert response.fusion.startswith("learned ranker") and response.hits
    assert calls == [(REQUEST, DEPTH)]


def test_with_the_reranker_off_the_ranker_fitted_without_it_stands_in_and_says_so(tmp_path: Path) -> None:
    off = engine_with(tmp_path, BY_RERANKER, reranker="none")
    response = off.search("rain forecast for a city", limit=3)
    assert response.fusion.startswith("learned ranker without the reranker's score (the reranker is off)")
    assert all(hit.rerank_score is None for hit in response.hits)
    assert off._reranker is None
    # It orders as the ranker fitted without the column does on its own.
    plain = engine_with(tmp_path / "plain", BY_COSINE, reranker="none").search("rain forecast for a city", limit=3)
    assert [h.tool.id for h in response.hits] == [h.tool.id for h in plain.hits]
    # Without a ranker stored beside it, weighted RRF decides.
    alone = engine_with(tmp_path / "alone", dataclasses.replace(BY_RERANKER, without_reranker=None), reranker="none")
    assert alone.search("rain", limit=2).fusion == (
        "weighted RRF (the learned ranker reads the reranker's score, and the reranker is off)")
    # The reranker asked to run after fusion instead: the ranker without the column, and the blend.
    blend = engine_with(tmp_path / "blend", BY_RERANKER, rerank_mode="blend").search("rain", limit=3)
    assert "the reranker runs after fusion (blend)" in blend.fusion
    assert any(hit.rerank_score is not None for hit in blend.hits)


def test_a_reranker_that_cannot_load_falls_back_the_same_way(tmp_path: Path) -> None:
    broken = engine_with(tmp_path, BY_RERANKER, reranker=str(tmp_path / "nowhere"))
    response = broken.search("rain forecast for a city", limit=3)
    assert response.fusion.startswith("learned ranker without the reranker's score (the reranker is unavailable")
    assert response.hits


def test_the_reranker_loads_with_the_index_only_for_a_ranker_that_reads_it(tmp_path: Path) -> None:
    reads = engine_with(tmp_path, BY_RERANKER)
    assert reads._reranker is not None and reads._reranker._scorer is not None
    plain = engine_with(tmp_path / "plain", BY_COSINE)
    assert plain._reranker is not None and plain._reranker._scorer is None
    plain.search("rain", limit=2)
    assert plain._reranker._scorer is None
