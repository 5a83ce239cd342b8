"""Rescoring the first fused candidates with the cross-encoder (`toolscout.index.cross_encoder`).

Where the learned ranker reads the reranker's score (`SearchSettings.rerank_mode` "feature"), the
engine hands the scorer loaded here to the ranker's column (`toolscout.search.engine`); the modes
below, after fusion, are the other way of using it.

The model is loaded once, on first need: in the worker thread that runs `ToolSearch.complete`,
after the embedding model, or by the first search when nothing completes. `bundled` names the
trained reranker of the optional `toolscout-reranker` package: asking for it when that package is
not installed is a configuration error at once, saying how to install it. Missing or unusable
files of a model found turn the reranker off with one log line, never an error: searches keep the
fused order.

How its scores combine with the fused ranking (`SearchSettings.rerank_mode`) is one function,
`reranked`, which only permutes the candidates among their own places, so tools pinned ahead of them
(exact name matches) and the tools after them do not move, and each place keeps its fused score
(scores stay in descending order; the reranker's own score is reported beside them).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from toolscout.catalog import ToolRecord
from toolscout.index.model_files import DEFAULT_MODEL, bundled_reranker_dir, resolve_reranker
from toolscout.index.text import dense_document
from toolscout.search.rrf import reciprocal_rank

if TYPE_CHECKING:
    from toolscout.index.cross_encoder import CrossEncoderScorer
    from toolscout.search.settings import SearchSettings

__all__ = ["Reranker", "reranked"]

log = logging.getLogger(__name__)


class Reranker:
    """The settings' cross-encoder, loaded lazily and at most once, or off."""

    def __init__(self, settings: SearchSettings) -> None:
        self._settings = settings
        if settings.reranker is not None and settings.reranker.strip() == DEFAULT_MODEL:
            bundled_reranker_dir()  # at once, not in a worker: ConfigError saying how to install it
        self._lock = threading.Lock()
        self._scorer: CrossEncoderScorer | None = None
        # Why the reranker is off, once loading failed (logged once; searches keep the fused order).
        self.error: str | None = None

    def scorer(self, wait: float | None = None) -> CrossEncoderScorer | None:
        """The loaded scorer, loading it first if need be; None when it is off.

        `wait`: give up (None, nothing recorded) after this many seconds of waiting for another
        thread that is loading it.
        """
        if self._scorer is not None or self.error is not None:
            return self._scorer
        if not self._lock.acquire(timeout=-1 if wait is None else wait):
            return None
        try:
            if self._scorer is None and self.error is None:
                self._scorer = self._load()
            return self._scorer
        finally:
            self._lock.release()

    def _load(self) -> CrossEncoderScorer | None:
        from toolscout.index.cross_encoder import load_cross_encoder
        spec = self._settings.reranker
        try:
            location = resolve_reranker(spec)
            assert location is not None, "reranker enabled without a model"
            scorer = load_cross_encoder(location, work_dir=self._settings.resolved_cache_dir)
        except Exception as exc:  # the one seam where reranker loading failures turn it off
            self.error = str(exc) or type(exc).__name__
            log.warning("reranker off, results keep the fused order: %s", self.error)
            return None
        settings = self._settings
        if settings.rerank_mode == "feature":
            log.info("reranker %s scores the first candidates for the learned ranker", spec)
        else:
            log.info("reranker %s rescores the first %d tools (%s)", spec, settings.rerank_depth, settings.rerank_mode)
        return scorer

    def rescored(
        self, tools: Sequence[ToolRecord], text: str, order: list[int], scores: dict[int, float], exact: list[int],
        wait: float | None,
    ) -> tuple[list[int], dict[int, float], dict[int, float]]:
        """After fusion: the first `rerank_depth` tools behind the exact name matches (`exact`), rescored
        when the model is loaded (`wait`: as for `scorer`). Returns the order, the scores and the
        reranker's score of each tool it rescored."""
        scorer = self.scorer(wait)
        if scorer is None:
            return order, scores, {}
        pinned = set(exact)
        head = [p for p in order if p not in pinned][: self._settings.rerank_depth]
        rescored = scorer.scores(text, [dense_document(tools[p]) for p in head])
        candidate_scores = {p: float(score) for p, score in zip(head, rescored)}
        order, scores = reranked(order, scores, candidate_scores, self._settings)
        return order, scores, candidate_scores


def reranked(
    order: Sequence[int],
    scores: Mapping[int, float],
    candidate_scores: Mapping[int, float],
    settings: SearchSettings,
) -> tuple[list[int], dict[int, float]]:
    """`order` with the candidates (the keys of `candidate_scores`, the reranker's score of each)
    re-sorted among their own places, and `scores` with each place keeping its score.

    The candidates' fused rank is their order in `order`. Ties keep the fused order.
    """
    places = [i for i, position in enumerate(order) if position in candidate_scores]
    fused = [order[i] for i in places]
    by_reranker = sorted(fused, key=lambda p: -candidate_scores[p])  # stable: ties in fused order
    if settings.rerank_mode == "reorder":
        resorted = by_reranker
    else:
        k = settings.rrf_k
        reranker_rank = {p: rank for rank, p in enumerate(by_reranker, start=1)}
        blended = {
            p: reciprocal_rank(rank, 1.0, k) + reciprocal_rank(reranker_rank[p], settings.rerank_weight, k)
            for rank, p in enumerate(fused, start=1)
        }
        resorted = sorted(fused, key=lambda p: -blended[p])
    new_order = list(order)
    new_scores = dict(scores)
    for place, old, new in zip(places, fused, resorted):
        new_order[place] = new
        new_scores[new] = scores.get(old, 0.0)
    return new_order, new_scores
