"""toolscout against the tool searches a user could pick instead, in one run on the same data.

    .venv/bin/python benchmarks/compare_peers.py [DATASET_DIR ...] [-k 10] [--limit-queries N]
        [--stackone-python PATH] [--skip NAME,...] [--update-docs docs/lab/benchmarks-log.md]

Per data set: toolscout (hybrid, lexical fusion, each signal alone), plain bm25s (the benchmark
README's reference), ToolPicker with toolscout's embedding model, and StackOne's local BM25 +
TF-IDF hybrid. Prints one markdown table per data set, plus per-slice tables where the queries
carry `level` or `group`. `--update-docs` rewrites this data set's generated block in the given
markdown file (between `<!-- compare_peers:NAME begin -->` and `<!-- compare_peers:NAME end -->`).
Installing the peers: see benchmarks/README.md. Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

from docs_blocks import machine, revision, update_block
from peers import PlainBM25, StackOnePeer, ToolPickerPeer, load_toolscout_encoder, timed

from toolscout.eval import Dataset, EvalRun, evaluate, load_dataset, sample_queries, score_query, summarize
from toolscout.eval.ablation import HYBRID, run_ablation
from toolscout.eval.datasets import slice_fields_of
from toolscout.eval.report import markdown_table, rows_of, slice_pivot
from toolscout.search.settings import SearchSettings

log = logging.getLogger("compare_peers")
ROOT = Path(__file__).resolve().parents[1]
DEFAULT_BENCH = ROOT.parent / "shared" / "bench"
DEFAULT_STACKONE = os.environ.get("STACKONE_PYTHON", "/tmp/peers/stackone-venv/bin/python")
PEERS = ("toolscout", "bm25s", "toolpicker", "stackone")
# The informative slices: etom_mcp by level, toolbench_stb by group.
SLICE_FIELDS = ("level", "group")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s: %(message)s")
    folders = args.datasets or sorted(p for p in DEFAULT_BENCH.iterdir() if (p / "queries.jsonl").is_file())
    skip = set(filter(None, args.skip.split(",")))
    # Taken once: the code measured is what this process imported at the start.
    measured = revision()
    encoder = None if "toolpicker" in skip else load_toolscout_encoder(args.model)
    for folder in folders:
        dataset = load_dataset(folder)
        queries = sample_queries(dataset.queries, args.limit_queries)
        runs, notes = compare(dataset, queries, args, skip, encoder)
        block = render(dataset, queries, runs, notes, args.k, measured)
        print(block, flush=True)
        if args.update_docs:
            update_block(args.update_docs, f"compare_peers:{dataset.name}", block)
    return 0


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("datasets", nargs="*", type=Path, help=f"benchmark folders (default: all in {DEFAULT_BENCH})")
    parser.add_argument("-k", type=int, default=10)
    parser.add_argument("--limit-queries", type=int, help="evaluate N queries spread evenly over each file")
    parser.add_argument("--model", help="embedding model for toolscout and ToolPicker (default: toolscout's)")
    parser.add_argument("--stackone-python", default=DEFAULT_STACKONE, help="python of the stackone-ai venv")
    parser.add_argument("--skip", default="", help=f"comma-separated systems to leave out: {', '.join(PEERS)}")
    parser.add_argument("--update-docs", type=Path, help="markdown file whose generated blocks to rewrite")
    return parser.parse_args(argv)


def compare(
    dataset: Dataset, queries, args: argparse.Namespace, skip: set[str], encoder: object
) -> tuple[list[EvalRun], list[str]]:
    runs: list[EvalRun] = []
    notes: list[str] = []
    k = args.k
    log.info("%s: %d tools, %d queries", dataset.name, len(dataset.tools), len(queries))
    if "toolscout" not in skip:
        # The wheel as shipped: the multilingual extra's vote never runs on these English sets, but
        # would embed every catalog a second time and count it in the index time.
        settings = SearchSettings(multilingual="off") if args.model is None else SearchSettings(model=args.model, multilingual="off")
        for run in run_ablation(settings, dataset, k, queries=queries, reporter=progress):
            label = "**toolscout (hybrid)**" if run.label == HYBRID else f"toolscout: {run.label}"
            runs.append(replace(run, label=label))
    if "bm25s" not in skip:
        peer, seconds = timed(PlainBM25, dataset.tools)
        runs.append(evaluate(peer, queries, k, label=peer.label, index_seconds=seconds))
    if "toolpicker" not in skip:
        log.info("ToolPicker: embedding %d tools", len(dataset.tools))
        peer, seconds = timed(ToolPickerPeer, dataset.tools, encoder)
        runs.append(evaluate(peer, queries, k, label=peer.label, index_seconds=seconds,
                             progress=lambda done, total: progress("ToolPicker", "queries", done, total)))
    if "stackone" not in skip:
        if not Path(args.stackone_python).is_file():
            notes.append(f"StackOne not run: no python at {args.stackone_python} (see benchmarks/README.md)")
        else:
            runs.append(run_stackone(args.stackone_python, dataset, queries, k))
    return runs, notes


def run_stackone(python: str, dataset: Dataset, queries, k: int) -> EvalRun:
    assert dataset.folder is not None
    peer = StackOnePeer(python, dataset.folder / "tools.jsonl")
    try:
        outcomes = []
        for done, query in enumerate(queries, start=1):
            ids, ms = peer.search(query.text, k)  # timed inside the peer's process: no pipe overhead
            outcomes.append(score_query(query, ids, k, ms))
            progress("StackOne", "queries", done, len(queries))
    finally:
        peer.close()
    return EvalRun(peer.label, k, tuple(outcomes), summarize(outcomes, k), peer.index_seconds)


def render(
    dataset: Dataset, queries, runs: list[EvalRun], notes: list[str], k: int, measured: str
) -> str:
    sample = "" if len(queries) == len(dataset.queries) else f" (an even sample of {len(dataset.queries):,})"
    lines = [
        f"### {dataset.name}",
        "",
        f"{len(dataset.tools):,} tools, {len(queries):,} queries{sample}, k = {k}. Measured "
        f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC on {machine()}, toolscout {measured}; "
        "latency is per search call, one query at a time, index build excluded (its time is the "
        "last column).",
        "",
        markdown_table(rows_of(runs)),
    ]
    lines += [f"\n{note}" for note in notes]
    for field in slice_fields_of(queries):
        if field in SLICE_FIELDS:
            for metric, title in (("full_recall", "Full Recall"), ("mrr", "MRR"), ("recall", "Recall")):
                lines += ["", f"{title}@{k} by {field}:", "", slice_pivot(runs, field, metric)]
    return "\n".join(lines)


def progress(label: str, phase: str, done: int, total: int) -> None:
    if done == total or done % max(1, total // 5) == 0:
        log.info("%s: %s %d/%d", label, phase, done, total)


if __name__ == "__main__":
    sys.exit(main())
