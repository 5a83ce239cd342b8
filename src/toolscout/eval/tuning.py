"""Fitting the fusion weights and RRF k on training queries, by coordinate ascent over a grid.

Searching again for every candidate weight vector would cost a full evaluation each. Fusion only
reads ranks, so each signal's candidate ranking of every query is recorded once (`record`), and a
weight vector is scored by replaying weighted RRF over those ranks with numpy (`score`): the whole
grid costs seconds. The exact-name fast path is not replayed (it reorders only queries naming a
tool, and no signal weight changes it). Per-query factors on a signal's weight (the learned signals'
intent confidence) are recorded too and applied in the replay.

Coordinate ascent: starting from the given weights, try every grid value of one parameter (a
signal's weight, or k) with the others fixed, keep the best, move to the next parameter; repeat
until a whole round improves nothing. The objective is Full Recall@k + MRR@k over the queries.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from toolscout.eval.datasets import Query
from toolscout.search.rrf import reciprocal_rank

if TYPE_CHECKING:
    from toolscout.search import ToolSearch

__all__ = [
    "K_GRID",
    "RRF_K",
    "WEIGHT_GRID",
    "Fit",
    "Rankings",
    "Replay",
    "Score",
    "coordinate_ascent",
    "engine_rankings",
    "fused_scores",
    "mean_score",
    "record",
    "score",
]

WEIGHT_GRID = (0.0, 0.25, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0)
K_GRID = (0, 1, 2, 3, 5, 10, 20, 60)
RRF_K = "rrf_k"  # the name of k among the tuned parameters
_MAX_STEPS = 63  # steps a query's bitmask holds


@dataclass(frozen=True)
class Replay:
    """Each signal's ranks of each query's candidates, with what each candidate is worth."""

    signals: tuple[str, ...]
    ranks: np.ndarray  # [queries, signals, candidates] float32: 1-based rank, inf if not ranked
    steps: np.ndarray  # [queries, candidates] int64: bit i set when the candidate covers step i
    answers: np.ndarray  # [queries, candidates] bool: relevant or acceptable
    step_counts: np.ndarray  # [queries]
    scales: np.ndarray  # [queries, signals] float32: factor on each signal's weight for the query

    def __len__(self) -> int:
        return len(self.ranks)

    def subset(self, rows: Sequence[int] | np.ndarray) -> Replay:
        rows = np.asarray(rows, dtype=np.int64)
        return Replay(self.signals, self.ranks[rows], self.steps[rows], self.answers[rows], self.step_counts[rows],
                      self.scales[rows])

    @staticmethod
    def concat(parts: Sequence[Replay]) -> Replay:
        width = max(part.ranks.shape[2] for part in parts)

        def pad(array: np.ndarray, value: object) -> np.ndarray:
            extra = [(0, 0)] * (array.ndim - 1) + [(0, width - array.shape[-1])]
            return np.pad(array, extra, constant_values=value)

        return Replay(
            parts[0].signals,
            np.concatenate([pad(p.ranks, np.inf) for p in parts]),
            np.concatenate([pad(p.steps, 0) for p in parts]),
            np.concatenate([pad(p.answers, False) for p in parts]),
            np.concatenate([p.step_counts for p in parts]),
            np.concatenate([p.scales for p in parts]),
        )


# (query text, depth) -> ({signal: ranked tool ids, best first}, {signal: factor on its weight})
Rankings = Callable[[str, int], tuple[Mapping[str, Sequence[str]], Mapping[str, float]]]


def engine_rankings(engine: ToolSearch) -> Rankings:
    """`engine`'s per-signal rankings (tool ids) and weight factors, in the form `record` asks for."""

    def rankings(text: str, depth: int) -> tuple[dict[str, list[str]], Mapping[str, float]]:
        ranked = engine.rankings(text, depth=depth)
        return {name: [t.id for t in tools] for name, tools in ranked.rankings.items()}, ranked.weight_scale

    return rankings


def record(
    rankings: Rankings,
    queries: Sequence[Query],
    signals: Sequence[str],
    depth: int,
    progress: Callable[[int, int], None] | None = None,
) -> Replay:
    """Ask for every query's per-signal rankings once (the expensive part of tuning)."""
    rows: list[tuple[list[str], np.ndarray]] = []
    scales = np.ones((len(queries), len(signals)), dtype=np.float32)
    for done, query in enumerate(queries, start=1):
        ranked, scale = rankings(query.text, depth)
        scales[done - 1] = [scale.get(name, 1.0) for name in signals]
        # Candidates in the order fusion first sees them, so ties break as in the engine.
        candidates = list(dict.fromkeys(t for name in signals for t in ranked.get(name, ())))
        column = {tool_id: c for c, tool_id in enumerate(candidates)}
        ranks = np.full((len(signals), len(candidates)), np.inf, dtype=np.float32)
        for s, name in enumerate(signals):
            for rank, tool_id in enumerate(ranked.get(name, ()), start=1):
                ranks[s, column[tool_id]] = rank
        rows.append((candidates, ranks))
        if progress is not None:
            progress(done, len(queries))
    width = max([len(candidates) for candidates, _ in rows] + [1])
    ranks = np.full((len(queries), len(signals), width), np.inf, dtype=np.float32)
    steps = np.zeros((len(queries), width), dtype=np.int64)
    answers = np.zeros((len(queries), width), dtype=bool)
    for q, (query, (candidates, query_ranks)) in enumerate(zip(queries, rows)):
        ranks[q, :, : len(candidates)] = query_ranks
        groups = query.relevant_groups[:_MAX_STEPS]
        for c, tool_id in enumerate(candidates):
            steps[q, c] = sum(1 << g for g, group in enumerate(groups) if tool_id in group)
            answers[q, c] = tool_id in query.answers
    counts = np.array([min(len(q.relevant_groups), _MAX_STEPS) for q in queries], dtype=np.float64)
    return Replay(tuple(signals), ranks, steps, answers, counts, scales)


@dataclass(frozen=True)
class Score:
    full_recall: float
    mrr: float

    @property
    def objective(self) -> float:
        return self.full_recall + self.mrr


def fused_scores(replay: Replay, weights: Mapping[str, float], rrf_k: float) -> np.ndarray:
    """[queries, candidates]: each candidate's weighted RRF score; 0 where no weighted signal ranked it."""
    w = np.array([weights.get(name, 0.0) for name in replay.signals], dtype=np.float32)
    return np.einsum("qsc,qs->qc", reciprocal_rank(replay.ranks, 1.0, np.float32(rrf_k)), replay.scales * w)


def score(replay: Replay, weights: Mapping[str, float], rrf_k: float, cut: int = 10) -> Score:
    """Full Recall@cut and MRR@cut of weighted RRF over the recorded ranks."""
    if not len(replay) or not any(weights.get(name, 0.0) for name in replay.signals):
        return Score(0.0, 0.0)
    fused = fused_scores(replay, weights, rrf_k)
    cut = min(cut, fused.shape[1])
    top = np.argpartition(-fused, cut - 1, axis=1)[:, :cut]
    top_scores = np.take_along_axis(fused, top, axis=1)
    order = np.take_along_axis(top, np.argsort(-top_scores, axis=1, kind="stable"), axis=1)
    # A candidate no signal with weight ranked is not retrieved at all.
    retrieved = np.take_along_axis(fused, order, axis=1) > 0
    covered = np.bitwise_or.reduce(np.where(retrieved, np.take_along_axis(replay.steps, order, axis=1), 0), axis=1)
    bits = np.array([bin(int(value)).count("1") for value in covered], dtype=np.float64)
    full_recall = float(np.mean(bits / np.maximum(replay.step_counts, 1)))
    hits = np.take_along_axis(replay.answers, order, axis=1) & retrieved
    first = np.where(hits.any(axis=1), hits.argmax(axis=1) + 1, np.inf)
    return Score(full_recall=full_recall, mrr=float(np.mean(1.0 / first)))


def mean_score(replays: Sequence[Replay], weights: Mapping[str, float], rrf_k: float, cut: int = 10) -> Score:
    """The mean of each replay's Full Recall and MRR: every data set counts the same, whatever its size."""
    scores = [score(replay, weights, rrf_k, cut) for replay in replays]
    return Score(float(np.mean([s.full_recall for s in scores])), float(np.mean([s.mrr for s in scores])))


@dataclass(frozen=True)
class Fit:
    weights: dict[str, float]
    rrf_k: float
    score: Score
    evaluations: int


def coordinate_ascent(
    replay: Replay | Sequence[Replay],
    weights: Mapping[str, float],
    rrf_k: float,
    *,
    params: Sequence[str],
    cut: int = 10,
    rounds: int = 4,
    progress: Callable[[str], None] | None = None,
) -> Fit:
    """The best weights and k found from the starting point, changing only `params`.

    Several replays (e.g. one per data set) are fitted together on the mean of their scores.
    """
    replays = [replay] if isinstance(replay, Replay) else list(replay)
    current = {name: float(weights.get(name, 0.0)) for name in replays[0].signals}
    k = float(rrf_k)
    best = mean_score(replays, current, k, cut)
    evaluations = 1
    for round_number in range(1, rounds + 1):
        improved = False
        for param in params:
            for value in K_GRID if param == RRF_K else WEIGHT_GRID:
                trial_weights = current if param == RRF_K else {**current, param: value}
                trial_k = float(value) if param == RRF_K else k
                trial = mean_score(replays, trial_weights, trial_k, cut)
                evaluations += 1
                if trial.objective > best.objective + 1e-9:
                    best, current, k, improved = trial, dict(trial_weights), trial_k, True
        if progress is not None:
            progress(f"round {round_number}: objective {best.objective:.4f} "
                     f"(Full Recall {best.full_recall:.3f}, MRR {best.mrr:.3f}) k={k:g} {current}")
        if not improved:
            break
    return Fit(weights=current, rrf_k=k, score=best, evaluations=evaluations)
