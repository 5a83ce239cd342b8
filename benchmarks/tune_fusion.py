"""Fit fusion (signal weights and RRF k) on several data sets together, and cross-check it.

    .venv/bin/python benchmarks/tune_fusion.py [--model MODEL] [--limit-queries N] [--out weights.json]
        [DATASET_DIR ...]

Each set's per-signal rankings are recorded once (`toolscout.eval.tuning.record`), then
coordinate ascent fits weights and k on the MEAN of the sets' Full Recall@10 + MRR@10, so a large
set does not drown a small one. Leave-one-set-out: fitted on all sets but one, scored on that one,
for every set; then fitted on all of them (what `--out` writes, in `toolscout tune`'s format).
Prints markdown tables; progress goes to stderr.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import sys
from pathlib import Path

from toolscout.eval import load_dataset, sample_queries
from toolscout.eval.runner import build_engine
from toolscout.eval.tuning import RRF_K, Replay, coordinate_ascent, engine_rankings, record, score
from toolscout.search.settings import SIGNALS, SearchSettings

log = logging.getLogger("tune_fusion")
ROOT = Path(__file__).resolve().parents[1]
DEFAULT_SETS = [ROOT.parent / "shared" / "bench" / name for name in ("etom_mcp", "toolbench_stb", "toollens_train")]
# Signals that run without examples or expansions (the learned ones have nothing to rank here).
TUNED = ("bm25_name", "bm25_description", "tfidf", "dense")
CUT = 10


def record_set(folder: Path, settings: SearchSettings, limit: int | None) -> tuple[str, Replay]:
    dataset = load_dataset(folder)
    queries = sample_queries(dataset.queries, limit)
    recording = dataclasses.replace(settings, weights={name: 1.0 for name in TUNED}, exact_name_boost=False)
    engine, seconds = build_engine(recording, dataset, progress=lambda d, t: log.info("%s: embedded %d/%d", dataset.name, d, t))
    depth = max(recording.candidates, 4 * CUT)

    def progress(done: int, total: int) -> None:
        if done == total or done % max(1, total // 5) == 0:
            log.info("%s: recorded %d/%d", dataset.name, done, total)

    return dataset.name, record(engine_rankings(engine), queries, [s for s in SIGNALS if s in TUNED], depth, progress)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("datasets", nargs="*", type=Path, default=DEFAULT_SETS)
    parser.add_argument("--model", help="embedding model (installed package or folder); default: the shipped one")
    parser.add_argument("--limit-queries", type=int, default=3000, help="queries per set, spread over it (default 3000)")
    parser.add_argument("--out", type=Path, help="write the weights fitted on all sets here (JSON)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(message)s")
    settings = SearchSettings() if args.model is None else SearchSettings(model=args.model)
    replays = dict(record_set(folder, settings, args.limit_queries) for folder in args.datasets)
    start_weights = {name: settings.weights.get(name, 0.0) for name in TUNED}
    params = [*TUNED, RRF_K]

    print(f"model: {args.model or 'default'}; objective: mean over sets of Full Recall@{CUT} + MRR@{CUT}\n")
    print("| held-out set | queries | Full Recall before | after | MRR before | after | fitted on the others |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for name, held in replays.items():
        others = [r for other, r in replays.items() if other != name]
        fit = coordinate_ascent(others, start_weights, settings.rrf_k, params=params, cut=CUT)
        before = score(held, start_weights, settings.rrf_k, CUT)
        after = score(held, fit.weights, fit.rrf_k, CUT)
        print(f"| {name} | {len(held)} | {before.full_recall:.3f} | {after.full_recall:.3f} | {before.mrr:.3f} | "
              f"{after.mrr:.3f} | k={fit.rrf_k:g} {_short(fit.weights)} |")
    final = coordinate_ascent(list(replays.values()), start_weights, settings.rrf_k, params=params, cut=CUT)
    print(f"\nfitted on all sets: k={final.rrf_k:g} {_short(final.weights)}\n")
    print("| set | Full Recall shipped | fitted on all | MRR shipped | fitted on all |")
    print("|---|---:|---:|---:|---:|")
    for name, replay in replays.items():
        before = score(replay, start_weights, settings.rrf_k, CUT)
        after = score(replay, final.weights, final.rrf_k, CUT)
        print(f"| {name} | {before.full_recall:.3f} | {after.full_recall:.3f} | {before.mrr:.3f} | {after.mrr:.3f} |")
    if args.out:
        document = {"weights": {n: w for n, w in final.weights.items() if w > 0}, "rrf_k": final.rrf_k,
                    "how": {"sets": list(replays), "queries_per_set": args.limit_queries, "model": args.model or "default"}}
        args.out.write_text(json.dumps(document, indent=2) + "\n")
    return 0


def _short(weights: dict[str, float]) -> str:
    return " ".join(f"{name}={weight:g}" for name, weight in weights.items() if weight)


if __name__ == "__main__":
    sys.exit(main())
