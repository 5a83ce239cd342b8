"""`toolscout eval DATASET_DIR`: measure search quality and latency on a benchmark folder.

Scores go to stdout (a markdown table, or one JSON object with --json); progress goes to stderr.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import sys
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from toolscout.errors import ToolscoutError
from toolscout.eval import SLICE_FIELDS, EvalRun, load_dataset, run_engine, sample_queries
from toolscout.eval.report import markdown_table, rows_of, slice_rows, write_report

if TYPE_CHECKING:
    # The engine is imported when a command runs, not when the CLI parser is built.
    from toolscout.search import SearchSettings

logger = logging.getLogger(__name__)

# Signals that need the embedding model; every other signal is lexical.
MODEL_SIGNALS = frozenset({"dense", "intent"})


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
        configurations = ablation_settings(base) if args.ablation else {"toolscout": base}
        queries = sample_queries(dataset.queries, args.limit_queries)
        logger.info("%s: %d tools, %d queries", dataset.name, len(dataset.tools), len(queries))
        runs = [
            run_engine(
                settings, dataset, args.k, queries=queries, label=label,
                index_progress=_progress(f"{label}: embedding tools"),
                progress=_progress(f"{label}: queries"),
            )
            for label, settings in configurations.items()
        ]
        if args.report:
            slices = [args.by] if args.by else _present_slices(dataset.queries)
            paths = write_report(args.report, dataset.name, runs, slice_fields=slices,
                                 settings=_describe(base))
            logger.info("report written: %s, %s", *paths)
    except ToolscoutError as exc:
        return _fail(str(exc))
    _print_results(args, runs)
    return 0


def settings_from_args(args: argparse.Namespace) -> SearchSettings:
    """The engine defaults, overridden by --weights, restricted by --signals, with --model."""
    from toolscout.search import SearchSettings

    defaults = SearchSettings()
    weights = dict(defaults.weights)
    if args.weights:
        weights = dict(parse_weights(args.weights))
    if args.signals:
        chosen = [name.strip() for name in args.signals.split(",") if name.strip()]
        known = set(known_signals())
        unknown = [name for name in chosen if name not in known]
        if unknown or not chosen:
            raise ToolscoutError(
                f"unknown signal(s) {', '.join(unknown) or '(none given)'}; "
                f"choose from {', '.join(sorted(known))}"
            )
        # A chosen signal keeps its weight, or gets 1 when the defaults leave it off.
        weights = {name: weights.get(name) or 1.0 for name in chosen}
    return with_weights(defaults, weights, model=args.model)


def ablation_settings(base: SearchSettings) -> dict[str, SearchSettings]:
    """Each active signal alone, all lexical signals fused, and the full configuration."""
    active = {name: weight for name, weight in base.weights.items() if weight > 0}
    configurations = {name: with_weights(base, {name: 1.0}) for name in active}
    lexical = {name: weight for name, weight in active.items() if name not in MODEL_SIGNALS}
    if len(lexical) > 1:
        configurations["lexical fusion"] = with_weights(base, lexical)
    if len(active) > 1 and active != lexical:
        configurations["hybrid"] = base
    return configurations


def with_weights(
    settings: SearchSettings, weights: Mapping[str, float], *, model: str | None = None
) -> SearchSettings:
    """`settings` with new weights; the model is dropped when no signal needs it, so it never loads."""
    changes: dict[str, object] = {"weights": dict(weights)}
    fields = {field.name for field in dataclasses.fields(settings)}
    if "model" in fields:
        if model is not None:
            changes["model"] = None if model.lower() in ("none", "off", "") else model
        if not MODEL_SIGNALS.intersection(name for name, w in weights.items() if w > 0):
            changes["model"] = None
    return dataclasses.replace(settings, **changes)


def known_signals() -> tuple[str, ...]:
    from toolscout import search

    return tuple(getattr(search, "SIGNALS", None) or search.SearchSettings().weights)


def parse_weights(text: str) -> Mapping[str, float]:
    """`name=weight,...` through the engine's parser (one syntax across serve, search, eval)."""
    from toolscout import search

    parser: Callable[[str], Mapping[str, float]] | None = getattr(search, "parse_weights", None)
    if parser is None:
        raise ToolscoutError("--weights needs toolscout.search.parse_weights, which this build lacks")
    try:
        return parser(text)
    except ValueError as exc:
        raise ToolscoutError(f"--weights: {exc}") from exc


def _print_results(args: argparse.Namespace, runs: list[EvalRun]) -> None:
    if args.json:
        print(json.dumps(runs[0].summary.as_dict()))
        return
    print(markdown_table(rows_of(runs)))
    if args.by:
        print()
        print(markdown_table(slice_rows(runs, args.by), first_column=args.by))


def _present_slices(queries) -> list[str]:
    return [field for field in ("level", "group", "category")
            if any(query.slice_value(field) != "-" for query in queries)]


def _describe(settings: SearchSettings) -> dict[str, object]:
    return {field.name: getattr(settings, field.name) for field in dataclasses.fields(settings)}


def _progress(what: str) -> Callable[[int, int], None]:
    """Log about ten progress lines per phase, whatever its size."""

    def report(done: int, total: int) -> None:
        if done == total or done % max(1, total // 10) == 0:
            logger.info("%s %d/%d", what, done, total)

    return report


def _fail(message: str) -> int:
    print(f"toolscout eval: error: {message}", file=sys.stderr)
    return 2
