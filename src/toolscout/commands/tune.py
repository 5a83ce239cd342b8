"""`toolscout tune DATASET_DIR --out weights.json`: fit fusion weights and RRF k on training queries.

Cross-validated: the queries are split into folds (copies of a request in one fold); for each
fold, weights are fitted on the other folds and scored on it, before (the starting weights) and
after. The weights written are then fitted on every query. Progress goes to stderr, the held-out
table to stdout. See `toolscout.eval.tuning` for the method.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
from pathlib import Path

import numpy as np

from toolscout.commands._gateway import fail
from toolscout.commands.eval import add_split_option, settings_from_args
from toolscout.errors import ToolscoutError
from toolscout.eval import build_engine, load_dataset, sample_queries
from toolscout.eval.crossval import Fold, about_other_tools, examples_of, load_eval_examples, split_folds, without_overlap
from toolscout.eval.datasets import Dataset, Query
from toolscout.eval.tuning import RRF_K, Replay, Score, coordinate_ascent, engine_rankings, record, score
from toolscout.learning.examples import Example
from toolscout.search.settings import SIGNALS, SearchSettings

__all__ = ["register", "run"]

logger = logging.getLogger(__name__)


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "tune",
        help="fit fusion weights and RRF k on a benchmark folder's queries (cross-validated)",
        description="Record every signal's rankings of the queries once, then fit the weights and k by "
        "coordinate ascent on Full Recall@k + MRR@k, reporting held-out folds before and after.",
    )
    parser.add_argument("dataset", metavar="DATASET_DIR", help="folder with tools.jsonl and queries.jsonl (training data)")
    parser.add_argument("--out", required=True, metavar="FILE", help="where to write the fitted weights (JSON)")
    parser.add_argument("--examples", metavar="FILE", help="example requests for the intent signal (JSON Lines)")
    parser.add_argument("--fold-examples", action="store_true",
                        help="learn from use: each fold's queries are searched with the other folds as examples")
    parser.add_argument("--folds", type=int, default=5, help="cross-validation folds (default 5)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the fold split (default 0)")
    add_split_option(parser)
    parser.add_argument("-k", type=int, default=10, help="cut-off rank of the objective (default 10)")
    parser.add_argument("--weights", help="starting weights, 'a=1,b=2' or a weights.json (default: the package's)")
    parser.add_argument("--params", help="comma-separated signals (and rrf_k) to tune (default: all that run, and rrf_k)")
    parser.add_argument("--model", help="embedding model: 'bundled' (default, shipped inside toolscout), an installed package or a folder; 'none' disables dense")
    parser.add_argument("--limit-queries", type=int, metavar="N", help="use N queries spread over the file")
    parser.set_defaults(handler=run, signals=None)


def run(args: argparse.Namespace) -> int:
    if args.k <= 0 or args.folds < 2:
        return _fail("-k must be positive and --folds at least 2")
    try:
        dataset = load_dataset(args.dataset)
        start = settings_from_args(args)
        queries = sample_queries(dataset.queries, args.limit_queries)
        folds = split_folds(queries, args.folds, seed=args.seed, by=args.split)
        examples = load_eval_examples(args.examples) if args.examples else []
        replays = _record_folds(args, start, dataset, folds, examples)
    except ToolscoutError as exc:
        return _fail(str(exc))
    signals = replays[0].signals
    # A signal that ranked nothing (no expansions, no examples) has no weight worth fitting.
    active = [name for i, name in enumerate(signals) if any(bool(np.isfinite(r.ranks[:, i]).any()) for r in replays)]
    params = _params(args.params, active)
    if isinstance(params, str):
        return _fail(params)
    logger.info("tuning %s on %d queries in %d folds", ", ".join(params), len(queries), len(folds))
    rows = []
    for held_out in range(len(folds)):
        train = Replay.concat([r for i, r in enumerate(replays) if i != held_out])
        fit = coordinate_ascent(train, start.weights, start.rrf_k, params=params, cut=args.k,
                                progress=lambda line, n=held_out + 1: logger.info("fold %d %s", n, line))
        before = score(replays[held_out], start.weights, start.rrf_k, args.k)
        after = score(replays[held_out], fit.weights, fit.rrf_k, args.k)
        rows.append((f"fold {held_out + 1}", len(replays[held_out]), before, after, fit))
    everything = Replay.concat(replays)
    final = coordinate_ascent(everything, start.weights, start.rrf_k, params=params, cut=args.k,
                              progress=lambda line: logger.info("all queries %s", line))
    _print_table(rows, args.k)
    document = _document(args, dataset, start, final, rows, len(queries))
    try:
        Path(args.out).write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    except OSError as exc:
        return _fail(f"cannot write {args.out}: {exc.strerror or exc}")
    print(f"\nfitted on all {len(queries)} queries: rrf_k={final.rrf_k:g} "
          + ", ".join(f"{name}={weight:g}" for name, weight in final.weights.items()) + f" -> {args.out}")
    return 0


def _record_folds(
    args: argparse.Namespace,
    start: SearchSettings,
    dataset: Dataset,
    folds: list[tuple[Query, ...]],
    examples: list[Example],
) -> list[Replay]:
    """Each fold's recorded rankings, searched by an engine running every signal that can run."""
    # Every signal on, so each can be given a weight; the weights themselves do not matter here.
    recording = dataclasses.replace(start, weights={name: 1.0 for name in SIGNALS}, exact_name_boost=False)
    depth = max(recording.candidates, 4 * args.k)
    shared = None
    if not args.fold_examples:
        kept, dropped = without_overlap(examples, [q for fold in folds for q in fold])
        if args.examples:
            logger.info("%d examples kept, %d dropped (same request as a tuning query)", len(kept), dropped)
        shared, _ = build_engine(recording, dataset, examples=kept)
    replays = []
    for number, fold in enumerate(folds, start=1):
        engine = shared
        if engine is None:
            others = [q for i, other in enumerate(folds, start=1) if i != number for q in other]
            kept, _ = without_overlap([*examples_of(others), *examples], fold)
            if args.split == "other-tools":
                kept = list(about_other_tools(Fold(number, fold, tuple(kept))).examples)
            engine, _ = build_engine(recording, dataset, examples=kept)
        signals = list(engine.rankings(fold[0].text, depth=1).rankings) if fold else []

        def progress(done: int, total: int, number: int = number) -> None:
            if done == total or done % max(1, total // 5) == 0:
                logger.info("fold %d: recorded %d/%d", number, done, total)

        replays.append(record(engine_rankings(engine), fold, [s for s in SIGNALS if s in signals], depth, progress))
    return replays


def _params(text: str | None, active: list[str]) -> list[str] | str:
    if not text:
        return [*active, RRF_K]
    names = [part.strip() for part in text.split(",") if part.strip()]
    unknown = [name for name in names if name not in (*active, RRF_K)]
    if unknown or not names:
        return f"cannot tune {', '.join(unknown) or 'nothing'}; these run here: {', '.join([*active, RRF_K])}"
    return names


def _print_table(rows: list, k: int) -> None:
    print(f"| held out | queries | Full Recall@{k} before | after | MRR@{k} before | after | fitted |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for label, count, before, after, fit in rows:
        print(f"| {label} | {count} | {before.full_recall:.3f} | {after.full_recall:.3f} | {before.mrr:.3f} | "
              f"{after.mrr:.3f} | k={fit.rrf_k:g} {_short(fit.weights)} |")
    total = sum(count for _, count, *_ in rows)
    mean = {when: Score(sum(r[i].full_recall * r[1] for r in rows) / total, sum(r[i].mrr * r[1] for r in rows) / total)
            for when, i in (("before", 2), ("after", 3))}
    print(f"| all folds | {total} | {mean['before'].full_recall:.3f} | {mean['after'].full_recall:.3f} | "
          f"{mean['before'].mrr:.3f} | {mean['after'].mrr:.3f} | |")


def _short(weights: dict[str, float]) -> str:
    return " ".join(f"{name}={weight:g}" for name, weight in weights.items() if weight)


def _document(args, dataset, start, final, rows, n_queries) -> dict:
    return {
        # Signals at 0 are left out: absent means off.
        "weights": {name: weight for name, weight in final.weights.items() if weight > 0},
        "rrf_k": final.rrf_k,
        "how": {
            "dataset": dataset.name,
            "queries": n_queries,
            "folds": args.folds,
            "seed": args.seed,
            "split": args.split,
            "examples": "other folds" if args.fold_examples else (args.examples or "none"),
            "objective": f"full_recall@{args.k} + mrr@{args.k}",
            "start": {"weights": dict(start.weights), "rrf_k": start.rrf_k},
            "held_out": [{"fold": label, "queries": count, "before": dataclasses.asdict(before),
                          "after": dataclasses.asdict(after)} for label, count, before, after, _ in rows],
            "all_queries": dataclasses.asdict(final.score),
        },
    }


def _fail(message: str) -> int:
    return fail("tune", message)
