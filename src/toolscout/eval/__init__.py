"""Evaluation harness: benchmark data sets, ranking metrics, and runs of a ranker over a data set.

    dataset = load_dataset("bench/etom_mcp")
    run = run_engine(SearchSettings(), dataset, k=10)
    run.summary.as_dict()            # the `toolscout eval --json` object
    by_slice(run, "level")           # per-slice summaries

No MCP imports here.
"""

from toolscout.eval.datasets import SLICE_FIELDS, Dataset, Query, load_dataset, load_queries, load_tools
from toolscout.eval.runner import (
    EvalRun,
    QueryOutcome,
    Ranker,
    Summary,
    build_engine,
    by_slice,
    engine_ranker,
    evaluate,
    run_engine,
    sample_queries,
    score_query,
    summarize,
)

__all__ = [
    "SLICE_FIELDS",
    "Dataset",
    "EvalRun",
    "Query",
    "QueryOutcome",
    "Ranker",
    "Summary",
    "build_engine",
    "by_slice",
    "engine_ranker",
    "evaluate",
    "load_dataset",
    "load_queries",
    "load_tools",
    "run_engine",
    "sample_queries",
    "score_query",
    "summarize",
]
