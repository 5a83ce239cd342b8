"""Index build time (empty and warm embedding cache) and warm search latency of the default engine.

    .venv/bin/python benchmarks/search_latency.py [DATASET_DIR] [--queries N] [--update-docs FILE]

Defaults to the 3,973-tool toolbench_stb catalog. The cold build uses a fresh cache folder, so it
includes exporting the model to ONNX and embedding every tool; the warm build is a new engine over
the same folder (what a restart over an unchanged catalog costs). Search latency is each
`search(query, limit=k)` call, query embedding included, after a few warm-up searches.
"""

from __future__ import annotations

import argparse
import logging
import sys
import tempfile
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

from docs_blocks import machine, publish, revision

from toolscout.eval import build_engine, engine_ranker, evaluate, load_dataset, sample_queries
from toolscout.search.settings import SearchSettings

DEFAULT_DATASET = Path(__file__).resolve().parents[2] / "shared" / "bench" / "toolbench_stb"
WARM_UP = 5


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dataset", nargs="?", type=Path, default=DEFAULT_DATASET)
    parser.add_argument("--queries", type=int, default=300, help="searches timed (default 300)")
    parser.add_argument("-k", type=int, default=10)
    parser.add_argument("--update-docs", type=Path, help="markdown file whose search_latency block to rewrite")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s: %(message)s")

    dataset = load_dataset(args.dataset)
    queries = sample_queries(dataset.queries, args.queries)
    rows = []
    with tempfile.TemporaryDirectory(prefix="toolscout-latency-") as cache:
        settings = replace(SearchSettings(), cache_dir=Path(cache))
        _, cold = build_engine(settings, dataset)
        engine, warm = build_engine(settings, dataset)
        rank = engine_ranker(engine)
        for query in queries[:WARM_UP]:
            rank(query.text, args.k)
        run = evaluate(rank, queries, args.k)
        rows.append(("hybrid (default)", cold, warm, run.summary))
        lexical = SearchSettings.lexical_only(cache_dir=Path(cache))
        engine, lexical_build = build_engine(lexical, dataset)
        run = evaluate(engine_ranker(engine), queries, args.k)
        rows.append(("lexical signals only", lexical_build, lexical_build, run.summary))

    lines = [
        f"{dataset.name}: {len(dataset.tools):,} tools, {len(queries)} searches at k = {args.k}. "
        f"Measured {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC on {machine()}, toolscout {revision()}.",
        "",
        "| engine | index build, empty cache (s) | index build, warm cache (s) | search p50 (ms) | search p95 (ms) |",
        "|---|---:|---:|---:|---:|",
    ]
    for label, cold, warm, summary in rows:
        lines.append(f"| {label} | {cold:.1f} | {warm:.2f} | {summary.latency_ms_p50:.1f} | {summary.latency_ms_p95:.1f} |")
    publish("\n".join(lines), args.update_docs, "search_latency")
    return 0


if __name__ == "__main__":
    sys.exit(main())
