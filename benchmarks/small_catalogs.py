"""Fusion on small catalogs: the dev sets cut into catalogs of about N tools, beside the bundled set.

    .venv/bin/python benchmarks/small_catalogs.py [--size 70] [--limit-queries 1500] [--model MODEL]

A user's registry of a few servers holds tens of tools, not thousands; the bundled registry holds
69. This asks whether the best fusion depends on catalog size: each dev set's servers are shuffled
(seeded) and grouped into catalogs of about `--size` tools, every query whose tools all lie in one
catalog is searched there, and the per-signal rankings are replayed (`toolscout.eval.tuning`) under
the shipped weights, heavier dense weights, each side alone, a fit on the small catalogs of all
three dev sets, and leave-one-set-out fits. The bundled set is scored with every row, never fitted
on. Prints markdown (Full Recall@10 / MRR@10 / top-1); progress on stderr.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import random
import sys
from pathlib import Path

import numpy as np

from toolscout.eval import load_dataset, sample_queries
from toolscout.eval.datasets import Dataset, Query
from toolscout.eval.runner import build_engine
from toolscout.eval.tuning import RRF_K, Replay, coordinate_ascent, engine_rankings, fused_scores, record, score
from toolscout.search.settings import SearchSettings

log = logging.getLogger("small_catalogs")
ROOT = Path(__file__).resolve().parents[1]
DEV_SETS = [ROOT.parent / "shared" / "bench" / name for name in ("etom_mcp", "toolbench_stb", "toollens_train")]
BUNDLED = ROOT / "benchmarks" / "data" / "bundled"
SIGNALS = ("bm25_name", "bm25_description", "tfidf", "dense")
DEPTH = 40
CUT = 10


def catalogs(dataset: Dataset, size: int, seed: int = 7) -> list[list]:
    """Whole servers, shuffled, grouped until each group holds at least `size` tools."""
    by_server: dict[str, list] = {}
    for tool in dataset.tools:
        by_server.setdefault(tool.server, []).append(tool)
    servers = sorted(by_server)
    random.Random(seed).shuffle(servers)
    groups, current = [], []
    for server in servers:
        current.extend(by_server[server])
        if len(current) >= size:
            groups.append(current)
            current = []
    if current:
        groups.append(current)
    return groups


def replay(settings: SearchSettings, name: str, tools: list, queries: list[Query]) -> Replay:
    engine, _ = build_engine(settings, Dataset(name, tuple(tools), tuple(queries)))
    return record(engine_rankings(engine), queries, SIGNALS, DEPTH)


def top1(recorded: Replay, weights: dict[str, float], rrf_k: float) -> float:
    fused = fused_scores(recorded, weights, rrf_k)
    return float(recorded.answers[np.arange(len(recorded)), fused.argmax(axis=1)].mean())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=70, help="tools per catalog, about (default 70)")
    parser.add_argument("--limit-queries", type=int, default=1500, help="queries per dev set (default 1500)")
    parser.add_argument("--model", help="embedding model; default: the shipped one")
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(message)s")
    logging.getLogger("bm25s").setLevel(logging.WARNING)
    base = SearchSettings() if args.model is None else SearchSettings(model=args.model)
    recording = dataclasses.replace(base, weights=dict.fromkeys(SIGNALS, 1.0), exact_name_boost=False)

    replays: dict[str, Replay] = {}
    counts: dict[str, str] = {}
    for folder in DEV_SETS:
        dataset = load_dataset(folder)
        queries = sample_queries(dataset.queries, args.limit_queries)
        parts = []
        for tools in catalogs(dataset, args.size):
            ids = {tool.id for tool in tools}
            inside = [q for q in queries if all(tool_id in ids for group in q.relevant_groups for tool_id in group[:1])]
            if inside:
                parts.append(replay(recording, dataset.name, tools, inside))
        replays[dataset.name] = Replay.concat(parts)
        counts[dataset.name] = f"{len(replays[dataset.name])} of {len(queries)} queries, {len(parts)} catalogs"
        log.info("%s: %s", dataset.name, counts[dataset.name])
    bundled = load_dataset(BUNDLED)
    bundled_replay = replay(recording, "bundled", list(bundled.tools), list(bundled.queries))

    shipped = {name: base.weights.get(name, 0.0) for name in SIGNALS}
    rows: list[tuple[str, dict[str, float], float]] = [("shipped", shipped, base.rrf_k)]
    rows += [(f"dense x{factor:g}", {**shipped, "dense": shipped["dense"] * factor}, base.rrf_k) for factor in (1.5, 2, 3, 4)]
    rows.append(("dense alone", {"dense": 1.0}, base.rrf_k))
    rows.append(("keyword signals alone", {**shipped, "dense": 0.0}, base.rrf_k))
    fit = coordinate_ascent(list(replays.values()), shipped, base.rrf_k, params=[*SIGNALS, RRF_K], cut=CUT)
    label = " ".join(f"{n}={w:g}" for n, w in fit.weights.items() if w)
    rows.append((f"fitted on the three (k={fit.rrf_k:g} {label})", fit.weights, fit.rrf_k))

    names = [*replays, "bundled (69 tools)"]
    print(f"Catalogs of about {args.size} tools: " + "; ".join(f"{n} {c}" for n, c in counts.items()) + "\n")
    print("| fusion | " + " | ".join(names) + " |")
    print("|---|" + "---:|" * len(names))
    for label, weights, rrf_k in rows:
        cells = []
        for recorded in [*replays.values(), bundled_replay]:
            s = score(recorded, weights, rrf_k, CUT)
            cells.append(f"{s.full_recall:.3f} / {s.mrr:.3f} / {top1(recorded, weights, rrf_k):.3f}")
        print(f"| {label} | " + " | ".join(cells) + " |")

    print("\n| held-out set | shipped | fitted on the other two | fit |")
    print("|---|---:|---:|---|")
    for held, recorded in replays.items():
        others = [r for name, r in replays.items() if name != held]
        fit = coordinate_ascent(others, shipped, base.rrf_k, params=[*SIGNALS, RRF_K], cut=CUT)
        before, after = score(recorded, shipped, base.rrf_k, CUT), score(recorded, fit.weights, fit.rrf_k, CUT)
        label = " ".join(f"{n}={w:g}" for n, w in fit.weights.items() if w)
        print(f"| {held} | {before.full_recall:.3f} / {before.mrr:.3f} | {after.full_recall:.3f} / {after.mrr:.3f} | "
              f"k={fit.rrf_k:g} {label} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
