"""What indexing derives from a catalog (its BM25 indexes, dense documents, destructive and exact-name
tables, and a reference to its TF-IDF fit) is kept in the content store, keyed by exactly what it was
built from: the same catalog indexed again, by a restart or another replica over the same Postgres,
reads it back and answers exactly as a fresh build; a changed catalog or settings, or a damaged,
foreign or incomplete kept index, is built afresh, never answered from."""

from __future__ import annotations

import dataclasses
import io
import json
import sqlite3
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import numpy as np
import psycopg
import pytest
from support.fake_encoder import HashingEncoder
from support.postgres import PostgresServer

from toolscout.catalog import ToolRecord
from toolscout.search import SearchSettings, ToolSearch
from toolscout.search.catalog_index import CatalogIndex, catalog_index, catalog_key
from toolscout.state.content import CACHE_FILE, open_content_store
from toolscout.state.fits import KEEP, StoredFits

CATALOG = [
    ToolRecord(
        id="weather__get_forecast", name="get_forecast", server="weather", title="Forecast",
        description="Weather forecast for a city, by day.",
        input_schema={"type": "object", "properties": {
            "city": {"type": "string", "description": "City name"},
            "units": {"type": "string", "enum": ["metric", "imperial"]},
        }},
    ),
    ToolRecord(id="mail__send_email", name="send_email", server="mail", description="Send an email message to a colleague."),
    ToolRecord(id="mail__delete_email", name="delete_email", server="mail", description="Delete an email for good."),
    ToolRecord(
        id="time__convertTimeZone", name="convertTimeZone", server="time",
        description="Convert a time between zones.", expansion=("what time is it in tokyo",),
    ),
    ToolRecord(id="notes__read", name="read", server="notes", description="", annotations={"readOnlyHint": True}),
    ToolRecord(id="files__remove_file", name="remove_file", server="files", description="Remove a file.",
               annotations={"readOnlyHint": True}),
]
QUERIES = ["weather in paris tomorrow", "send a message", "delete_email", "what time is it in tokyo", "remove a file"]


def lexical(cache_dir: Path, **overrides: object) -> SearchSettings:
    return SearchSettings.lexical_only(cache_dir=cache_dir, **overrides)


def answers(engine: ToolSearch) -> list[list[tuple[str, float, dict[str, int]]]]:
    return [[(h.tool.id, h.score, dict(h.ranks)) for h in engine.search(q, limit=6).hits] for q in QUERIES]


def indexed(settings: SearchSettings, tools: list[ToolRecord] = CATALOG) -> ToolSearch:
    engine = ToolSearch(settings, encoder=HashingEncoder())
    engine.index(tools)
    engine.complete()
    return engine


def derived(cache_dir: Path, tools: list[ToolRecord] = CATALOG, settings: SearchSettings | None = None) -> CatalogIndex:
    store = open_content_store(None, cache_dir)
    return catalog_index(
        tools, settings or lexical(cache_dir), dense=False,
        indexes=StoredFits(store, "catalog"), fits=StoredFits(store, "tfidf"),
    )


def kept(folder: Path) -> dict[str, bytes]:
    with sqlite3.connect(folder / CACHE_FILE) as db:
        return {key: bytes(value) for key, value in db.execute("SELECT fit_key, fit FROM catalog_indexes")}


def replace_kept(folder: Path, key: str, value: bytes) -> None:
    with sqlite3.connect(folder / CACHE_FILE) as db:
        db.execute("UPDATE catalog_indexes SET fit = ? WHERE fit_key = ?", (value, key))


def with_member(archive: bytes, name: str, data: bytes) -> bytes:
    """`archive` with its member `name` holding `data` instead."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(archive)) as source, zipfile.ZipFile(out, "w") as target:
        for member in source.namelist():
            target.writestr(member, data if member == name else source.read(member))
    return out.getvalue()


def test_a_kept_catalog_index_answers_exactly_as_a_fresh_build(tmp_path: Path) -> None:
    fresh = answers(indexed(lexical(tmp_path / "fresh")))
    first = derived(tmp_path / "cache")
    again = derived(tmp_path / "cache")
    assert not first.read_back and again.read_back
    assert (again.destructive, again.name_words, again.exact, again.contained) == (
        first.destructive, first.name_words, first.exact, first.contained
    )
    assert again.destructive == (False, False, True, False, False, False)
    assert answers(indexed(lexical(tmp_path / "cache"))) == fresh
    # Every signal, the dense documents included (their vectors are looked up by those texts).
    hybrid = SearchSettings(cache_dir=tmp_path / "hybrid", reranker=None)
    first_hybrid = indexed(hybrid)
    assert answers(indexed(hybrid)) == answers(first_hybrid)
    assert "dense" in first_hybrid.search("weather").signals
    assert len(kept(tmp_path / "hybrid")) == 1


def test_reading_a_kept_index_back_builds_and_fits_nothing(tmp_path: Path) -> None:
    derived(tmp_path)
    script = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "import bm25s\n"
        "from toolscout.index import text\n"
        "from toolscout.search import SearchSettings\n"
        "from toolscout.search.catalog_index import catalog_index\n"
        "from toolscout.state.content import open_content_store\n"
        "from toolscout.state.fits import StoredFits\n"
        "from test_catalog_index_store import CATALOG\n"
        "folder = Path(sys.argv[1])\n"
        "store = open_content_store(None, folder)\n"
        "built = []\n"
        "bm25s.BM25.index = lambda *a, **k: built.append(1)\n"
        "before = text._chunk_tokens.cache_info().misses\n"
        "index = catalog_index(CATALOG, SearchSettings.lexical_only(cache_dir=folder), dense=False,\n"
        "    indexes=StoredFits(store, 'catalog'), fits=StoredFits(store, 'tfidf'))\n"
        "print(json.dumps({'read_back': index.read_back, 'sklearn': 'sklearn' in sys.modules, 'bm25_built': len(built),\n"
        "    'tokenized': text._chunk_tokens.cache_info().misses - before}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, check=True, timeout=120,
        cwd=Path(__file__).parent,
    )
    assert json.loads(done.stdout) == {"read_back": True, "sklearn": False, "bm25_built": 0, "tokenized": 0}


def test_a_changed_catalog_or_settings_is_built_afresh(tmp_path: Path) -> None:
    derived(tmp_path)
    changed = list(CATALOG)
    # Same ids, names and servers: only a description changed, and with it the index.
    changed[1] = dataclasses.replace(changed[1], description="Send a weather report by email.")
    again = derived(tmp_path, changed)
    assert not again.read_back
    assert answers(indexed(lexical(tmp_path), changed)) == answers(indexed(lexical(tmp_path / "fresh"), changed))
    assert len(kept(tmp_path)) == 2
    # A schema's own order shapes the documents, so it is part of the key too.
    reordered = list(CATALOG)
    properties = dict(reversed(list(CATALOG[0].input_schema["properties"].items())))
    reordered[0] = dataclasses.replace(CATALOG[0], input_schema={"type": "object", "properties": properties})
    keys = {
        catalog_key(CATALOG, lexical(tmp_path), dense=False),
        catalog_key(reordered, lexical(tmp_path), dense=False),
        catalog_key(CATALOG, lexical(tmp_path), dense=True),
        catalog_key(CATALOG, lexical(tmp_path, stem=False), dense=False),
        catalog_key(CATALOG, lexical(tmp_path, weights={"bm25_name": 1.0}), dense=False),
        catalog_key(list(reversed(CATALOG)), lexical(tmp_path), dense=False),
    }
    assert len(keys) == 6
    unstemmed = derived(tmp_path, settings=lexical(tmp_path, stem=False))
    assert not unstemmed.read_back and "forecast" in unstemmed.name_words[0]


def test_a_damaged_foreign_or_incomplete_index_is_built_again(tmp_path: Path) -> None:
    fresh = answers(indexed(lexical(tmp_path / "fresh")))
    derived(tmp_path)
    ((key, archive),) = kept(tmp_path).items()

    assert rebuilt_with(tmp_path, key, b"not an index")
    assert rebuilt_with(tmp_path, key, archive[: len(archive) // 2])
    # A BM25 array that only a pickle could load is refused, never unpickled.
    pickled = io.BytesIO()
    np.save(pickled, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    assert rebuilt_with(tmp_path, key, with_member(archive, "bm25_description/data.csc.index.npy", pickled.getvalue()))
    replace_kept(tmp_path, key, archive)
    # Positions beyond the catalog, or per-tool tables of another length.
    tables = json.loads(zipfile.ZipFile(io.BytesIO(archive)).read("tables.json"))
    assert rebuilt_with(tmp_path, key, with_member(archive, "tables.json", json.dumps({**tables, "exact": {"x": [99]}}).encode()))
    replace_kept(tmp_path, key, archive)
    assert rebuilt_with(tmp_path, key, with_member(
        archive, "tables.json", json.dumps({**tables, "destructive": tables["destructive"][:-1]}).encode()
    ))
    replace_kept(tmp_path, key, archive)
    # Another catalog's index under this catalog's key (a copied row).
    other = tmp_path / "other"
    derived(other, CATALOG[:3])
    (foreign,) = kept(other).values()
    assert rebuilt_with(tmp_path, key, foreign)
    replace_kept(tmp_path, key, archive)
    # Its TF-IDF fit gone (evicted, or another store's): the whole index is built again.
    with sqlite3.connect(tmp_path / CACHE_FILE) as db:
        db.execute("DELETE FROM tfidf_fits")
    assert not derived(tmp_path).read_back
    assert derived(tmp_path).read_back
    assert answers(indexed(lexical(tmp_path))) == fresh


def test_an_index_that_cannot_be_kept_is_built_and_answers_all_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fresh = answers(indexed(lexical(tmp_path / "fresh")))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "no such folder"))  # bm25s cannot save
    assert not derived(tmp_path / "cache").read_back
    assert kept(tmp_path / "cache") == {}
    assert answers(indexed(lexical(tmp_path / "cache"))) == fresh


def rebuilt_with(folder: Path, key: str, value: bytes) -> bool:
    replace_kept(folder, key, value)
    return not derived(folder).read_back


def test_a_second_replica_reads_the_index_back_from_postgres(tmp_path: Path, postgres: PostgresServer) -> None:
    """Another process over the same Postgres, with an empty cache folder of its own, reads the
    first one's catalog index and TF-IDF fit back and answers exactly as it; only the newest kept."""
    url = postgres.database("catalog_indexes")
    first = ToolSearch(lexical(tmp_path / "one", shared_vectors=url))
    first.index(CATALOG)
    script = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from toolscout.search import SearchSettings, ToolSearch\n"
        "from toolscout.search.catalog_index import catalog_index\n"
        "from toolscout.state.content import open_content_store\n"
        "from toolscout.state.fits import StoredFits\n"
        "from test_catalog_index_store import CATALOG, QUERIES\n"
        "settings = SearchSettings.lexical_only(cache_dir=Path(sys.argv[2]), shared_vectors=sys.argv[1])\n"
        "store = open_content_store(sys.argv[1], Path(sys.argv[2]))\n"
        "index = catalog_index(CATALOG, settings, dense=False, indexes=StoredFits(store, 'catalog'),\n"
        "    fits=StoredFits(store, 'tfidf'))\n"
        "engine = ToolSearch(settings)\n"
        "engine.index(CATALOG)\n"
        "hits = [[[h.tool.id, h.score] for h in engine.search(q, limit=6).hits] for q in QUERIES]\n"
        "print(json.dumps({'read_back': index.read_back, 'sklearn': 'sklearn' in sys.modules, 'hits': hits}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, url, str(tmp_path / "two")], capture_output=True, text=True, check=True,
        timeout=120, cwd=Path(__file__).parent,
    )
    answer = json.loads(done.stdout)
    assert answer["read_back"] is True and answer["sklearn"] is False
    assert answer["hits"] == [[[h.tool.id, h.score] for h in first.search(q, limit=6).hits] for q in QUERIES]
    for n in range(KEEP + 2):
        ToolSearch(lexical(tmp_path / "one", shared_vectors=url)).index(
            [*CATALOG, ToolRecord(id=f"x__tool{n}", name=f"tool{n}", server="x")]
        )
    with psycopg.connect(url) as connection:
        assert connection.execute("SELECT count(*) FROM catalog_indexes").fetchone() == (KEEP,)
