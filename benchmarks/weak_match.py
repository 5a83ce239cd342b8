"""Precision and recall of the weak-match notice (`toolscout.search.confidence`).

Runs the default engine on etom_mcp's tools with its feasible requests (queries.jsonl: a tool
serves each) and its infeasible ones (queries_infeasible.jsonl: none does), and counts how often
`SearchResponse.match.weak` is set: recall = infeasible requests flagged, precision = flagged
requests that are infeasible, and the false-alarm rate on feasible ones. The thresholds were
chosen on this split (`--cv` re-runs that choice with 2-fold cross-validation over random
halves and reports the held-out numbers). Then the same on the bundled-registry dev set
(benchmarks/data/bundled, every request feasible; never used to choose), where every flag is a
false alarm. Prints markdown tables; progress on stderr.

    .venv/bin/python benchmarks/weak_match.py [--etom ../shared/bench/etom_mcp] [--cv]
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from pathlib import Path

import numpy as np

from toolscout.eval import build_engine, load_dataset
from toolscout.search import confidence
from toolscout.search.settings import SearchSettings

HERE = Path(__file__).resolve().parent
BUNDLED = HERE / "data" / "bundled"


def log(message: str) -> None:
    print(f"[weak_match] {message}", file=sys.stderr, flush=True)


def requests(path: Path) -> list[str]:
    return [json.loads(line)["query"] for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def strengths(folder: Path, files: list[str]) -> dict[str, list[tuple[float, float]]]:
    engine, seconds = build_engine(SearchSettings(), load_dataset(folder))
    log(f"{folder}: indexed in {seconds:.0f} s")
    out: dict[str, list[tuple[float, float]]] = {}
    for name in files:
        rows = []
        for text in requests(folder / name):
            match = engine.search(text, limit=5).match
            rows.append((match.best_cosine, match.gap) if match else (1.0, 1.0))
        out[name] = rows
    return out


def weak(rows: np.ndarray, cosine: float, gap: float) -> np.ndarray:
    return (rows[:, 0] < cosine) & (rows[:, 1] < gap)


def row(label: str, feasible: np.ndarray, infeasible: np.ndarray, cosine: float, gap: float) -> str:
    false_alarms, caught = int(weak(feasible, cosine, gap).sum()), int(weak(infeasible, cosine, gap).sum())
    precision = caught / (caught + false_alarms) if caught + false_alarms else float("nan")
    return (f"| {label} | {cosine:.2f} / {gap:.3f} | {precision:.3f} | {caught / len(infeasible):.3f} ({caught}/{len(infeasible)}) "
            f"| {false_alarms / len(feasible):.4f} ({false_alarms}/{len(feasible)}) |")


def choose(feasible: np.ndarray, infeasible: np.ndarray, max_false_alarms: float = 0.002) -> tuple[float, float]:
    """The thresholds with the best recall whose false-alarm rate stays within the bound."""
    best = None
    for cosine, gap in itertools.product(np.arange(0.15, 0.42, 0.01), np.arange(0.02, 0.16, 0.005)):
        fa, rec = weak(feasible, cosine, gap).mean(), weak(infeasible, cosine, gap).mean()
        if fa <= max_false_alarms and (best is None or (rec, -fa) > best[0]):
            best = ((rec, -fa), (round(float(cosine), 2), round(float(gap), 3)))
    assert best is not None
    return best[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--etom", type=Path, default=HERE.parent.parent / "shared" / "bench" / "etom_mcp")
    parser.add_argument("--cv", action="store_true", help="also choose the thresholds by 2-fold cross-validation")
    args = parser.parse_args()
    etom = strengths(args.etom, ["queries.jsonl", "queries_infeasible.jsonl"])
    feasible, infeasible = np.array(etom["queries.jsonl"]), np.array(etom["queries_infeasible.jsonl"])
    cosine, gap = confidence.MAX_COSINE, confidence.MAX_GAP
    print("| etom_mcp | best cosine / gap below | precision | recall | false alarms (feasible) |")
    print("|---|---|---|---|---|")
    print(row("shipped thresholds, all requests", feasible, infeasible, cosine, gap))
    # What the shipped thresholds should be for the model in use (toolscout.search.confidence).
    print(row("chosen on all requests", feasible, infeasible, *choose(feasible, infeasible)))
    if args.cv:
        rng = np.random.default_rng(0)
        fold_f, fold_i = rng.permutation(len(feasible)) % 2, rng.permutation(len(infeasible)) % 2
        for k in (0, 1):
            c, g = choose(feasible[fold_f == k], infeasible[fold_i == k])
            print(row(f"chosen on half {k}, held-out half", feasible[fold_f != k], infeasible[fold_i != k], c, g))
    if (BUNDLED / "queries.jsonl").exists():
        bundled = strengths(BUNDLED, [f for f in ("queries.jsonl", "queries_translated.jsonl") if (BUNDLED / f).exists()])
        print()
        print("| bundled dev set (all feasible) | requests | flagged (false alarms) |")
        print("|---|---|---|")
        for name, rows in bundled.items():
            flagged = int(weak(np.array(rows), cosine, gap).sum())
            print(f"| {name} | {len(rows)} | {flagged} ({flagged / len(rows):.3f}) |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
