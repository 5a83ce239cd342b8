"""Choose the intent signal's cosine floor for the model in use, by cross-validation over splits.

    .venv/bin/python benchmarks/intent_floor.py [--model MODEL] [--limit-queries 3000] [FLOOR ...]

For every floor and every way of splitting toollens_train into 5 folds (by request, by relevant
tool set, by tool set with only examples about other tools: `toolscout eval --split`), each fold
is searched with the other folds' requests as examples, and the folds are pooled. Prints Full
Recall@10 / MRR@10 per split and their sum over the three splits (the choice: the best sum).
Progress on stderr. Only toollens_train: etom_mcp and toolbench_stb are never tuned on.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path

from toolscout.eval import load_dataset, run_engine, sample_queries
from toolscout.eval.crossval import about_other_tools, cross_validation_folds, pooled
from toolscout.search.settings import SearchSettings

ROOT = Path(__file__).resolve().parents[1]
DATASET = ROOT.parent / "shared" / "bench" / "toollens_train"
SPLITS = ("request", "tools", "other-tools")
FOLDS = 5
K = 10


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("floors", nargs="*", type=float, default=[0.45, 0.5, 0.55, 0.6, 0.65, 0.7])
    parser.add_argument("--model", help="embedding model (installed package or folder); default: the shipped one")
    parser.add_argument("--limit-queries", type=int, default=3000)
    args = parser.parse_args()
    dataset = load_dataset(DATASET)
    base = SearchSettings() if args.model is None else SearchSettings(model=args.model)
    print("| floor | " + " | ".join(f"{split}: Full Recall / MRR" for split in SPLITS) + " | sum |")
    print("|---:|" + "---:|" * (len(SPLITS) + 1))
    for floor in args.floors:
        settings = dataclasses.replace(base, intent_min_similarity=floor)
        cells, total = [], 0.0
        for split in SPLITS:
            folds = cross_validation_folds(dataset.queries, FOLDS, by=split)
            if split == "other-tools":
                folds = [about_other_tools(fold) for fold in folds]
            limit = args.limit_queries // FOLDS
            runs = [run_engine(settings, dataset, K, queries=sample_queries(fold.queries, limit), examples=fold.examples)
                    for fold in folds]
            summary = pooled(runs, split).summary
            cells.append(f"{summary.full_recall:.3f} / {summary.mrr:.3f}")
            total += summary.full_recall + summary.mrr
            print(f"[intent_floor] floor {floor} split {split} done", file=sys.stderr, flush=True)
        print(f"| {floor:g} | " + " | ".join(cells) + f" | {total:.3f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
