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
from toolscout.commands._training import add_run_options, chosen_sources
from toolscout.errors import ToolscoutError

__all__ = ["register", "run"]

logger = logging.getLogger(__name__)


def register(subparsers: argparse._SubParsersAction) -> None:
    from toolscout.training.reranker import RerankerPlan

    shipped = RerankerPlan(data="")
    parser = subparsers.add_parser(
        "train-reranker",
        help="train the cross-encoder reranker (needs toolscout[train])",
        description="Train a cross-encoder that reads a request with each candidate tool, on licensed "
        "request -> tool pairs with the engine's own confusions as negatives, resumable, and export it "
        "for the runtime (int8 ONNX + tokenizer).",
    )
    add_run_options(parser, shipped, prepared="prepared rows", exported="model.onnx, tokenizer, config")
    parser.add_argument("--embedding-model", required=True, type=Path, metavar="DIR",
                        help="a sentence-transformers folder whose confusions become negatives "
                        "(e.g. train-model's RUN/model)")
    parser.add_argument("--epochs", type=float, default=shipped.epochs, help=f"passes (default {shipped.epochs:g})")
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
        sources=chosen_sources(args),
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
