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

from toolscout.commands._gateway import add_fusion_option, add_reranker_option
from toolscout.errors import ToolscoutError
from toolscout.eval import SLICE_FIELDS, EvalRun, load_dataset, run_engine, sample_queries
from toolscout.eval.ablation import run_ablation
from toolscout.eval.crossval import SPLITS, Fold, about_other_tools, cross_validation_folds, load_eval_examples, pooled, without_overlap
from toolscout.eval.datasets import Dataset, slice_fields_of
from toolscout.eval.report import markdown_table, rows_of, slice_rows, write_report

if TYPE_CHECKING:
    # The engine is imported when a command runs, not when the CLI parser is built.
    from toolscout.search.settings import SearchSettings

__all__ = ["add_split_option", "register", "run", "settings_from_args"]

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
    parser.add_argument("--weights", help="fusion weights, e.g. dense=1,bm25_name=0.5, or a weights.json from `toolscout tune`")
    parser.add_argument("--model", help="embedding model: 'bundled' (default, shipped inside toolscout), an installed package or a folder; 'none' disables dense")
    add_reranker_option(parser)
    add_fusion_option(parser)
    parser.add_argument("--by", choices=SLICE_FIELDS, help="add one row per value of this query field")
    parser.add_argument("--json", action="store_true", help="print one JSON object with the overall scores")
    parser.add_argument("--ablation", action="store_true",
                        help="each signal alone, lexical fusion and the full hybrid, as one table")
    parser.add_argument("--report", metavar="DIR", help="also write a markdown report and a PNG chart here")
    parser.add_argument("--limit-queries", type=int, metavar="N",
                        help="evaluate N queries spread evenly over the file (quick checks)")
    parser.add_argument("--examples", metavar="FILE",
                        help="example requests to learn from, JSON Lines {\"query\", \"tools\"} (or benchmark "
                        "query lines: their relevant tools); those equal to an evaluated query are dropped")
    parser.add_argument("--folds", type=int, metavar="N",
                        help="N-fold cross-validation over the query file: each fold evaluated with the "
                        "other folds' queries as examples; prints each fold and all folds together")
    parser.add_argument("--seed", type=int, default=0, help="seed of the fold split (default 0)")
    add_split_option(parser)
    parser.set_defaults(handler=run)


def add_split_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--split", choices=SPLITS, default="request",
                        help="how folds are split: by request text (default); by set of relevant tools, so no "
                        "evaluated request's tool set is ever an example; other-tools: by tool set, and only "
                        "examples sharing no tool with the evaluated requests")


def run(args: argparse.Namespace) -> int:
    if args.k <= 0:
        return _fail("-k must be a positive integer")
    if args.limit_queries is not None and args.limit_queries <= 0:
        return _fail("--limit-queries must be a positive integer")
    if args.json and (args.by or args.ablation):
        return _fail("--json prints the overall scores of one configuration; drop --by and --ablation")
    if args.split != "request" and args.folds is None:
        return _fail(f"--split {args.split} splits cross-validation folds; add --folds N (e.g. --folds 5)")
    fold_rows: list[EvalRun] = []
    try:
        dataset = load_dataset(args.dataset)
        base = settings_from_args(args)
        folds = _folds(args, dataset)
        runs_per_fold = [_run_fold(args, base, dataset, fold) for fold in folds]
        if len(folds) == 1:
            runs = runs_per_fold[0]
        else:
            # Each configuration over every fold's queries; and the full configuration per fold.
            labels = dict.fromkeys(run.label for fold in runs_per_fold for run in fold)
            runs = [pooled([run for fold in runs_per_fold for run in fold if run.label == label], label)
                    for label in labels]
            fold_rows = [dataclasses.replace(fold[-1], label=f"fold {n}") for n, fold in enumerate(runs_per_fold, 1)]
            fold_rows.append(dataclasses.replace(runs[-1], label="all folds"))
        if args.report:
            slices = [args.by] if args.by else slice_fields_of(dataset.queries)
            paths = write_report(args.report, dataset.name, runs, slice_fields=slices,
                                 settings=_describe(base))
            logger.info("report written: %s, %s", *paths)
    except ToolscoutError as exc:
        return _fail(str(exc))
    _print_results(args, runs)
    if fold_rows and not args.json:
        print()
        print(f"{runs[-1].label} per fold:")
        print()
        print(markdown_table(rows_of(fold_rows)))
    return 0


def _folds(args: argparse.Namespace, dataset: Dataset) -> list[Fold]:
    """What is evaluated, and with which examples: one fold, or the cross-validation folds."""
    examples = load_eval_examples(args.examples) if args.examples else []
    if args.folds is not None:
        folds = cross_validation_folds(dataset.queries, args.folds, seed=args.seed, by=args.split)
        limit = None if args.limit_queries is None else max(1, args.limit_queries // len(folds))
        folds = [dataclasses.replace(fold, queries=sample_queries(fold.queries, limit)) for fold in folds]
        if args.split == "other-tools":
            folds = [about_other_tools(fold) for fold in folds]
    else:
        folds = [Fold(number=1, queries=sample_queries(dataset.queries, args.limit_queries), examples=())]
    result = []
    for fold in folds:
        extra, dropped = without_overlap(examples, fold.queries)
        result.append(dataclasses.replace(fold, examples=(*fold.examples, *extra), dropped=fold.dropped + dropped))
        if args.examples:
            logger.info("fold %d: %d examples from %s kept, %d dropped (same request as an evaluated query)",
                        fold.number, len(extra), args.examples, dropped)
    return result


def _run_fold(args: argparse.Namespace, base: SearchSettings, dataset: Dataset, fold: Fold) -> list[EvalRun]:
    logger.info("%s%s: %d tools, %d queries, %d examples", dataset.name,
                f" fold {fold.number}" if args.folds else "", len(dataset.tools), len(fold.queries),
                len(fold.examples))
    if args.ablation:
        return run_ablation(base, dataset, args.k, queries=fold.queries, reporter=_report_progress,
                            examples=fold.examples)
    return [run_engine(base, dataset, args.k, queries=fold.queries, label="toolscout", examples=fold.examples,
                       index_progress=partial(_report_progress, "toolscout", "embedding"),
                       progress=partial(_report_progress, "toolscout", "queries"))]


def settings_from_args(args: argparse.Namespace) -> SearchSettings:
    """The engine defaults, with --weights, restricted to --signals, with --model, --reranker, --fusion
    and --multilingual."""
    from toolscout.search.settings import SearchSettings, apply_weights_option, parse_signals

    try:
        settings = apply_weights_option(SearchSettings(), args.weights) if args.weights else SearchSettings()
        if args.signals:
            # Chosen signals keep their (given or default) weight, or 1 where that is 0 (off by
            # default); the others are off.
            chosen = parse_signals(args.signals)
            weights = {name: settings.weights.get(name) or default or 1.0 for name, default in chosen.items()}
            settings = settings.with_weights(weights)
    except ValueError as exc:
        raise ToolscoutError(str(exc)) from exc
    if args.model:
        settings = dataclasses.replace(settings, model=args.model)
    # `toolscout tune` shares this reader and has none of these: it replays rankings before fusion
    # and fits weighted RRF only.
    for option in ("reranker", "fusion", "multilingual"):
        if getattr(args, option, None):
            settings = dataclasses.replace(settings, **{option: getattr(args, option)})
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
