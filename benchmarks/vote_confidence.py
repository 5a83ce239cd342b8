"""The confidence of answers the multilingual vote reaches, without and with the vote: served
requests of the dev sets that the language gate lets through (probability of English at most
0.05), searched on their own catalogs.

    .venv/bin/python benchmarks/vote_confidence.py [--every 5]

Each request is searched twice, as benchmarks/confidence_eval.py does: on its set's catalog
(served) and on that catalog without its right tools (unserved: requests are taken in groups whose
right tools are at most a tenth of the catalog, and the catalog is indexed again without them).
Per dev set: served requests' mean confidence, the share whose first tool serves them and the share
the weak-match notice fires on (false alarms); unserved requests' mean confidence and the share it
fires on (recall), and the share caught by the best threshold that flags at most 5% of the served
ones (how well the confidence tells them apart, whatever the shipped threshold); ECE over both (10
equal bins). Needs the multilingual extra. Prints markdown;
progress on stderr.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from toolscout.catalog import ToolRecord
from toolscout.eval.datasets import Query
from toolscout.eval.dev_sets import dev_sets
from toolscout.index.multilingual import english_probability, installed
from toolscout.search import SearchSettings, ToolSearch
from toolscout.search.multilingual import ENGLISH_AT_MOST
from toolscout.training.confidence_fit import expected_calibration_error

BENCH = Path(__file__).resolve().parents[2] / "shared" / "bench"
SETS = ("everyday", "devtools", "bundled_translated")


def searched(search: ToolSearch, queries: Sequence[Query], served: bool) -> list[tuple[float, bool, bool]]:
    """(confidence, first serves, weak) per request."""
    out = []
    for query in queries:
        response = search.search(query.text, limit=5)
        right = served and response.hits[0].tool.id in {*query.relevant, *query.acceptable}
        out.append((response.match.confidence, right, response.match.weak))
    return out


def groups(queries: Sequence[Query], catalog: int) -> list[list[Query]]:
    """Consecutive requests whose right tools together are at most a tenth of the catalog."""
    out: list[list[Query]] = [[]]
    tools: set[str] = set()
    for query in queries:
        right = {*query.relevant, *query.acceptable}
        if out[-1] and len(tools | right) > catalog // 10:
            out.append([])
            tools = set()
        out[-1].append(query)
        tools |= right
    return out


def measured(tools: Sequence[ToolRecord], queries: Sequence[Query], mode: str) -> str:
    def engine(kept: Sequence[ToolRecord]) -> ToolSearch:
        search = ToolSearch(SearchSettings(multilingual=mode))
        search.index(kept)
        search.complete()
        return search

    served = searched(engine(tools), queries, True)
    unserved = []
    for group in groups(queries, len(tools)):
        dropped = {tool for query in group for tool in (*query.relevant, *query.acceptable)}
        unserved += searched(engine([t for t in tools if t.id not in dropped]), group, False)
    c = np.array([row[0] for row in served + unserved])
    y = np.array([row[1] for row in served + unserved], dtype=float)
    return (f"{np.mean([r[0] for r in served]):.3f} / {np.mean([r[1] for r in served]):.3f} / "
            f"{np.mean([r[2] for r in served]):.2f} | {np.mean([r[0] for r in unserved]):.3f} / "
            f"{np.mean([r[2] for r in unserved]):.2f} | {caught(served, unserved):.2f} | {expected_calibration_error(c, y):.3f}")


def caught(served: Sequence[tuple[float, bool, bool]], unserved: Sequence[tuple[float, bool, bool]],
           false_alarms: float = 0.05) -> float:
    """The share of unserved requests below the highest threshold that flags at most
    `false_alarms` of the served ones: how well the confidence tells them apart, whatever the
    shipped threshold."""
    ordered = np.sort([row[0] for row in served])
    threshold = ordered[int(len(ordered) * false_alarms)]
    return float(np.mean([row[0] < threshold for row in unserved]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bench", type=Path, default=BENCH)
    parser.add_argument("--every", type=int, default=5, help="devtools: every n-th request the gate lets through")
    args = parser.parse_args()
    if not installed():
        print("vote_confidence: needs the multilingual extra (pip install 'toolscout[multilingual]')", file=sys.stderr)
        return 2
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    print("| dev set | requests | vote | served: mean confidence / first right / weak | unserved: mean confidence / weak | "
          "unserved caught at 5% false alarms | ECE |")
    print("|---|---:|---|---|---|---:|---:|")
    for dev in dev_sets(args.bench, toollens_limit=10):
        if dev.name not in SETS:
            continue
        queries = [q for q in dev.dataset.queries if english_probability(q.text) <= ENGLISH_AT_MOST]
        queries = queries[:: args.every] if dev.name == "devtools" else queries
        for mode in ("off", "on"):
            print(f"{dev.name}: {len(queries)} requests, vote {mode}", file=sys.stderr, flush=True)
            print(f"| {dev.name} | {len(queries)} | {mode} | {measured(dev.dataset.tools, queries, mode)} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
