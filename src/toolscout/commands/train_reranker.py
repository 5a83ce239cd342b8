"""`toolscout train-reranker`: train the cross-encoder reranker (needs `toolscout[train]`).

Prepares the rows once (licensed request -> tool pairs with the keyword search's and the embedding
model's confusions as negatives), trains with checkpoints (run the same command again to resume),
then exports the int8 ONNX file, tokenizer and config the runtime loads. Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from toolscout.commands._gateway import fail
from toolscout.errors import ToolscoutError

__all__ = ["register", "run"]

logger = logging.getLogger(__name__)


def register(subparsers: argparse._SubParsersAction) -> None:
    from toolscout.training.data import LICENSED_SOURCES
    from toolscout.training.reranker import RerankerPlan

    shipped = RerankerPlan(data="")
    parser = subparsers.add_parser(
        "train-reranker",
        help="train the cross-encoder reranker (needs toolscout[train])",
        description="Train a cross-encoder that reads a request with each candidate tool, on licensed "
        "request -> tool pairs with the engine's own confusions as negatives, resumable, and export it "
        "for the runtime (int8 ONNX + tokenizer).",
    )
    parser.add_argument("--data", required=True, type=Path, metavar="DIR",
                        help="training folder with tools.jsonl and pairs.jsonl (e.g. ../shared/train)")
    parser.add_argument("--out", required=True, type=Path, metavar="DIR",
                        help="run folder: prepared rows, checkpoints, the trained model; re-run to resume")
    parser.add_argument("--embedding-model", required=True, type=Path, metavar="DIR",
                        help="a sentence-transformers folder whose confusions become negatives "
                        "(e.g. train-model's RUN/model)")
    parser.add_argument("--sources", default=",".join(LICENSED_SOURCES),
                        help="comma-separated training sources (default: those whose licence allows a shipped model)")
    parser.add_argument("--epochs", type=float, default=shipped.epochs, help=f"passes (default {shipped.epochs:g})")
    parser.add_argument("--batch-size", type=int, default=shipped.batch_size,
                        help=f"pairs per step (default {shipped.batch_size})")
    parser.add_argument("--seed", type=int, default=shipped.seed, help=f"seed (default {shipped.seed})")
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"),
                        help="where to train (default cpu; cuda trains in bf16 on a GPU)")
    parser.add_argument("--export", type=Path, metavar="DIR",
                        help="also write the runtime files (model.onnx, tokenizer, config) into DIR")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from toolscout.training.package import package_reranker
    from toolscout.training.reranker import RerankerPlan, add_dense_negatives, prepare_reranker, train_reranker

    if args.epochs <= 0 or args.batch_size <= 1:
        return fail("train-reranker", "--epochs must be > 0 and --batch-size >= 2")
    if not (args.embedding_model / "modules.json").is_file():
        return fail("train-reranker", f"{args.embedding_model} is not a sentence-transformers folder "
                    "(no modules.json); pass train-model's RUN/model")
    plan = RerankerPlan(
        data=str(args.data.resolve()),
        sources=tuple(s.strip() for s in args.sources.split(",") if s.strip()),
        epochs=args.epochs,
        batch_size=args.batch_size,
        seed=args.seed,
    )
    try:
        prepare_reranker(plan, args.out)
        add_dense_negatives(args.out, args.embedding_model, device=args.device)
        model_dir = train_reranker(plan, args.out, device=args.device)
        if args.export is not None:
            package_reranker(model_dir, args.export, max_tokens=plan.max_tokens)
    except (ToolscoutError, ValueError) as exc:
        return fail("train-reranker", str(exc))
    logger.info("trained reranker in %s", model_dir)
    return 0
