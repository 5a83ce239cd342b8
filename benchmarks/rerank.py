"""The reranker measured: quality without / with it by depth N and combination mode on every dev set,
and search latency at 70, 4k and 20k tools as a ratio to one query encode in the same run.

    .venv/bin/python benchmarks/rerank.py --reranker bundled
    .venv/bin/python benchmarks/rerank.py --reranker runs/reranker-model --limit 100   # quick look
    .venv/bin/python benchmarks/rerank.py --skip quality --ranker RANKER.json   # as the ranker's column

Quality: each query is searched once by the default engine without the reranker (the fused
ranking); the reranker scores the first max(N) tools after any exact name match, once; every
(mode, N) is then that ranking passed through `toolscout.search.rerank.reranked`, the function the
engine itself applies. A pair's score does not depend on the other pairs (one unpadded run each), so
this equals searching with each setting; the script checks it against engines built with the
reranker on the first queries of each set. Signals hand 160 candidates each to fusion (a search of
limit 40 does so; the default engine, 50 at limit 10). toollens_train is a fixed sample (`--toollens`, evenly
spread over the file, default 1,000 of 16,893 queries); the bundled set is its English queries.

Latency: `search(query, limit=10)` of engines built with the reranker off and at each N, warm,
over `--latency-queries` requests, and the query encoder's `encode([query])` over the same requests
in the same run; with `--ranker` (a ranker.json that reads the reranker's score), engines with the
reranker off (the ranker fitted without it stands in) and on as that ranker's column
(`rerank_mode="feature"`). 70 tools: the bundled set; 4k: toolbench_stb; 20k: every dev set's tools together,
copied under new ids up to 20,000 (same documents, so their embeddings come from the cache; a
signal's cost is the catalog's size; toolbench_stb's requests). `--sizes` picks among them.
Embeddings go to the user cache, as the engine's do. Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
from docs_blocks import machine, revision, update_block

from toolscout.catalog import ToolRecord
from toolscout.eval import Dataset, Query, build_engine, engine_ranker, evaluate, load_dataset, load_queries, sample_queries
from toolscout.eval import metrics
from toolscout.eval.dev_sets import load_bundled_tools
from toolscout.index.cross_encoder import load_cross_encoder
from toolscout.index.dense import load_encoder
from toolscout.index.model_files import resolve_reranker
from toolscout.index.text import dense_document
from toolscout.search import SearchSettings, ToolSearch
from toolscout.search.engine import EXACT_NAME
from toolscout.search.rerank import reranked
from toolscout.search.settings import RERANK_MODES

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT.parent / "shared" / "bench"
BUNDLED = ROOT / "benchmarks" / "data" / "bundled"
# The user cache (None): the dev sets' embeddings are usually there already.
CACHE: Path | None = None
K = 10
# Tools fetched per query: the deepest N plus room for exact name matches pinned ahead of them.
FETCH = 40
CHECKED = 5  # queries per set searched again by engines with the reranker on, to check the replay
WARM_UP = 5


def log(message: str) -> None:
    print(f"[rerank] {message}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Setting:
    mode: str
    depth: int
    weight: float = 1.0

    @property
    def label(self) -> str:
        weight = f", weight {self.weight:g}" if self.mode == "blend" else ""
        return f"{self.mode} top {self.depth}{weight}"


@dataclass(frozen=True)
class Scores:
    top1: float
    mrr: float
    recall5: float
    full10: float

    @classmethod
    def of(cls, rankings: Sequence[tuple[Query, Sequence[str]]]) -> Scores:
        def mean(values: list[float]) -> float:
            return float(np.mean(values)) if values else float("nan")

        return cls(
            top1=mean([float(bool(ids) and ids[0] in q.answers) for q, ids in rankings]),
            mrr=mean([metrics.mrr(ids, q, K) for q, ids in rankings]),
            recall5=mean([float(any(i in q.answers for i in ids[:5])) for q, ids in rankings]),
            full10=mean([metrics.full_recall(ids, q, K) for q, ids in rankings]),
        )


def datasets(args: argparse.Namespace) -> list[Dataset]:
    found = []
    for name in ("everyday", "etom_mcp", "toolbench_stb", "toollens_train"):
        if args.sets and name not in args.sets:
            continue
        dataset = load_dataset(BENCH / name)
        if name == "toollens_train":
            dataset = replace(dataset, queries=sample_queries(dataset.queries, args.toollens))
        found.append(dataset)
    if not args.sets or "bundled" in args.sets:
        found.append(Dataset(name="bundled", tools=load_bundled_tools(BUNDLED / "tools.jsonl"),
                         queries=load_queries(BUNDLED / "queries.jsonl")))
    if args.limit:
        found = [replace(d, queries=sample_queries(d.queries, args.limit)) for d in found]
    return found


def replay(engine: ToolSearch, scorer, queries: Sequence[Query], settings: list[Setting], base: SearchSettings):
    """Per setting (None: without the reranker), each query's top K."""
    deepest = max(s.depth for s in settings)
    rankings: dict[Setting | None, list[tuple[Query, list[str]]]] = {None: [], **{s: [] for s in settings}}
    for done, query in enumerate(queries, start=1):
        hits = engine.search(query.text, limit=FETCH).hits
        ids = [hit.tool.id for hit in hits]
        order = list(range(len(hits)))
        fused = {i: hit.score for i, hit in enumerate(hits)}
        head = [i for i in order if EXACT_NAME not in hits[i].ranks][:deepest]
        rescored = scorer.scores(query.text, [dense_document(hits[i].tool) for i in head])
        rankings[None].append((query, ids[:K]))
        for setting in settings:
            candidates = dict(zip(head[: setting.depth], map(float, rescored[: setting.depth])))
            options = replace(base, rerank_mode=setting.mode, rerank_weight=setting.weight, rerank_depth=setting.depth)
            new_order, _ = reranked(order, fused, candidates, options)
            rankings[setting].append((query, [ids[i] for i in new_order[:K]]))
        if done % 100 == 0 or done == len(queries):
            log(f"  {done}/{len(queries)} queries")
    return rankings


def check_replay(dataset: Dataset, rankings, settings: list[Setting], base: SearchSettings, spec: str) -> str:
    """How many of the first queries an engine built with the reranker on ranks as the replay did,
    in the first min(N, K) places (those the reranker decides)."""
    queries = dataset.queries[:CHECKED]
    same = total = 0
    for setting in (settings[0], settings[-1]):
        engine = ToolSearch(replace(base, reranker=spec, rerank_mode=setting.mode, rerank_depth=setting.depth,
                                    rerank_weight=setting.weight))
        engine.index(dataset.tools)
        engine.complete()
        places = min(setting.depth, K)
        for (query, replayed), _ in zip(rankings[setting], queries):
            live = [hit.tool.id for hit in engine.search(query.text, limit=K).hits]
            total += 1
            if live[:places] == replayed[:places]:
                same += 1
            else:
                log(f"{dataset.name} {query.id} {setting.label}: replay {replayed[:places]} != engine {live[:places]}")
    return f"the replay matched engines with the reranker on for {same} of {total} checked searches"


def emit(lines: list[str], new: list[str]) -> None:
    """Print `new` at once (a long run keeps what it measured if stopped) and keep it for the docs."""
    print("\n".join(new), flush=True)
    lines += new


def quality(args: argparse.Namespace, spec: str, scorer) -> list[str]:
    # Each signal's candidates as a search of limit FETCH takes them (4 x limit), for the replay and
    # the engines that check it alike: fusion scores depend on how deep the signals are read.
    base = replace(SearchSettings(), reranker=None, cache_dir=CACHE, candidates=4 * FETCH)
    settings = [Setting(mode, depth, weight) for mode in args.modes for depth in args.depths
                for weight in (args.blend_weights if mode == "blend" else (1.0,))]
    lines = []
    for dataset in datasets(args):
        log(f"{dataset.name}: {len(dataset.tools):,} tools, {len(dataset.queries):,} queries")
        engine, _ = build_engine(base, dataset)
        started = time.perf_counter()
        rankings = replay(engine, scorer, dataset.queries, settings, base)
        log(f"{dataset.name}: replayed in {time.perf_counter() - started:.0f} s; checking against the engine")
        checked = check_replay(dataset, rankings, settings, base, spec)
        table = [
            "",
            f"**{dataset.name}** ({len(dataset.tools):,} tools, {len(dataset.queries):,} queries; {checked})",
            "",
            "| reranker | top-1 | MRR@10 | Recall@5 | Full Recall@10 |",
            "|---|---:|---:|---:|---:|",
        ]
        without = Scores.of(rankings[None])
        for setting, ranking in rankings.items():
            scores = Scores.of(ranking)
            label = "off (fused ranking)" if setting is None else setting.label
            cells = []
            for name in ("top1", "mrr", "recall5", "full10"):
                value, delta = getattr(scores, name), getattr(scores, name) - getattr(without, name)
                cells.append(f"{value:.3f}" if setting is None else f"{value:.3f} ({delta:+.3f})")
            table.append(f"| {label} | " + " | ".join(cells) + " |")
        levels = sorted({q.level for q in dataset.queries if q.level is not None})
        if levels:
            table += ["", f"{dataset.name}, Full Recall@10 by level:", "",
                      "| reranker | " + " | ".join(f"L{level}" for level in levels) + " |",
                      "|---|" + "---:|" * len(levels)]
            for setting, ranking in rankings.items():
                label = "off (fused ranking)" if setting is None else setting.label
                cells = [f"{Scores.of([r for r in ranking if r[0].level == level]).full10:.3f}" for level in levels]
                table.append(f"| {label} | " + " | ".join(cells) + " |")
        emit(lines, table)
    return lines


def catalogs() -> list[tuple[str, tuple[ToolRecord, ...], list[str]]]:
    stb = load_dataset(BENCH / "toolbench_stb")
    requests = [q.text for q in stb.queries]
    bundled = load_bundled_tools(BUNDLED / "tools.jsonl")
    every = [t for name in ("toolbench_stb", "etom_mcp", "toollens_train", "everyday") for t in load_dataset(BENCH / name).tools]
    large: list[ToolRecord] = []
    copy = 0
    while len(large) < 20_000:
        # Copies under new ids keep their documents, so their embeddings come from the cache: a
        # signal's cost is the catalog's size, not what the tools say.
        large += [replace(t, id=f"{t.id}~{copy}") if copy else t for t in every]
        copy += 1
    return [
        ("70", bundled, [q.text for q in load_queries(BUNDLED / "queries.jsonl")]),
        ("4k", stb.tools, requests),
        ("20k", tuple(large[:20_000]), requests),
    ]


def latency(args: argparse.Namespace, spec: str) -> list[str]:
    encoder = load_encoder(resolve_model("bundled"), backend="onnx", work_dir=SearchSettings().resolved_cache_dir)
    lines: list[str] = []
    emit(lines, [
        "",
        f"Search latency, warm, `search(query, limit=10)` over {args.latency_queries} requests; "
        "ratio = p50 / the p50 of one query encode in the same run.",
        "",
        "| tools | reranker | search p50 (ms) | search p95 (ms) | encode p50 (ms) | p50 / encode |",
        "|---|---|---:|---:|---:|---:|",
    ])
    for size, tools, requests in [c for c in catalogs() if c[0] in args.sizes]:
        requests = list(sample_queries(requests, args.latency_queries))  # type: ignore[arg-type]
        dataset = Dataset(name=size, tools=tools, queries=tuple(Query(id=str(i), text=t, relevant=("-",)) for i, t in enumerate(requests)))
        for label, settings in setups(args, spec):
            log(f"latency: {size} tools, reranker {label}: building")
            engine, seconds = build_engine(settings, dataset)
            log(f"latency: built in {seconds:.1f} s")
            rank = engine_ranker(engine)
            for text in requests[:WARM_UP]:
                rank(text, K)
            summary = evaluate(rank, dataset.queries, K).summary
            encodes = []
            for text in requests:
                started = time.perf_counter()
                encoder.encode([text])
                encodes.append((time.perf_counter() - started) * 1000)
            encode = float(np.percentile(encodes, 50))
            emit(lines, [f"| {size} | {label} | {summary.latency_ms_p50:.1f} | {summary.latency_ms_p95:.1f} | "
                         f"{encode:.1f} | {summary.latency_ms_p50 / encode:.1f} |"])
    return lines


def setups(args: argparse.Namespace, spec: str) -> list[tuple[str, SearchSettings]]:
    """The engines timed: without the reranker and with it at each depth (after fusion, reorder);
    with `--ranker`, without it and with it as that ranker's column (the depth the ranker names)."""
    base = replace(SearchSettings(), cache_dir=CACHE)
    if args.ranker is not None:
        ranker = replace(base, ranker_file=args.ranker)
        return [("off", replace(ranker, reranker=None)),
                ("as the ranker's column", replace(ranker, reranker=spec, rerank_mode="feature"))]
    return [("off", replace(base, reranker=None)),
            *((f"top {depth}", replace(base, reranker=spec, rerank_depth=depth, rerank_mode="reorder"))
              for depth in args.depths)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reranker", default="bundled", help="'bundled', an installed package or a folder")
    parser.add_argument("--depths", type=lambda s: [int(v) for v in s.split(",")], default=[5, 10, 20, 30])
    parser.add_argument("--modes", type=lambda s: s.split(","), default=list(RERANK_MODES))
    parser.add_argument("--blend-weights", type=lambda s: [float(v) for v in s.split(",")], default=[1.0])
    parser.add_argument("--toollens", type=int, default=1000, help="toollens_train queries sampled (default 1,000)")
    parser.add_argument("--limit", type=int, help="at most this many queries per set (quick looks)")
    parser.add_argument("--sets", type=lambda s: s.split(","), help="only these sets (default: every one)")
    parser.add_argument("--latency-queries", type=int, default=100)
    parser.add_argument("--skip", choices=("quality", "latency"), help="leave one part out")
    parser.add_argument("--ranker", type=Path,
                        help="latency: a ranker.json that reads the reranker's score, timed with the reranker off and on")
    parser.add_argument("--sizes", type=lambda s: s.split(","), default=["70", "4k", "20k"],
                        help="latency: catalog sizes to time (70, 4k, 20k)")
    parser.add_argument("--update-docs", type=Path, help="markdown file whose rerank block to rewrite")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(name)s: %(message)s")

    location = resolve_reranker(args.reranker)
    started = time.perf_counter()
    scorer = load_cross_encoder(location, work_dir=SearchSettings().resolved_cache_dir)
    log(f"reranker {location.identity} loaded in {time.perf_counter() - started:.1f} s")
    lines: list[str] = []
    emit(lines, [
        f"Reranker `{location.identity}`, max {scorer.config.max_tokens} tokens per pair. Measured "
        f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC on {machine()}, toolscout {revision()}."
        + (f" At most {args.limit} queries per set." if args.limit else "")
    ])
    if args.skip != "quality":
        lines += quality(args, args.reranker, scorer)
    if args.skip != "latency":
        lines += latency(args, args.reranker)
    if args.update_docs:
        update_block(args.update_docs, "rerank", "\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
