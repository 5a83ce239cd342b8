"""Options the two training commands share (`train-model`, `train-reranker`): where the data is,
the run folder, the sources, batch size, seed, device and export folder."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

__all__ = ["add_run_options", "chosen_sources"]


def add_run_options(parser: argparse.ArgumentParser, shipped: Any, *, prepared: str, exported: str) -> None:
    """The shared options, their defaults read from `shipped` (the plan the shipped model used);
    `prepared`/`exported` name what this command's run folder and export folder hold."""
    from toolscout.training.data import LICENSED_SOURCES

    parser.add_argument("--data", required=True, type=Path, metavar="DIR",
                        help="training folder with tools.jsonl and pairs.jsonl (e.g. ../shared/train)")
    parser.add_argument("--out", required=True, type=Path, metavar="DIR",
                        help=f"run folder: {prepared}, checkpoints, the trained model; re-run to resume")
    parser.add_argument("--sources", default=",".join(LICENSED_SOURCES),
                        help="comma-separated training sources (default: those whose licence allows a shipped model)")
    parser.add_argument("--batch-size", type=int, default=shipped.batch_size,
                        help=f"pairs per step (default {shipped.batch_size})")
    parser.add_argument("--seed", type=int, default=shipped.seed,
                        help=f"seed of sampling, mining and training (default {shipped.seed})")
    parser.add_argument("--device", default="cpu", choices=("cpu", "cuda"),
                        help="where to train (default cpu; cuda trains in bf16 on a GPU)")
    parser.add_argument("--export", type=Path, metavar="DIR",
                        help=f"also write the runtime files ({exported}) into DIR")


def chosen_sources(args: argparse.Namespace) -> tuple[str, ...]:
    """--sources as a tuple of names."""
    return tuple(s.strip() for s in args.sources.split(",") if s.strip())
