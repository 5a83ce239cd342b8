"""`toolscout train-model`: fine-tune the tool-retrieval embedding model (needs `toolscout[train]`).

One command from a fresh clone reproduces the shipped model: it balances the training pairs, mines
hard negatives with toolscout's own keyword search, fine-tunes all-MiniLM-L6-v2 with checkpoints
(run it again with the same options to resume after an interruption), then exports the int8 ONNX
file, tokenizer and model card the runtime loads. Progress goes to stderr.
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
    from toolscout.training.fit import TrainingPlan

    # The shipped model's settings, from one place: the plan's defaults.
    shipped = TrainingPlan(data="")

    parser = subparsers.add_parser(
        "train-model",
        help="fine-tune the tool-retrieval embedding model (needs toolscout[train])",
        description="Fine-tune all-MiniLM-L6-v2 on request -> tool pairs with in-batch and mined hard "
        "negatives, resumable from checkpoints, and export it for the runtime (int8 ONNX + tokenizer).",
    )
    add_run_options(parser, shipped, prepared="prepared pairs", exported="model.onnx, tokenizer, card")
    parser.add_argument("--steps", type=int, default=shipped.steps,
                        help=f"optimiser steps (default {shipped.steps})")
    parser.add_argument("--learning-rate", type=float, default=shipped.learning_rate,
                        help=f"peak learning rate (default {shipped.learning_rate:g})")
    parser.add_argument("--per-tool", type=int, default=shipped.per_tool,
                        help=f"at most this many requests per tool (default {shipped.per_tool})")
    parser.add_argument("--developer-per-tool", type=int, default=shipped.developer_per_tool,
                        help=f"at most this many requests per developer command (default {shipped.developer_per_tool})")
    parser.add_argument("--warmup-ratio", type=float, default=shipped.warmup_ratio,
                        help=f"fraction of the steps the learning rate warms up over (default {shipped.warmup_ratio:g})")
    parser.add_argument("--start-from", metavar="MODEL",
                        help="go on training from an earlier version instead of the base model: a "
                        "shipped int8 ONNX model (e.g. src/toolscout/index/model/model.onnx) or, "
                        "better, an earlier run's float model folder (RUN/model)")
    parser.add_argument("--precision", choices=("auto", "bf16", "fp32"), default="auto",
                        help="bf16 autocast or float32 (default auto: bf16 on a GPU and on a CPU with "
                        "avx512_bf16/amx_bf16, about 2.8x faster there than float32)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from toolscout.training.fit import TrainingPlan, train
    from toolscout.training.package import package_model

    if args.steps <= 0 or args.batch_size <= 1:
        return fail("train-model", "--steps must be >= 1 and --batch-size >= 2")
    plan = TrainingPlan(
        data=str(args.data.resolve()),
        sources=chosen_sources(args),
        steps=args.steps,
        batch_size=args.batch_size,
        learning_rate=args.learning_rate,
        per_tool=args.per_tool,
        developer_per_tool=args.developer_per_tool,
        warmup_ratio=args.warmup_ratio,
        seed=args.seed,
        start_from=str(Path(args.start_from).resolve()) if args.start_from else None,
    )
    try:
        bf16 = None if args.precision == "auto" else args.precision == "bf16"
        model_dir = train(plan, args.out, device=args.device, bf16=bf16)
        if args.export is not None:
            package_model(args.out, model_dir, args.export)
    except (ToolscoutError, ValueError) as exc:
        return fail("train-model", str(exc))
    logger.info("trained model in %s", model_dir)
    return 0
