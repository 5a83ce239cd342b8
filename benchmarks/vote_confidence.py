"""The confidence of answers the multilingual vote reaches, without and with the vote: served
requests of the dev sets that the language gate lets through (probability of English at most
0.05), searched on their own catalogs.

    .venv/bin/python benchmarks/vote_confidence.py [--every 5]

Per dev set: mean confidence, share whose first tool serves the request, the calibration error
over these served requests alone (10 equal bins; not docs/confidence.md's measure, which also
counts unserved requests) and the share the weak-match notice fires on. Needs the multilingual
extra. Prints markdown; progress on stderr.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

import numpy as np

from toolscout.eval.dev_sets import dev_sets
from toolscout.index.multilingual import english_probability, installed
from toolscout.search import SearchSettings, ToolSearch
from toolscout.search.multilingual import ENGLISH_AT_MOST
from toolscout.training.multilingual_confidence import expected_calibration_error

BENCH = Path(__file__).resolve().parents[2] / "shared" / "bench"
SETS = ("everyday", "devtools", "bundled_translated")


def measured(search: ToolSearch, queries: list) -> str:
    confidences, right, weak = [], [], []
    for query in queries:
        response = search.search(query.text, limit=5)
        confidences.append(response.match.confidence)
        right.append(response.hits[0].tool.id in {*query.relevant, *query.acceptable})
        weak.append(response.match.weak)
    c, y = np.array(confidences), np.array(right, dtype=float)
    return f"{c.mean():.3f} / {y.mean():.3f} / {expected_calibration_error(c, y):.3f} / {np.mean(weak):.2f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bench", type=Path, default=BENCH)
    parser.add_argument("--every", type=int, default=5, help="devtools: every n-th request the gate lets through")
    args = parser.parse_args()
    if not installed():
        print("vote_confidence: needs the multilingual extra (pip install 'toolscout[multilingual]')", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    print("| dev set | requests | without the vote: mean confidence / first right / ECE (served) / weak | with the vote |")
    print("|---|---:|---|---|")
    for dev in dev_sets(args.bench, toollens_limit=10):
        if dev.name not in SETS:
            continue
        queries = [q for q in dev.dataset.queries if english_probability(q.text) <= ENGLISH_AT_MOST]
        queries = queries[:: args.every] if dev.name == "devtools" else queries
        cells = []
        for mode in ("off", "on"):
            print(f"{dev.name}: {len(queries)} requests, vote {mode}", file=sys.stderr, flush=True)
            search = ToolSearch(SearchSettings(multilingual=mode))
            search.index(dev.dataset.tools)
            search.complete()
            cells.append(measured(search, queries))
        print(f"| {dev.name} | {len(queries)} | {cells[0]} | {cells[1]} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
