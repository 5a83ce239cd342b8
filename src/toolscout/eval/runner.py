"""Run a ranker over a data set, one query at a time, timing each search, and aggregate.

A *ranker* is any callable `(query_text, k) -> ranked tool ids`; `engine_ranker` adapts a
ToolSearch, and benchmark scripts wrap other libraries the same way, so every system is scored by
the same code. Latency is measured around each search call only (index building is timed apart).
"""

from __future__ import annotations

import logging
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

import numpy as np

from toolscout.eval import metrics
from toolscout.eval.datasets import Dataset, Query

__all__ = [
    "EvalRun",
    "Progress",
    "QueryOutcome",
    "Ranker",
    "Summary",
    "build_engine",
    "by_slice",
    "engine_ranker",
    "evaluate",
    "run_engine",
    "sample_queries",
    "score_query",
    "summarize",
]

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    # Imported where used, so loading data and scoring never depend on the engine's import cost.
    from toolscout.learning.examples import Example
    from toolscout.search import SearchSettings, ToolSearch

Ranker = Callable[[str, int], Sequence[str]]
# (queries done, queries total)
Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class QueryOutcome:
    """What one query retrieved, how long it took, and its per-query scores."""

    query: Query
    retrieved: tuple[str, ...]
    latency_ms: float
    recall: float
    mrr: float
    full_recall: float
    complete: float
    ndcg: float


@dataclass(frozen=True)
class Summary:
    """Aggregate scores; `as_dict()` is the exact `toolscout eval --json` object."""

    recall: float
    mrr: float
    full_recall: float
    multi_recall: float | None
    complete: float
    ndcg: float
    latency_ms_p50: float
    latency_ms_p95: float
    n_queries: int
    k: int

    def as_dict(self) -> dict[str, float | int | None]:
        return asdict(self)


@dataclass(frozen=True)
class EvalRun:
    """One system over one data set: per-query outcomes, their summary, and index build time."""

    label: str
    k: int
    outcomes: tuple[QueryOutcome, ...]
    summary: Summary
    index_seconds: float | None = None


def score_query(query: Query, retrieved: Sequence[str], k: int, latency_ms: float) -> QueryOutcome:
    retrieved = tuple(retrieved)
    return QueryOutcome(
        query=query,
        retrieved=retrieved,
        latency_ms=latency_ms,
        recall=metrics.recall(retrieved, query, k),
        mrr=metrics.mrr(retrieved, query, k),
        full_recall=metrics.full_recall(retrieved, query, k),
        complete=metrics.complete(retrieved, query, k),
        ndcg=metrics.ndcg(retrieved, query, k),
    )


def summarize(outcomes: Sequence[QueryOutcome], k: int) -> Summary:
    if not outcomes:
        raise ValueError("no queries to summarize")
    latencies = np.array([outcome.latency_ms for outcome in outcomes])

    def mean(name: str) -> float:
        return float(np.mean([getattr(outcome, name) for outcome in outcomes]))

    return Summary(
        recall=mean("recall"),
        mrr=mean("mrr"),
        full_recall=mean("full_recall"),
        multi_recall=metrics.multi_recall((o.query, o.full_recall) for o in outcomes),
        complete=mean("complete"),
        ndcg=mean("ndcg"),
        latency_ms_p50=float(np.percentile(latencies, 50)),
        latency_ms_p95=float(np.percentile(latencies, 95)),
        n_queries=len(outcomes),
        k=k,
    )


def evaluate(
    ranker: Ranker,
    queries: Sequence[Query],
    k: int,
    *,
    label: str = "",
    index_seconds: float | None = None,
    progress: Progress | None = None,
) -> EvalRun:
    """Ask `ranker` for the top k of every query, one call at a time, and score the answers."""
    if k <= 0:
        raise ValueError("k must be positive")
    outcomes = []
    for done, query in enumerate(queries, start=1):
        start = time.perf_counter()
        retrieved = ranker(query.text, k)
        latency_ms = (time.perf_counter() - start) * 1000.0
        outcomes.append(score_query(query, retrieved, k, latency_ms))
        if progress is not None:
            progress(done, len(queries))
    return EvalRun(
        label=label,
        k=k,
        outcomes=tuple(outcomes),
        summary=summarize(outcomes, k),
        index_seconds=index_seconds,
    )


def engine_ranker(engine: ToolSearch) -> Ranker:
    def rank(text: str, k: int) -> list[str]:
        return [hit.tool.id for hit in engine.search(text, limit=k).hits]

    return rank


def build_engine(
    settings: SearchSettings,
    dataset: Dataset,
    progress: Callable[[int, int], None] | None = None,
    examples: Sequence[Example] = (),
) -> tuple[ToolSearch, float]:
    """A ToolSearch fitted on the data set's catalog, with all its signals complete, and the seconds it took.

    `examples` reach the engine as the gateway passes them: their requests join their tools'
    expansion field, and they feed the intent signal.
    """
    from toolscout.search import ToolSearch

    start = time.perf_counter()
    engine = ToolSearch(settings)
    tools: Sequence = dataset.tools
    if examples:
        from toolscout.learning.expansion import apply_expansions

        tools = apply_expansions(dataset.tools, examples=examples)
    engine.index(tools, examples=examples)
    engine.complete(progress)
    seconds = time.perf_counter() - start
    if dataset.queries:
        # A degraded engine (e.g. the embedding model failed to load) says so in its answers;
        # the numbers of this run are then not those of the configuration asked for.
        notice = engine.search(dataset.queries[0].text, limit=1).notice
        if notice:
            log.warning("%s", notice)
    return engine, seconds


def run_engine(
    settings: SearchSettings,
    dataset: Dataset,
    k: int,
    *,
    queries: Sequence[Query] | None = None,
    label: str = "toolscout",
    index_progress: Callable[[int, int], None] | None = None,
    progress: Progress | None = None,
    examples: Sequence[Example] = (),
) -> EvalRun:
    """Build the engine on the data set's tools, then evaluate it on its queries (or `queries`)."""
    engine, seconds = build_engine(settings, dataset, index_progress, examples)
    return evaluate(
        engine_ranker(engine),
        dataset.queries if queries is None else queries,
        k,
        label=label,
        index_seconds=seconds,
        progress=progress,
    )


def by_slice(run: EvalRun, field: str) -> dict[str, Summary]:
    """Summaries per value of a query's slicing key (level, group, category, kind), sorted by value."""
    buckets: dict[str, list[QueryOutcome]] = defaultdict(list)
    for outcome in run.outcomes:
        buckets[outcome.query.slice_value(field)].append(outcome)
    return {value: summarize(buckets[value], run.k) for value in sorted(buckets)}


def sample_queries(queries: Sequence[Query], limit: int | None) -> tuple[Query, ...]:
    """At most `limit` queries, evenly spread over the file so every slice stays represented."""
    if limit is None or limit >= len(queries):
        return tuple(queries)
    if limit <= 0:
        raise ValueError("limit must be positive")
    step = len(queries) / limit
    return tuple(queries[int(index * step)] for index in range(limit))

