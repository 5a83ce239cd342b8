"""Where a warm hybrid search's time goes on a 100,000-tool catalog, and whether a change kept the rankings.

    PYTHONPATH=src python benchmarks/search_profile_100k.py [--tools 100000] [--queries 200]
        [--profile 40] [--dump rankings.json] [--compare rankings.json]

The catalog is `scale_100k.py`'s (public training tools replicated with distinct names and
descriptions). Every tool's vector is a random unit vector written to the engine's embedding cache
under the shipped model's id before indexing, so the engine is hybrid from its first search (every
signal's cost is measured; not the dense signal's quality). Queries are the English requests of
shared/train/pairs.jsonl that scale_100k.py uses. Prints one table: index time, warm search
p50 / p95 with the machine's load average, then the functions taking the most time (cProfile over
`--profile` searches, own time), with whole searches timed alternating query by query: the dense
pass through BLAS or einsum, and a request's sentences scored in one pass or one pass each.
`--dump` writes each query's top 10 tool ids; `--compare` reads
such a file and counts the queries whose top 10 differ (the same seed gives the same vectors).
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scale_100k import catalog, latency, peak_rss_mib, queries  # noqa: E402

from toolscout.index import dense  # noqa: E402
from toolscout.index.embeddings import Embedder  # noqa: E402
from toolscout.index.model_files import resolve_model  # noqa: E402
from toolscout.index.text import dense_document  # noqa: E402
from toolscout.search import ToolSearch  # noqa: E402
from toolscout.search.sentences import request_parts  # noqa: E402
from toolscout.search.settings import SearchSettings  # noqa: E402
from toolscout.state.content import open_content_store  # noqa: E402
from toolscout.state.vectors import StoredEmbeddings, text_hash  # noqa: E402


def seed_vectors(settings: SearchSettings, texts: list[str]) -> None:
    """Random unit vectors for `texts` in the cache folder, under the id of the model files."""
    embedder = Embedder(settings)
    encoder = embedder.encoder()
    location = resolve_model(settings.model)
    assert encoder is not None and location is not None
    cache = StoredEmbeddings(open_content_store(None, settings.resolved_cache_dir))
    generator = np.random.default_rng(7)
    dimension = encoder.encode(["a probe"]).shape[1]
    hashes = [text_hash(text) for text in texts]
    for start in range(0, len(hashes), 5000):
        chunk = hashes[start : start + 5000]
        vectors = generator.standard_normal((len(chunk), dimension)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        cache.put(encoder.model_id, dict(zip(chunk, vectors)))
    cache.remember_model(embedder._source(location), encoder.model_id)


def dense_pass_ab(engine: ToolSearch, searches: list[str]) -> list[tuple[str, str]]:
    """Whole searches with the dense pass through BLAS (as shipped at this size) and through
    einsum (as below `_BLAS_ROWS`), alternating query by query so that the load weighs on both."""
    snapshot = engine._snapshot
    times: dict[str, list[float]] = {"BLAS": [], "einsum": []}
    shipped = dense._BLAS_ROWS
    try:
        for text in searches:
            for way, rows in (("BLAS", shipped), ("einsum", len(snapshot.tools) + 1)):
                dense._BLAS_ROWS = rows
                if snapshot.dense is not None:
                    snapshot.dense._kept = {}  # no cosines kept from the other way's search
                started = time.perf_counter()
                engine.search(text, limit=10)
                times[way].append((time.perf_counter() - started) * 1000)
    finally:
        dense._BLAS_ROWS = shipped
    return [
        (f"search p50, dense pass through {way} (alternating)", f"{statistics.median(values):.1f} ms")
        for way, values in times.items()
    ]


def sentence_pass_ab(engine: ToolSearch, searches: list[str]) -> list[tuple[str, str]]:
    """Whole searches of requests of several sentences with their vectors scored in one pass over
    the matrix (`DenseRetriever.prepare`, as shipped) and one pass per vector, alternating query by
    query."""
    dense_signal = engine._snapshot.dense
    several = [text for text in searches if request_parts(text)]
    times: dict[str, list[float]] = {"one pass": [], "a pass per vector": []}
    if dense_signal is None or not several:
        return []
    try:
        for text in several:
            for way in times:
                if way == "a pass per vector":
                    dense_signal.prepare = lambda vectors: None  # type: ignore[method-assign]
                dense_signal._kept = {}
                started = time.perf_counter()
                engine.search(text, limit=10)
                times[way].append((time.perf_counter() - started) * 1000)
                vars(dense_signal).pop("prepare", None)
    finally:
        vars(dense_signal).pop("prepare", None)
    return [
        (
            f"requests of several sentences ({len(several)}), {way} (alternating): p50 / p95",
            f"{statistics.median(values):.1f} / {statistics.quantiles(values, n=20)[18]:.1f} ms",
        )
        for way, values in times.items()
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--profile", type=int, default=40, help="searches run under cProfile")
    parser.add_argument("--dump", type=Path, help="write each query's top 10 ids here")
    parser.add_argument("--compare", type=Path, help="count the queries whose top 10 differ from this dump")
    parser.add_argument("--index-profile", action="store_true", help="also say where the index time goes (cProfile)")
    args = parser.parse_args()
    tools = catalog(args.tools)
    searches = queries(args.queries)
    rows: list[tuple[str, str]] = [("tools", f"{len(tools):,}"), ("load average at start", _load())]
    with tempfile.TemporaryDirectory(prefix="toolscout-profile-") as cache:
        settings = replace(SearchSettings(), cache_dir=Path(cache))
        started = time.perf_counter()
        seed_vectors(settings, [dense_document(tool) for tool in tools])
        rows.append(("random vectors written to the cache (model load included)", f"{time.perf_counter() - started:.0f} s"))
        engine = ToolSearch(settings)
        indexing = cProfile.Profile() if args.index_profile else None
        started = time.perf_counter()
        if indexing is not None:
            indexing.enable()
        engine.index(tools)
        if indexing is not None:
            indexing.disable()
        rows.append(("index (keyword signals fitted, every vector read back)", f"{time.perf_counter() - started:.1f} s"))
        engine.complete()
        signals = engine.search(searches[0], limit=10).signals
        rows.append(("signals", ", ".join(signals)))
        p50, p95 = latency(engine, searches)
        rows.append(("warm hybrid search p50 / p95", f"{p50:.1f} / {p95:.1f} ms"))
        for name, value in dense_pass_ab(engine, searches):
            rows.append((name, value))
        rows.extend(sentence_pass_ab(engine, searches))
        rows.append(("load average after the searches", _load()))
        top = {text: [hit.tool.id for hit in engine.search(text, limit=10).hits] for text in searches}
        profiler = cProfile.Profile()
        profiler.enable()
        for text in searches[: args.profile]:
            engine.search(text, limit=10)
        profiler.disable()
    rows.append(("peak RSS", f"{peak_rss_mib():,.0f} MiB"))
    if args.dump:
        args.dump.write_text(json.dumps(top, indent=0))
    if args.compare:
        before = json.loads(args.compare.read_text())
        differ = sum(1 for text, ids in top.items() if before.get(text) != ids)
        rows.append((f"queries whose top 10 differ from {args.compare.name}", f"{differ} of {len(top)}"))
    print("| measure | value |")
    print("| --- | --- |")
    for name, value in rows:
        print(f"| {name} | {value} |")
    _print_profile(profiler, f"own time over {args.profile} searches", "ms per search", args.profile / 1000)
    if indexing is not None:
        _print_profile(indexing, "cumulative time of the index", "s", 1.0, cumulative=True)


def _print_profile(profiler: cProfile.Profile, what: str, unit: str, per: float, *, cumulative: bool = False) -> None:
    stats = pstats.Stats(profiler)
    entries = stats.stats.items()  # type: ignore[attr-defined]
    total = sum(entry[2] for _, entry in entries)
    column = 3 if cumulative else 2
    print(f"\n| function ({what}) | share | {unit} |")
    print("| --- | --- | --- |")
    for (path, line, name), entry in sorted(entries, key=lambda item: -item[1][column])[:15 if not cumulative else 25]:
        where = f"{Path(path).name}:{line} {name}" if line else name
        print(f"| {where} | {entry[column] / total:.0%} | {entry[column] / per:.1f} |")


def _load() -> str:
    return " / ".join(f"{value:.1f}" for value in os.getloadavg()) + f" ({os.cpu_count()} cores)"


if __name__ == "__main__":
    sys.exit(main())
