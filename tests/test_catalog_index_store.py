"""What indexing derives from a catalog (its BM25 indexes, dense documents, destructive and exact-name
tables, and a reference to its TF-IDF fit) is kept in the content store in two parts, each keyed by
exactly what it was built from: the same catalog indexed again, by a restart or another replica over
the same Postgres, reads both back and answers exactly as a fresh build; a catalog whose learned
phrases (`expansion`) changed reads the base part back and builds only what the phrases feed; a
changed catalog or settings, or a damaged, foreign or incomplete kept part, is built afresh, never
answered from."""

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

import bm25s
import numpy as np
import psycopg
import pytest
from support.fake_encoder import HashingEncoder
from support.postgres import PostgresServer

from toolscout.catalog import ToolRecord
from toolscout.search import SearchSettings, ToolSearch
from toolscout.search import catalog_index as catalog_index_module
from toolscout.search.catalog_index import CatalogIndex, CatalogKeys, catalog_index, catalog_keys
from toolscout.state.content import CACHE_FILE, open_content_store
from toolscout.state.fits import KEEP, StoredFits
from toolscout.state.store import StateStore

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
BOTH = {"base", "expansion"}


def learned(tools: list[ToolRecord] = CATALOG) -> list[ToolRecord]:
    """`tools` after learning from use: one tool gained a phrase (only its `expansion` changed)."""
    changed = list(tools)
    changed[1] = dataclasses.replace(changed[1], expansion=("mail my colleague the weather in paris",))
    return changed


def lexical(cache_dir: Path, **overrides: object) -> SearchSettings:
    return SearchSettings.lexical_only(cache_dir=cache_dir, **overrides)


def answers(engine: ToolSearch) -> list[list[tuple[str, float, dict[str, int]]]]:
    return [[(h.tool.id, h.score, dict(h.ranks)) for h in engine.search(q, limit=6).hits] for q in QUERIES]


def indexed(settings: SearchSettings, tools: list[ToolRecord] = CATALOG) -> ToolSearch:
    engine = ToolSearch(settings, encoder=HashingEncoder())
    engine.index(tools)
    engine.complete()
    return engine


def derived(
    cache_dir: Path, tools: list[ToolRecord] = CATALOG, settings: SearchSettings | None = None,
    store: StateStore | None = None,
) -> CatalogIndex:
    store = store or open_content_store(None, cache_dir)
    return catalog_index(
        tools, settings or lexical(cache_dir), dense=False,
        indexes=StoredFits(store, "catalog"), fits=StoredFits(store, "tfidf"),
    )


def kept(folder: Path) -> dict[str, bytes]:
    with sqlite3.connect(folder / CACHE_FILE) as db:
        return {key: bytes(value) for key, value in db.execute("SELECT fit_key, fit FROM catalog_indexes")}


def keys(folder: Path, tools: list[ToolRecord] = CATALOG) -> CatalogKeys:
    found = catalog_keys(tools, lexical(folder), dense=False)
    assert found is not None
    return found


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
    assert not first.read_back and again.read_back == BOTH
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
    assert len(kept(tmp_path / "hybrid")) == 2  # the base part and the expansion part


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
        "print(json.dumps({'read_back': sorted(index.read_back), 'sklearn': 'sklearn' in sys.modules, 'bm25_built': len(built),\n"
        "    'tokenized': text._chunk_tokens.cache_info().misses - before}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, check=True, timeout=120,
        cwd=Path(__file__).parent,
    )
    assert json.loads(done.stdout) == {"read_back": sorted(BOTH), "sklearn": False, "bm25_built": 0, "tokenized": 0}


def test_a_changed_catalog_or_settings_is_built_afresh(tmp_path: Path) -> None:
    derived(tmp_path)
    changed = list(CATALOG)
    # Same ids, names and servers: only a description changed, and with it the index.
    changed[1] = dataclasses.replace(changed[1], description="Send a weather report by email.")
    again = derived(tmp_path, changed)
    assert not again.read_back
    assert answers(indexed(lexical(tmp_path), changed)) == answers(indexed(lexical(tmp_path / "fresh"), changed))
    assert len(kept(tmp_path)) == 4
    # A schema's own order shapes the documents, so it is part of the key too.
    reordered = list(CATALOG)
    properties = dict(reversed(list(CATALOG[0].input_schema["properties"].items())))
    reordered[0] = dataclasses.replace(CATALOG[0], input_schema={"type": "object", "properties": properties})
    variants = [
        catalog_keys(CATALOG, lexical(tmp_path), dense=False),
        catalog_keys(reordered, lexical(tmp_path), dense=False),
        catalog_keys(CATALOG, lexical(tmp_path), dense=True),
        catalog_keys(CATALOG, lexical(tmp_path, stem=False), dense=False),
        catalog_keys(CATALOG, lexical(tmp_path, weights={"bm25_name": 1.0}), dense=False),
        catalog_keys(list(reversed(CATALOG)), lexical(tmp_path), dense=False),
    ]
    assert len({k.base for k in variants if k}) == len({k.expansion for k in variants if k}) == 6
    # Learned phrases are the expansion part's input only; the expansion part hangs on the base too.
    assert keys(tmp_path, learned()).base == keys(tmp_path).base
    assert keys(tmp_path, learned()).expansion != keys(tmp_path).expansion
    assert keys(tmp_path, changed).expansion != keys(tmp_path).expansion
    unstemmed = derived(tmp_path, settings=lexical(tmp_path, stem=False))
    assert not unstemmed.read_back and "forecast" in unstemmed.name_words[0]


def test_a_damaged_foreign_or_incomplete_index_is_built_again(tmp_path: Path) -> None:
    fresh = answers(indexed(lexical(tmp_path / "fresh")))
    derived(tmp_path)
    key = keys(tmp_path).base
    archive = kept(tmp_path)[key]

    assert rebuilt_with(tmp_path, key, b"not an index")
    assert "base" in derived(tmp_path).read_back  # the part built again replaced the damaged row
    assert rebuilt_with(tmp_path, key, archive[: len(archive) // 2])
    # A BM25 array that only a pickle could load is refused, never unpickled.
    pickled = io.BytesIO()
    np.save(pickled, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    assert rebuilt_with(tmp_path, key, with_member(archive, "bm25_description/data.csc.index.npy", pickled.getvalue()))
    replace_kept(tmp_path, key, archive)
    # Positions beyond the catalog, per-tool tables of another length, tokens of unknown words.
    tables = json.loads(zipfile.ZipFile(io.BytesIO(archive)).read("tables.json"))
    assert rebuilt_with(tmp_path, key, with_member(archive, "tokens.txt", b"only one line"))
    replace_kept(tmp_path, key, archive)
    assert rebuilt_with(tmp_path, key, with_member(archive, "tables.json", json.dumps({**tables, "exact": {"x": [99]}}).encode()))
    replace_kept(tmp_path, key, archive)
    assert rebuilt_with(tmp_path, key, with_member(
        archive, "tables.json", json.dumps({**tables, "destructive": tables["destructive"][:-1]}).encode()
    ))
    replace_kept(tmp_path, key, archive)
    # Another catalog's part under this catalog's key (a copied row), or the other part.
    other = tmp_path / "other"
    derived(other, CATALOG[:3])
    assert rebuilt_with(tmp_path, key, kept(other)[keys(other, CATALOG[:3]).base])
    assert rebuilt_with(tmp_path, key, kept(tmp_path)[keys(tmp_path).expansion])
    replace_kept(tmp_path, key, archive)
    # A damaged base part is built again alone: the expansion part is still read back.
    assert derived(tmp_path).read_back == BOTH
    # The expansion part damaged, or its TF-IDF fit gone (evicted, or another store's): that part
    # is built again, the base part read back.
    expansion = keys(tmp_path).expansion
    expansion_archive = kept(tmp_path)[expansion]
    replace_kept(tmp_path, expansion, archive)
    assert derived(tmp_path).read_back == {"base"}
    replace_kept(tmp_path, expansion, expansion_archive)
    with sqlite3.connect(tmp_path / CACHE_FILE) as db:
        db.execute("DELETE FROM tfidf_fits")
    assert derived(tmp_path).read_back == {"base"}
    assert derived(tmp_path).read_back == BOTH
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
    """Whether the base part, replaced by `value`, is built again (not read back)."""
    assert key == keys(folder).base
    replace_kept(folder, key, value)
    return "base" not in derived(folder).read_back


def test_learned_phrases_rebuild_only_the_expansion_part(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One tool's learned phrases changed: the base part is read back (no name or description
    tokenized, no name or description BM25 index built, nothing of it written again); only the
    expansion BM25 index and the TF-IDF fit are built and kept, and every score, rank and order
    is exactly a fresh build's."""
    hybrid = SearchSettings(cache_dir=tmp_path / "hybrid", reranker=None)
    for settings in (lexical(tmp_path / "cache"), hybrid):
        indexed(settings)
    tokenized: list[str] = []
    built: list[int] = []
    written: list[tuple[str, str]] = []
    tokenize, index, write = catalog_index_module.tokenize, bm25s.BM25.index, StoredFits.write
    monkeypatch.setattr(catalog_index_module, "tokenize", lambda text, **kw: tokenized.append(text) or tokenize(text, **kw))
    monkeypatch.setattr(bm25s.BM25, "index", lambda *a, **kw: built.append(1) or index(*a, **kw))
    monkeypatch.setattr(StoredFits, "write", lambda self, key, fit: written.append((self._kind, key)) or write(self, key, fit))
    again = derived(tmp_path / "cache", learned())
    assert again.read_back == {"base"}
    assert set(tokenized) <= {" ".join(tool.expansion) for tool in learned()}
    assert len(built) == 1  # the expansion field's
    assert [kind for kind, _ in written] == ["tfidf", "catalog"]
    assert written[1][1] == keys(tmp_path / "cache", learned()).expansion
    monkeypatch.undo()
    for settings in (lexical(tmp_path / "cache"), hybrid):
        fresh = dataclasses.replace(settings, cache_dir=tmp_path / "fresh" / settings.cache_dir.name)
        assert answers(indexed(settings, learned())) == answers(indexed(fresh, learned()))


def test_the_base_part_in_use_outlives_many_learned_expansions(tmp_path: Path) -> None:
    """The store keeps the most recently used parts only: a base part every re-index reads stays
    however many expansion parts learning leaves behind."""
    derived(tmp_path)
    for n in range(KEEP + 2):
        phrases = learned()
        phrases[0] = dataclasses.replace(phrases[0], expansion=(f"learned request {n}",))
        assert derived(tmp_path, phrases).read_back == {"base"}
    assert keys(tmp_path).base in kept(tmp_path) and len(kept(tmp_path)) == KEEP


def test_an_index_kept_in_an_older_format_is_never_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Kept before the parts were split (one archive under one key of format 1): not found, built."""
    with monkeypatch.context() as patch:
        patch.setattr(catalog_index_module, "_FORMAT", 1)
        derived(tmp_path)
    old = set(kept(tmp_path))
    assert not derived(tmp_path).read_back
    assert old.isdisjoint(keys(tmp_path).__dict__.values())
    assert answers(indexed(lexical(tmp_path))) == answers(indexed(lexical(tmp_path / "fresh")))


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
        "print(json.dumps({'read_back': sorted(index.read_back), 'sklearn': 'sklearn' in sys.modules, 'hits': hits}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, url, str(tmp_path / "two")], capture_output=True, text=True, check=True,
        timeout=120, cwd=Path(__file__).parent,
    )
    answer = json.loads(done.stdout)
    assert answer["read_back"] == sorted(BOTH) and answer["sklearn"] is False
    assert answer["hits"] == [[[h.tool.id, h.score] for h in first.search(q, limit=6).hits] for q in QUERIES]
    # After learning, a replica reads the base part back from Postgres and builds the rest.
    shared = open_content_store(url, tmp_path / "three")
    assert derived(tmp_path / "three", learned(), lexical(tmp_path / "three", shared_vectors=url), shared).read_back == {"base"}
    learning = ToolSearch(lexical(tmp_path / "four", shared_vectors=url))
    learning.index(learned())
    assert answers(learning) == answers(indexed(lexical(tmp_path / "fresh"), learned()))
    for n in range(KEEP + 2):
        ToolSearch(lexical(tmp_path / "one", shared_vectors=url)).index(
            [*CATALOG, ToolRecord(id=f"x__tool{n}", name=f"tool{n}", server="x")]
        )
    with psycopg.connect(url) as connection:
        assert connection.execute("SELECT count(*) FROM catalog_indexes").fetchone() == (KEEP,)
