"""Embeddings shared through the Postgres state store: a tool is embedded once per text, whichever
engine (replica) gets there first; another engine with an empty cache folder of its own reads the
vectors back and encodes nothing, and a store that goes away costs only speed."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import psycopg
from support.fake_encoder import HashingEncoder
from support.postgres import PostgresServer

from toolscout.catalog import ToolRecord
from toolscout.search import SearchSettings, ToolSearch
from toolscout.state.postgres import PostgresStateStore
from toolscout.state.vectors import StoredEmbeddings

CATALOG = [
    ToolRecord(id=f"srv__tool_{i}", name=f"tool_{i}", server="srv", description=f"Does thing number {i}.")
    for i in range(20)
]


def replica(tmp_path: Path, name: str, url: str, tools: list[ToolRecord]) -> tuple[ToolSearch, HashingEncoder]:
    encoder = HashingEncoder()
    engine = ToolSearch(SearchSettings(cache_dir=tmp_path / name, shared_vectors=url), encoder=encoder)
    engine.index(tools)
    engine.complete()
    assert not engine.pending
    return engine, encoder


def test_a_second_replica_reads_every_vector_back_and_encodes_nothing(tmp_path: Path, postgres: PostgresServer) -> None:
    first, first_encoder = replica(tmp_path, "one", postgres.url, CATALOG)
    second, second_encoder = replica(tmp_path, "two", postgres.url, CATALOG)
    assert len(first_encoder.encoded) == len(CATALOG) and second_encoder.encoded == []
    query = "does thing number 7"
    assert [h.tool.id for h in first.search(query).hits] == [h.tool.id for h in second.search(query).hits]
    changed = list(CATALOG)
    changed[3] = dataclasses.replace(changed[3], description="Now does something else entirely.")
    _, third_encoder = replica(tmp_path, "three", postgres.url, changed)
    assert len(third_encoder.encoded) == 1 and "something else entirely" in third_encoder.encoded[0]


def test_vectors_round_trip_per_model_and_a_lost_store_is_a_miss(postgres: PostgresServer) -> None:
    cache = StoredEmbeddings(PostgresStateStore(postgres.url))
    cache.put("m1", {"h": np.array([0.5, 0.25], dtype=np.float32)})
    cache.put("m1", {"h": np.array([9.0, 9.0], dtype=np.float32)})  # same text, same model: kept once
    assert cache.get("m1", ["h", "missing"])["h"].tolist() == [0.5, 0.25]
    assert cache.get("m2", ["h"]) == {}
    cache.remember_model("bundled onnx", "model-a")
    assert cache.model_of("bundled onnx") == "model-a"
    postgres.stop()
    try:
        assert cache.get("m1", ["h"]) == {}
        cache.put("m1", {"k": np.array([1.0], dtype=np.float32)})  # dropped, not raised
        assert cache.model_of("bundled onnx") is None
    finally:
        postgres.start_again()
    assert cache.get("m1", ["h"])["h"].tolist() == [0.5, 0.25]


def test_a_tfidf_fit_is_made_once_and_read_back_by_every_replica(postgres: PostgresServer) -> None:
    """Another process over the same Postgres reads the first one's fit: it scores exactly the same
    without fitting (scikit-learn is never imported there), and only the newest fits are kept."""
    from toolscout.index.base import Query
    from toolscout.index.tfidf import TfidfRetriever
    from toolscout.state.fits import KEEP, StoredFits

    url = postgres.database("fits")
    corpus = [["send", "weekly", "report"], ["weather", "forecast", "city"], ["read", "note"]]
    first = TfidfRetriever(corpus, store=StoredFits(PostgresStateStore(url)))
    replica = subprocess.run([sys.executable, "-c", (
        "import json, sys\n"
        "from toolscout.index.base import Query\n"
        "from toolscout.index.tfidf import TfidfRetriever\n"
        "from toolscout.state.fits import StoredFits\n"
        "from toolscout.state.postgres import PostgresStateStore\n"
        f"retriever = TfidfRetriever({corpus!r}, store=StoredFits(PostgresStateStore(sys.argv[1])))\n"
        "scores = retriever.scores(Query(text='weekly report', tokens=('weekly', 'report')))\n"
        "print(json.dumps({'sklearn': 'sklearn' in sys.modules, 'scores': scores.tolist()}))\n"
    ), url], capture_output=True, text=True, check=True, timeout=120)
    answer = json.loads(replica.stdout)
    assert answer["sklearn"] is False
    assert answer["scores"] == first.scores(Query(text="weekly report", tokens=("weekly", "report"))).tolist()
    for n in range(KEEP + 2):
        TfidfRetriever([*corpus, [f"tool{n}"]], store=StoredFits(PostgresStateStore(url)))
    with psycopg.connect(url) as connection:
        assert connection.execute("SELECT count(*) FROM tfidf_fits").fetchone() == (KEEP,)


def test_a_bulk_write_refreshes_the_planners_statistics(postgres: PostgresServer) -> None:
    """A replica reading vectors right after another filled the table must not meet a planner
    without statistics (it would scan every vector for each lookup): a writer analyzes the table
    after ANALYZE_EVERY vectors."""
    from toolscout.state.vectors import ANALYZE_EVERY

    url = postgres.database("analyzed")
    cache = StoredEmbeddings(PostgresStateStore(url))

    def analyzed() -> bool:
        with psycopg.connect(url) as connection:
            row = connection.execute(
                "SELECT last_analyze FROM pg_stat_user_tables WHERE relname = 'embeddings'"
            ).fetchone()
        return row is not None and row[0] is not None

    vectors = {f"h{n}": np.array([n, 1.0], dtype=np.float32) for n in range(ANALYZE_EVERY)}
    cache.put("m1", dict(list(vectors.items())[:10]))
    assert not analyzed()
    cache.put("m1", vectors)
    assert analyzed()
    assert cache.get("m1", ["h9999"])["h9999"].tolist() == [9999.0, 1.0]
