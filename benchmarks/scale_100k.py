"""A 100,000-tool catalog: index time, search latency, peak memory and time to the first semantic answer.

The catalog is replicated from the public training tools (shared/train/tools.jsonl, 12,879 tools;
never a held-out set): copy k of a tool gets its own server (`<server>-k`), name (`<name>_k`) and
description (the original, led by one of a list of workspace phrases, so no two descriptions are
equal). Queries are requests of shared/train/pairs.jsonl (English ones).

    PYTHONPATH=src python benchmarks/scale_100k.py                 # 100k tools, embeds a slice
    PYTHONPATH=src python benchmarks/scale_100k.py --embed all     # embeds every tool (long)

Phases, one engine as one gateway replica runs it (`ToolSearch` with the shipped settings, a fresh
embedding cache folder):

1. keyword index: `index(tools)`, after which searches answer from BM25 and TF-IDF (the first answer);
2. keyword search latency, while no vector exists yet;
3. cold embedding: `--embed all` runs the engine's `complete()` over every tool; `--embed N` encodes
   the first N tools' texts through the same encoder and extrapolates linearly to the catalog,
   which the table says;
4. with `--embed all`: hybrid search latency, and a second engine over the same cache folder (a
   restart, or a second replica on one machine): its index time with every vector read back;
5. with `--shared`: the whole run over a Postgres state store (a fresh cluster of Debian's
   postgresql, started as the tests start it), so the first engine's catalog index and TF-IDF fit
   are in the store; then a second replica over it once it holds every tool's vector, twice in
   the same run: once with the kept catalog index dropped first (it builds its BM25 indexes and
   documents, as every replica did before they were kept; the fit is read back), then once
   reading everything back: each one's index time, which reads every vector back, and its first
   semantic answer, with the load average as it started. Before them the script analyzes the
   tables (as autovacuum does within a minute of a bulk write) and reads every vector once (timed). Without `--embed all` the vectors it
   reads were written by this script under the model's id (random unit vectors: what is measured
   is reading 100k vectors back, not their quality), which the table says.

Peak RSS is the process's maximum resident set (getrusage), all phases together. Prints one table.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import resource
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from toolscout.catalog import ToolRecord
from toolscout.index.embeddings import Embedder
from toolscout.index.model_files import resolve_model
from toolscout.index.text import dense_document
from toolscout.search import ToolSearch
from toolscout.search.settings import SearchSettings
from toolscout.state.vectors import text_hash

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(__file__).resolve().parents[2] / "shared" / "train"
# Copy k's description starts with WORKSPACES[k] (k = 0 keeps the original text).
WORKSPACES = (
    "", "In the billing workspace:", "For the support team:", "In the data platform:",
    "For the marketing site:", "In the finance ledger:", "For the mobile app:", "In the research lab:",
    "For the sales pipeline:", "In the HR portal:", "For the logistics hub:", "In the security office:",
)


def public_tools() -> list[dict]:
    """The training tools with distinct descriptions (first of each), with distinct (server, name)."""
    rows, descriptions, names = [], set(), set()
    for line in (SHARED / "tools.jsonl").open(encoding="utf-8"):
        row = json.loads(line)
        if row["description"] in descriptions:
            continue
        descriptions.add(row["description"])
        name, n = row["name"], 1
        while (row["server"], name) in names:
            n += 1
            name = f"{row['name']}_{row['source']}{n}"
        names.add((row["server"], name))
        rows.append({**row, "name": name})
    return rows


def catalog(size: int) -> list[ToolRecord]:
    rows = public_tools()
    copies = -(-size // len(rows))
    if copies > len(WORKSPACES):
        raise SystemExit(f"at most {len(WORKSPACES) * len(rows):,} distinct tools from {len(rows):,}")
    tools = []
    for k in range(copies):
        for row in rows:
            if len(tools) == size:
                return tools
            lead = WORKSPACES[k]
            tools.append(ToolRecord(
                id=f"t{len(tools):06d}",
                name=f"{row['name']}_{k}" if k else row["name"],
                server=f"{row['server']}-{k}" if k else row["server"],
                description=f"{lead} {row['description']}" if lead else row["description"],
                input_schema=row.get("input_schema") or {},
            ))
    return tools


def queries(count: int) -> list[str]:
    texts = [json.loads(line) for line in (SHARED / "pairs.jsonl").open(encoding="utf-8")]
    english = [row["query"] for row in texts if row.get("lang", "en") == "en"]
    return random.Random(7).sample(english, count)


def latency(engine: ToolSearch, texts: list[str]) -> tuple[float, float]:
    for text in texts[:5]:
        engine.search(text, limit=10)
    times = []
    for text in texts:
        started = time.perf_counter()
        engine.search(text, limit=10)
        times.append((time.perf_counter() - started) * 1000)
    cuts = statistics.quantiles(times, n=100)
    return cuts[49], cuts[94]


def load_average() -> str:
    return " / ".join(f"{value:.1f}" for value in os.getloadavg())


def peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def second_replica(
    tools: list[ToolRecord], settings: SearchSettings, searches: list[str], url: str, *, seeded: bool
) -> list[tuple[str, str]]:
    import psycopg

    from toolscout.state.postgres import PostgresStateStore
    from toolscout.state.vectors import StoredEmbeddings

    rows = []
    with tempfile.TemporaryDirectory(prefix="toolscout-replica-") as cache:
        shared = StoredEmbeddings(PostgresStateStore(url))
        first = Embedder(settings)
        encoder = first.encoder()
        assert encoder is not None
        location = resolve_model(settings.model)
        assert location is not None
        hashes = [text_hash(dense_document(tool)) for tool in tools]
        started = time.perf_counter()
        if seeded:
            generator = np.random.default_rng(7)
            for start in range(0, len(hashes), 2000):
                chunk = hashes[start : start + 2000]
                vectors = generator.standard_normal((len(chunk), 384)).astype(np.float32)
                vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
                shared.put(encoder.model_id, dict(zip(chunk, vectors)))
        else:
            vectors = first.cached_matrix([dense_document(tool) for tool in tools])
            assert vectors is not None
            for start in range(0, len(hashes), 2000):
                shared.put(encoder.model_id, dict(zip(hashes[start : start + 2000], vectors[start : start + 2000])))
        # What the first replica's model load leaves: the id its model files have.
        shared.remember_model(first._source(location), encoder.model_id)
        what = "random unit vectors written by the script" if seeded else "the vectors embedded above"
        rows.append((f"vectors into Postgres ({what})", f"{time.perf_counter() - started:.0f} s"))
        with psycopg.connect(url, autocommit=True) as connection:
            # What autovacuum does within a minute of a bulk write: until then Postgres has no
            # statistics of the table and plans each lookup of 500 vectors as a scan of all of
            # them (30 s instead of 2 s for 100,000 here), which no replica starting later meets.
            connection.execute("ANALYZE")
        started = time.perf_counter()
        # Once before both replicas, so that neither finds Postgres's caches colder than the other.
        read = shared.get(encoder.model_id, hashes)
        assert len(read) == len(tools)
        rows.append(("every vector read back from Postgres, alone", f"{time.perf_counter() - started:.1f} s"))
        for case, built in (("catalog index built (as before it was kept)", True), ("catalog index read back", False)):
            if built:
                # What the first replica kept of the catalog (BM25 indexes, documents) is dropped,
                # so this replica builds it as every replica did before it was kept; the TF-IDF fit
                # is still read back. It writes the index again for the next replica.
                with psycopg.connect(url, autocommit=True) as connection:
                    connection.execute("DELETE FROM catalog_indexes")
            replica = ToolSearch(replace(settings, cache_dir=Path(cache) / ("built" if built else "read"), shared_vectors=url))
            load = load_average()
            started = time.perf_counter()
            replica.index(tools)
            indexed = time.perf_counter() - started
            replica.complete()
            answer = replica.search(searches[0], limit=10)
            ready = time.perf_counter() - started
            assert "dense" in answer.signals, answer.signals
            rows.append((f"second replica, {case}: index, every vector read back (load {load})", f"{indexed:.1f} s"))
            rows.append((f"second replica, {case}: first semantic answer (model load included)", f"{ready:.1f} s"))
        p50, p95 = latency(replica, searches)
        cost = " (random vectors: the cost of every signal, not their quality)" if seeded else ""
        rows.append((f"second replica: hybrid search p50 / p95{cost}", f"{p50:.1f} / {p95:.1f} ms"))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", type=int, default=100_000)
    parser.add_argument("--embed", default="3000", help="'all', or how many tools to embed and extrapolate from")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--shared", action="store_true", help="also time a second replica over Postgres")
    args = parser.parse_args()
    tools = catalog(args.tools)
    assert len({t.description for t in tools}) == len(tools) and len({(t.server, t.name) for t in tools}) == len(tools)
    searches = queries(args.queries)
    rows: list[tuple[str, str]] = [("tools", f"{len(tools):,} (from {len(public_tools()):,} public tools)")]
    with contextlib.ExitStack() as stack:
        cache = stack.enter_context(tempfile.TemporaryDirectory(prefix="toolscout-scale-"))
        settings = replace(SearchSettings(), cache_dir=Path(cache))
        if args.shared:
            # A deployment over Postgres from the start: the first replica's TF-IDF fit (and the
            # vectors it embeds) land in the store, as they would for replicas.
            sys.path.insert(0, str(ROOT / "tests"))
            from support.postgres import PostgresServer

            url = stack.enter_context(PostgresServer()).url
            settings = replace(settings, shared_vectors=url)
        engine = ToolSearch(settings)
        started = time.perf_counter()
        engine.index(tools)
        keyword_index = time.perf_counter() - started
        rows.append(("keyword index (first answer, keyword signals)", f"{keyword_index:.1f} s"))
        p50, p95 = latency(engine, searches)
        rows.append(("keyword search p50 / p95", f"{p50:.1f} / {p95:.1f} ms"))
        if args.embed == "all":
            started = time.perf_counter()
            engine.complete()
            embedding = time.perf_counter() - started
            rows.append(("cold embedding, every tool (model load included)", f"{embedding:.0f} s"))
            rows.append(("time to first semantic answer", f"{keyword_index + embedding:.0f} s"))
            p50, p95 = latency(engine, searches)
            rows.append(("hybrid search p50 / p95 (query embedding included)", f"{p50:.1f} / {p95:.1f} ms"))
            second = ToolSearch(settings)
            started = time.perf_counter()
            second.index(tools)
            second.complete()
            rows.append(("second engine over the same cache: index + vectors read back", f"{time.perf_counter() - started:.1f} s"))
        else:
            count = min(int(args.embed), len(tools))
            embedder = Embedder(settings)
            started = time.perf_counter()
            embedder.encoder()
            load = time.perf_counter() - started
            texts = [dense_document(tool) for tool in tools[:count]]
            started = time.perf_counter()
            embedder.matrix(texts)
            spent = time.perf_counter() - started
            rate = count / spent
            whole = load + len(tools) / rate
            rows.append(("model load", f"{load:.1f} s"))
            rows.append((f"cold embedding, measured on {count:,} tools", f"{spent:.0f} s ({rate:.0f} tools/s)"))
            rows.append((f"cold embedding, {len(tools):,} tools (extrapolated)", f"{whole / 60:.1f} min"))
            rows.append(("time to first semantic answer (extrapolated)", f"{(keyword_index + whole) / 60:.1f} min"))
        if args.shared:
            rows.extend(second_replica(tools, settings, searches, url, seeded=args.embed != "all"))
    rows.append(("peak RSS (all phases)", f"{peak_rss_mib():,.0f} MiB"))
    rows.append(("load average at the end (1 / 5 / 15 min)", f"{load_average()} on {os.cpu_count()} cores"))
    print_table(rows)


def print_table(rows: list[tuple[str, str]]) -> None:
    print("| measure | value |")
    print("| --- | --- |")
    for name, value in rows:
        print(f"| {name} | {value} |")


if __name__ == "__main__":
    sys.exit(main())
