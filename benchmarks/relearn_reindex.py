"""Re-indexing after learning: one tool's learned phrases change, the rest of the catalog does not.

Learning from use only ever changes tools' `expansion` field; every replica then re-indexes the
catalog. This times that re-index and counts the bytes it writes to the content store (catalog
index parts and TF-IDF fits, the machine's own SQLite cache store), on the catalog of
`scale_100k.py` where every tenth tool already has learned phrases (training requests,
shared/train/pairs.jsonl, three per tool, assigned in turn: what is measured is the cost, not
their fit to the tool).

    PYTHONPATH=src python benchmarks/relearn_reindex.py --tools 100000

Rows: the first index (everything built and kept), the re-index by the same engine after one
tool gained a phrase, and a restart (a new engine over the same cache folder) over the learned
catalog, which reads everything back. For each: its time, the part of it spent building TF-IDF
retrievers (their documents, key, fit and write; reading a kept fit back is not counted), and the
bytes written to the store (catalog index parts, TF-IDF fits). Prints one table.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from scale_100k import SHARED, catalog, load_average, print_table

from toolscout.catalog import ToolRecord
from toolscout.index.tfidf import TfidfRetriever
from toolscout.search import ToolSearch
from toolscout.search.settings import SearchSettings
from toolscout.state.fits import StoredFits

# Bytes handed to the store by kind of kept content ("catalog", "tfidf"), and seconds spent in
# TF-IDF retrievers (their documents, key, fit or read back, and write), since `reset`.
WRITTEN: dict[str, int] = {}
TFIDF_SECONDS = [0.0]


def _measured() -> None:
    write, tfidf = StoredFits.write, TfidfRetriever.__init__

    def counted(self: StoredFits, key: str, fit: bytes) -> None:
        WRITTEN[self._kind] = WRITTEN.get(self._kind, 0) + len(fit)
        write(self, key, fit)

    def timed(self: TfidfRetriever, *args: Any, **kwargs: Any) -> None:
        started = time.perf_counter()
        tfidf(self, *args, **kwargs)
        TFIDF_SECONDS[0] += time.perf_counter() - started

    StoredFits.write = counted  # type: ignore[method-assign]
    TfidfRetriever.__init__ = timed  # type: ignore[method-assign]


def learned(tools: list[ToolRecord]) -> list[ToolRecord]:
    requests = [json.loads(line)["query"] for line in (SHARED / "pairs.jsonl").open(encoding="utf-8")]
    out, n = [], 0
    for i, tool in enumerate(tools):
        if i % 10 == 0:
            phrases = tuple(requests[(n + j) % len(requests)] for j in range(3))
            n += 3
            tool = replace(tool, expansion=phrases)
        out.append(tool)
    return out


def timed_index(engine: ToolSearch, tools: list[ToolRecord]) -> float:
    WRITTEN.clear()
    TFIDF_SECONDS[0] = 0.0
    started = time.perf_counter()
    engine.index(tools)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", type=int, default=100_000)
    args = parser.parse_args()
    _measured()
    tools = learned(catalog(args.tools))
    changed = list(tools)
    middle = len(tools) // 2
    changed[middle] = replace(tools[middle], expansion=(*tools[middle].expansion, "one more learned request"))
    rows = [("tools", f"{len(tools):,}, {sum(1 for t in tools if t.expansion):,} with learned phrases")]
    with tempfile.TemporaryDirectory(prefix="toolscout-relearn-") as cache:
        settings = replace(SearchSettings(), cache_dir=Path(cache))
        engine = ToolSearch(settings)
        for label, engine_, catalog_ in (
            ("first index (built and kept)", engine, tools),
            ("re-index after one tool's phrases changed", engine, changed),
            ("restart over the learned catalog (read back)", ToolSearch(settings), changed),
        ):
            load = load_average()
            spent = timed_index(engine_, catalog_)
            rows.append((f"{label}: time (load {load}), of which TF-IDF", f"{spent:.1f} s, {TFIDF_SECONDS[0]:.1f} s"))
            written = [WRITTEN.get(kind, 0) / 1e6 for kind in ("catalog", "tfidf")]
            rows.append((f"{label}: written, catalog index + TF-IDF fit", "{:.1f} + {:.1f} MB".format(*written)))
    rows.append(("load average at the end (1 / 5 / 15 min)", f"{load_average()} on {os.cpu_count()} cores"))
    print_table(rows)


if __name__ == "__main__":
    sys.exit(main())
