"""The TF-IDF signal weighs documents as scikit-learn's TfidfVectorizer does, without importing it."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from toolscout.index.base import NOT_RETRIEVED, Query
from toolscout.index.tfidf import TfidfRetriever, with_bigrams

CORPUS = [
    ["send", "email", "messag", "email"],
    ["read", "file", "disk"],
    [],
    ["convert", "time", "zone", "time", "time"],
    ["send", "file", "to", "printer"],
]


def test_the_document_matrix_is_scikit_learns_tfidf() -> None:
    text = pytest.importorskip("sklearn.feature_extraction.text")
    reference = text.TfidfVectorizer(analyzer=lambda doc: doc, sublinear_tf=True, norm="l2", dtype=np.float32)
    expected = reference.fit_transform([with_bigrams(doc) for doc in CORPUS]).toarray()
    retriever = TfidfRetriever(CORPUS)
    order = [retriever._columns[term] for term in reference.get_feature_names_out()]
    assert np.allclose(retriever._matrix.toarray()[:, order], expected, atol=1e-7)
    assert np.allclose(retriever._idf[order], reference.idf_, atol=1e-7)


def test_scores_are_cosines_of_the_query_terms_and_missing_terms_retrieve_nothing() -> None:
    retriever = TfidfRetriever(CORPUS)
    scores = retriever.scores(Query(text="send file", tokens=("send", "file"), embedding=None))
    assert scores[4] == scores.max() and scores[2] == NOT_RETRIEVED and scores[3] == NOT_RETRIEVED
    nothing = retriever.scores(Query(text="xyz", tokens=("xyz",), embedding=None))
    assert (nothing == NOT_RETRIEVED).all()


def test_the_search_engine_does_not_import_scikit_learn() -> None:
    code = (
        "import sys; from toolscout.search import SearchSettings, ToolSearch; "
        "ToolSearch(SearchSettings.lexical_only()); import toolscout.index.tfidf; print('sklearn' in sys.modules)"
    )
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"
