import dataclasses

import numpy as np

from support.fake_encoder import HashingEncoder
from toolscout.catalog import ToolRecord
from toolscout.search import SearchSettings, ToolSearch
from toolscout.state.content import open_content_store
from toolscout.state.vectors import StoredEmbeddings

CATALOG = [
    ToolRecord(id=f"srv__tool_{i}", name=f"tool_{i}", server="srv", description=f"Does thing number {i}.")
    for i in range(10)
]


def build(tmp_path, tools) -> HashingEncoder:
    encoder = HashingEncoder()
    engine = ToolSearch(SearchSettings(cache_dir=tmp_path), encoder=encoder)
    engine.index(tools)
    engine.complete()
    assert not engine.pending
    return encoder


def test_vectors_round_trip_through_the_cache_per_model(tmp_path):
    cache = StoredEmbeddings(open_content_store(None, tmp_path))
    cache.put("m1", {"h": np.array([0.5, 0.25], dtype=np.float32)})
    cache.put("m1", {"h": np.array([9.0, 9.0], dtype=np.float32)})  # same text, same model: kept once
    assert cache.get("m1", ["h", "missing"])["h"].tolist() == [0.5, 0.25]
    assert cache.get("m2", ["h"]) == {}
    cache.remember_model("bundled onnx", "model-a")
    assert StoredEmbeddings(open_content_store(None, tmp_path)).model_of("bundled onnx") == "model-a"


def test_a_cache_file_of_an_earlier_toolscout_opens_with_its_vectors(tmp_path):
    """Before the cache was a state store it was one table in the same file: its vectors are kept."""
    import sqlite3

    with sqlite3.connect(tmp_path / "embeddings.sqlite3") as db:
        db.execute(
            "CREATE TABLE embeddings (model TEXT NOT NULL, text_hash TEXT NOT NULL, vector BLOB NOT NULL, "
            "PRIMARY KEY (model, text_hash)) WITHOUT ROWID"
        )
        db.execute("INSERT INTO embeddings VALUES ('m1', 'h', ?)", (np.array([1.0, 2.0], dtype=np.float32).tobytes(),))
    cache = StoredEmbeddings(open_content_store(None, tmp_path))
    assert cache.get("m1", ["h"])["h"].tolist() == [1.0, 2.0]


def test_restarting_over_an_unchanged_catalog_embeds_nothing(tmp_path):
    assert len(build(tmp_path, CATALOG).encoded) == len(CATALOG)
    assert build(tmp_path, CATALOG).encoded == []


def test_a_changed_tool_is_the_only_one_embedded_again(tmp_path):
    build(tmp_path, CATALOG)
    changed = list(CATALOG)
    changed[3] = dataclasses.replace(changed[3], description="Now does something else entirely.")
    encoded = build(tmp_path, changed).encoded
    assert len(encoded) == 1 and "something else entirely" in encoded[0]


def test_complete_reports_progress_of_the_texts_it_embeds(tmp_path):
    engine = ToolSearch(SearchSettings(cache_dir=tmp_path), encoder=HashingEncoder())
    engine.index(CATALOG)
    reports = []
    engine.complete(lambda done, total: reports.append((done, total)))
    assert reports[-1] == (len(CATALOG), len(CATALOG))


def test_reindexing_the_same_catalog_in_a_running_engine_needs_no_complete(tmp_path):
    encoder = HashingEncoder()
    engine = ToolSearch(SearchSettings(cache_dir=tmp_path), encoder=encoder)
    engine.index(CATALOG)
    engine.complete()
    engine.index(list(reversed(CATALOG)))
    assert not engine.pending and len(encoder.encoded) == len(CATALOG)
