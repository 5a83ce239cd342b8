"""What scikit-learn fitted for the TF-IDF signal is kept in the machine's content store, keyed by the
exact documents: the same catalog indexed again reads it back (without importing scikit-learn) and
scores exactly as a fresh fit does; a changed catalog, or a damaged fit, is fitted afresh, never
answered from a stale fit."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np

from toolscout.catalog import ToolRecord
from toolscout.index.base import Query
from toolscout.index.tfidf import TfidfRetriever, fit_key, with_bigrams
from toolscout.search import SearchSettings, ToolSearch
from toolscout.state.content import CACHE_FILE, open_content_store
from toolscout.state.fits import StoredFits

CORPUS = [
    ["get", "weather", "forecast", "city"],
    ["send", "email", "message", "colleague"],
    ["convert", "time", "zone", "city", "time"],
    [],
]
QUERIES = [("weather", "city"), ("time", "zone"), ("email",), ("nothing", "matches")]


def scores(retriever: TfidfRetriever) -> list[np.ndarray]:
    return [retriever.scores(Query(text=" ".join(q), tokens=q)) for q in QUERIES]


def same(left: list[np.ndarray], right: list[np.ndarray]) -> bool:
    return all(np.array_equal(a, b) for a, b in zip(left, right, strict=True))


def fits(folder: Path) -> StoredFits:
    return StoredFits(open_content_store(None, folder))


def stored_keys(folder: Path) -> list[str]:
    with sqlite3.connect(folder / CACHE_FILE) as db:
        return sorted(key for (key,) in db.execute("SELECT fit_key FROM tfidf_fits"))


def test_a_stored_fit_scores_exactly_as_a_fresh_one(tmp_path: Path) -> None:
    fresh = scores(TfidfRetriever(CORPUS))
    first = TfidfRetriever(CORPUS, store=fits(tmp_path))
    assert stored_keys(tmp_path) == [fit_key([with_bigrams(d) for d in CORPUS])]
    again = TfidfRetriever(CORPUS, store=fits(tmp_path))
    assert same(scores(first), fresh) and same(scores(again), fresh)


def test_reading_a_stored_fit_does_not_import_scikit_learn(tmp_path: Path) -> None:
    TfidfRetriever(CORPUS, store=fits(tmp_path))
    script = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from toolscout.index.base import Query\n"
        "from toolscout.index.tfidf import TfidfRetriever\n"
        "from toolscout.state.content import open_content_store\n"
        "from toolscout.state.fits import StoredFits\n"
        "store = StoredFits(open_content_store(None, Path(sys.argv[1])))\n"
        f"retriever = TfidfRetriever({CORPUS!r}, store=store)\n"
        "top = int(retriever.scores(Query(text='weather', tokens=('weather',))).argmax())\n"
        "print(json.dumps({'top': top, 'sklearn': 'sklearn' in sys.modules}))\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout) == {"top": 0, "sklearn": False}


def test_a_changed_corpus_is_fitted_afresh(tmp_path: Path) -> None:
    TfidfRetriever(CORPUS, store=fits(tmp_path))
    changed = [*CORPUS[:2], ["convert", "time", "zone", "weather", "tomorrow"], []]
    stored = TfidfRetriever(changed, store=fits(tmp_path))
    assert same(scores(stored), scores(TfidfRetriever(changed)))
    assert not same(scores(stored), scores(TfidfRetriever(CORPUS)))
    assert len(stored_keys(tmp_path)) == 2


def test_a_damaged_or_mismatched_fit_is_fitted_again(tmp_path: Path) -> None:
    TfidfRetriever(CORPUS, store=fits(tmp_path))
    (key,) = stored_keys(tmp_path)
    with sqlite3.connect(tmp_path / CACHE_FILE) as db:
        db.execute("UPDATE tfidf_fits SET fit = ?", (b"not a fit",))
    assert same(scores(TfidfRetriever(CORPUS, store=fits(tmp_path))), scores(TfidfRetriever(CORPUS)))
    # Another corpus's fit under this corpus's key (a copied row) is not used either.
    other = tmp_path / "other"
    TfidfRetriever([["send", "email"], ["weather"]], store=fits(other))
    with sqlite3.connect(other / CACHE_FILE) as db:
        (foreign,) = db.execute("SELECT fit FROM tfidf_fits").fetchone()
    with sqlite3.connect(tmp_path / CACHE_FILE) as db:
        db.execute("UPDATE tfidf_fits SET fit = ? WHERE fit_key = ?", (foreign, key))
    assert same(scores(TfidfRetriever(CORPUS, store=fits(tmp_path))), scores(TfidfRetriever(CORPUS)))


def test_an_engine_over_a_changed_catalog_never_answers_from_the_previous_fit(tmp_path: Path) -> None:
    def tools(zone_description: str) -> list[ToolRecord]:
        return [
            ToolRecord(id="w__forecast", name="forecast", server="w", description="Weather forecast for a city."),
            ToolRecord(id="t__convert", name="convert", server="t", description=zone_description),
        ]

    def ranking(cache_dir: Path | None, catalog: list[ToolRecord]) -> list[tuple[str, float]]:
        engine = ToolSearch(SearchSettings.lexical_only(weights={"tfidf": 1.0}, cache_dir=cache_dir))
        engine.index(catalog)
        return [(hit.tool.id, hit.score) for hit in engine.search("weather tomorrow", limit=2).hits]

    before, after = tools("Convert a time between zones."), tools("Convert a time to tomorrow's.")
    assert [i for i, _ in ranking(tmp_path, before)] == ["w__forecast"]
    assert ranking(tmp_path, before) == ranking(tmp_path / "fresh", before)
    # Same ids, names and servers: only a description changed, and with it the fit.
    assert {i for i, _ in ranking(tmp_path, after)} == {"w__forecast", "t__convert"}
    assert ranking(tmp_path, after) == ranking(tmp_path / "fresh again", after)
    assert len(stored_keys(tmp_path)) == 2
