import numpy as np
import pytest
from rank_bm25 import BM25Okapi

from toolscout.index.base import NOT_RETRIEVED, Query
from toolscout.index.bm25 import BM25Retriever

# Every term occurs in fewer than half of the documents, so Robertson idf is positive everywhere
# and rank_bm25's epsilon floor for negative idf never applies.
CORPUS = [
    "weather forecast for a city".split(),
    "send an email message".split(),
    "search github issues".split(),
    "create github pull request".split(),
    "convert currency exchange rate".split(),
    "translate text between languages".split(),
    "weather alerts warnings".split(),
]


@pytest.mark.parametrize("query", [["weather"], ["github", "request"], ["email", "text", "rate"]])
def test_bm25_scores_equal_rank_bm25_with_the_same_parameters(query):
    ours = BM25Retriever(CORPUS, k1=1.5, b=0.75, method="robertson").raw_scores(query)
    reference = BM25Okapi(CORPUS, k1=1.5, b=0.75).get_scores(query)
    # bm25s leaves out Okapi's constant (k1 + 1) numerator factor: same ranking, scaled scores.
    np.testing.assert_allclose(ours * (1.5 + 1), reference, rtol=1e-5)


def test_unknown_query_tokens_retrieve_nothing_instead_of_raising():
    scores = BM25Retriever(CORPUS).scores(Query(text="zzz", tokens=("zzz",)))
    assert np.all(scores == NOT_RETRIEVED)


def test_an_empty_corpus_and_empty_documents_are_harmless():
    assert BM25Retriever([]).scores(Query(text="x", tokens=("x",))).size == 0
    scores = BM25Retriever([[], ["weather"]]).scores(Query(text="weather", tokens=("weather",)))
    assert scores[0] == NOT_RETRIEVED and scores[1] > 0
