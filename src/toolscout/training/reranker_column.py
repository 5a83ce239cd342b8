"""The reranker's column for fitting the learned ranker: the cross-encoder's logits of each training
request's first candidates, computed once and cached.

The engine scores the first N candidates of the signals' weighted RRF (`search.ranker.fused_head`)
before the ranker runs and hands the logits to it as `Candidates.extra["reranker"]`; fitting does
the same over the cached candidate lists of `toolscout.training.ranker_fit.extract`. The logits are
kept per (catalog, request) with the tool ids they belong to, in a file keyed by the embedding
model's and the reranker's digests (the candidates depend on the first, the scores on both), saved
as they come so a stopped run resumes; a deeper N scores only the candidates it adds. No MCP.
"""

from __future__ import annotations

import dataclasses
import logging
import pickle
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np

from toolscout.catalog import ToolRecord
from toolscout.search.ranker import RERANKER, RRF_K, fused_head
from toolscout.search.settings import DEFAULT_WEIGHTS

__all__ = ["ScoreCache", "documents_of", "reranker_seen", "score_heads", "with_reranker_column"]

log = logging.getLogger(__name__)
SAVE_EVERY = 250


class ScoreCache:
    """The reranker's logits of each request's first candidates (in weighted-RRF order), on disk."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.rows: dict[tuple[str, str], tuple[tuple[str, ...], np.ndarray]] = {}
        if path.is_file():
            with path.open("rb") as stream:  # our own cache, written by `save`
                self.rows = pickle.load(stream)

    @classmethod
    def of(cls, folder: Path, model_digest: str, reranker_digest: str, name: str) -> ScoreCache:
        return cls(folder / f"{model_digest[:12]}-{reranker_digest[:12]}" / f"{name}.pkl")

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_name(self.path.name + ".partial")
        with partial.open("wb") as stream:
            pickle.dump(self.rows, stream)
        partial.replace(self.path)


def score_heads(
    logits: Callable[[str, list[str]], np.ndarray],
    examples: Sequence,
    documents: Mapping[str, str],
    cache: ScoreCache,
    depth: int,
    what: str = "requests",
) -> None:
    """Fill `cache` with `logits(request, documents)` of every example's first `depth` candidates
    (`ranker_fit.Example`s); only what the cache lacks is computed. Progress in the log."""
    def wanted(example) -> list[str]:
        return [example.candidates.ids[i] for i in fused_head(example.candidates, DEFAULT_WEIGHTS, RRF_K, depth)]

    todo = [e for e in examples if len(cache.rows.get((e.catalog, e.text), ((),))[0]) < min(depth, len(e.candidates))]
    log.info("%s: %d of %d requests to score at depth %d", what, len(todo), len(examples), depth)
    started = time.perf_counter()
    for done, example in enumerate(todo, start=1):
        key = (example.catalog, example.text)
        ids, known = cache.rows.get(key, ((), np.zeros(0, dtype=np.float32)))
        head = wanted(example)
        if list(ids) != head[: len(ids)]:  # candidates extracted again differ: score them afresh
            ids, known = (), np.zeros(0, dtype=np.float32)
        new = logits(example.text, [documents[t] for t in head[len(ids):]])
        cache.rows[key] = (tuple(head), np.concatenate([known, new]).astype(np.float32))
        if done % SAVE_EVERY == 0 or done == len(todo):
            cache.save()
            rate = done / (time.perf_counter() - started)
            log.info("%s: %d/%d scored (%.1f requests/s, %.0f s left)", what, done, len(todo), rate,
                     (len(todo) - done) / rate)


def with_reranker_column(examples: Sequence, cache: ScoreCache, depth: int) -> list:
    """The examples with the reranker's logits of their first `depth` candidates as the ranker's
    optional column (NaN: not scored)."""
    out = []
    for example in examples:
        ids, logits = cache.rows[(example.catalog, example.text)]
        column = np.full(len(example.candidates), np.nan)
        index = {t: i for i, t in enumerate(example.candidates.ids)}
        for tool_id, value in zip(ids[:depth], logits[:depth]):
            column[index[tool_id]] = value
        candidates = dataclasses.replace(example.candidates, extra={RERANKER: column})
        out.append(dataclasses.replace(example, candidates=candidates))
    return out


def reranker_seen(train: Path) -> set[str]:
    """Requests the bundled reranker was trained on (its plan's defaults: `training.reranker`): on
    those its score is in-sample, better than on a request it never read."""
    from toolscout.training.data import balanced, load_training_folder, split_validation
    from toolscout.training.reranker import RerankerPlan

    plan = RerankerPlan(data=str(train))
    data = load_training_folder(train, plan.sources, english_only=plan.english_only)
    chosen = balanced(data.requests, per_tool=plan.per_tool, tools_per_request=plan.tools_per_request,
                      seed=plan.seed, everyday_per_tool=plan.everyday_per_tool)
    side, _ = split_validation(chosen, fraction=plan.validation_fraction, seed=plan.seed)
    return {request.text for request, _ in side}


def documents_of(tools: Sequence[ToolRecord]) -> dict[str, str]:
    """Each tool's document as the reranker reads it, by id."""
    from toolscout.index.text import dense_document

    return {t.id: dense_document(t) for t in tools}
