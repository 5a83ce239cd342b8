"""`toolscout eval DATASET_DIR`: measure search quality and latency on a benchmark folder.

Scores go to stdout (a markdown table, or one JSON object with --json); progress goes to stderr.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import sys
from functools import partial
from typing import TYPE_CHECKING

from toolscout.errors import ToolscoutError
from toolscout.eval import SLICE_FIELDS, EvalRun, load_dataset, run_engine, sample_queries
from toolscout.eval.ablation import run_ablation
from toolscout.eval.datasets import slice_fields_of
from toolscout.eval.report import markdown_table, rows_of, slice_rows, write_report

if TYPE_CHECKING:
    # The engine is imported when a command runs, not when the CLI parser is built.
    from toolscout.settings import SearchSettings

logger = logging.getLogger(__name__)

def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "eval",
        help="measure search quality on a benchmark folder (tools.jsonl, queries.jsonl)",
        description="Index the folder's tools, run every query one at a time, and print "
        "Recall, MRR, Full Recall, Multi-tool Recall, Complete and nDCG at k with per-query latency.",
    )
    parser.add_argument("dataset", metavar="DATASET_DIR", help="folder with tools.jsonl and queries.jsonl")
    parser.add_argument("-k", type=int, default=10, help="cut-off rank (default 10)")
    parser.add_argument("--signals", help="comma-separated signals to use, e.g. bm25_name,tfidf (default: all)")
    parser.add_argument("--weights", help="fusion weights, e.g. dense=1,bm25_name=0.5")
    parser.add_argument("--model", help="embedding model: installed package or folder; 'none' disables dense")
    parser.add_argument("--by", choices=SLICE_FIELDS, help="add one row per value of this query field")
    parser.add_argument("--json", action="store_true", help="print one JSON object with the overall scores")
    parser.add_argument("--ablation", action="store_true",
                        help="each signal alone, lexical fusion and the full hybrid, as one table")
    parser.add_argument("--report", metavar="DIR", help="also write a markdown report and a PNG chart here")
    parser.add_argument("--limit-queries", type=int, metavar="N",
                        help="evaluate N queries spread evenly over the file (quick checks)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.k <= 0:
        return _fail("-k must be a positive integer")
    if args.limit_queries is not None and args.limit_queries <= 0:
        return _fail("--limit-queries must be a positive integer")
    if args.json and (args.by or args.ablation):
        return _fail("--json prints the overall scores of one configuration; drop --by and --ablation")
    try:
        dataset = load_dataset(args.dataset)
        base = settings_from_args(args)
        queries = sample_queries(dataset.queries, args.limit_queries)
        logger.info("%s: %d tools, %d queries", dataset.name, len(dataset.tools), len(queries))
        if args.ablation:
            runs = run_ablation(base, dataset, args.k, queries=queries, reporter=_report_progress)
        else:
            runs = [run_engine(base, dataset, args.k, queries=queries, label="toolscout",
                               index_progress=partial(_report_progress, "toolscout", "embedding"),
                               progress=partial(_report_progress, "toolscout", "queries"))]
        if args.report:
            slices = [args.by] if args.by else slice_fields_of(dataset.queries)
            paths = write_report(args.report, dataset.name, runs, slice_fields=slices,
                                 settings=_describe(base))
            logger.info("report written: %s, %s", *paths)
    except ToolscoutError as exc:
        return _fail(str(exc))
    _print_results(args, runs)
    return 0


def settings_from_args(args: argparse.Namespace) -> SearchSettings:
    """The engine defaults, with --weights, restricted to --signals, with --model."""
    from toolscout.settings import SearchSettings, parse_signals, parse_weights

    try:
        weights = parse_weights(args.weights) if args.weights else dict(SearchSettings().weights)
        if args.signals:
            # Chosen signals keep their (given or default) weight, or 1 where that is 0 (off by
            # default); the others are off.
            chosen = parse_signals(args.signals)
            weights = {name: weights.get(name) or default or 1.0 for name, default in chosen.items()}
        settings = SearchSettings(weights=weights)
    except ValueError as exc:
        raise ToolscoutError(str(exc)) from exc
    if args.model:
        settings = dataclasses.replace(settings, model=args.model)
    if not any(settings.enabled(name) for name in ("dense", "intent")):
        # No signal needs the model: never load it.
        settings = dataclasses.replace(settings, model=None)
    return settings


def _print_results(args: argparse.Namespace, runs: list[EvalRun]) -> None:
    if args.json:
        print(json.dumps(runs[0].summary.as_dict()))
        return
    print(markdown_table(rows_of(runs)))
    if args.by:
        print()
        print(markdown_table(slice_rows(runs, args.by), first_column=args.by))


def _describe(settings: SearchSettings) -> dict[str, object]:
    return {field.name: getattr(settings, field.name) for field in dataclasses.fields(settings)}


def _report_progress(label: str, phase: str, done: int, total: int) -> None:
    # About ten lines per phase, whatever its size.
    if done == total or done % max(1, total // 10) == 0:
        logger.info("%s: %s %d/%d", label, phase, done, total)


def _fail(message: str) -> int:
    print(f"toolscout eval: error: {message}", file=sys.stderr)
    return 2
