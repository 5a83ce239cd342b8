import numpy as np
import pytest

from support.fake_encoder import HashingEncoder
from test_intent_signal import CATALOG, EXAMPLES
from toolscout.eval.datasets import Query as EvalQuery
from toolscout.eval.tuning import record, score
from toolscout.index.base import Query
from toolscout.index.intent import IntentRetriever
from toolscout.learning.examples import Example
from toolscout.learning.expansion import apply_expansions
from toolscout.search import SearchSettings, ToolSearch


def vote(rows, labels, embedding, **options):
    retriever = IntentRetriever(np.asarray(rows, dtype=np.float32), labels, size=3, **options)
    return retriever.vote(Query(text="q", tokens=(), embedding=np.asarray(embedding, dtype=np.float32)))


def test_the_vote_is_trusted_fully_when_close_neighbours_agree_and_in_proportion_below():
    rows = np.eye(3)
    # Both neighbours (cosines 0.8 and 0.6) name tool 0: vote 1.4 against a full vote of 0.5 x 2.
    agreeing = vote(rows, [(0,), (0,), (1,)], [0.8, 0.6, 0.0], neighbours=2, full_vote=0.5)
    assert agreeing.confidence == 1.0
    # They disagree: the best tool's vote is 0.8 of the 1.0 needed.
    split = vote(rows, [(0,), (1,), (2,)], [0.8, 0.6, 0.0], neighbours=2, full_vote=0.5)
    assert split.confidence == pytest.approx(0.8)
    assert split.scores[0] == np.float32(0.8) and split.scores[1] == np.float32(0.6)


def test_a_vote_without_a_neighbour_above_the_floor_has_no_confidence_and_zero_full_vote_trusts_any():
    rows = np.eye(3)
    nobody = vote(rows, [(0,), (1,), (2,)], [0.5, 0.5, 0.5], neighbours=3, min_similarity=0.6, full_vote=0.5)
    assert nobody.confidence == 0.0 and np.isneginf(nobody.scores).all()
    distant = vote(rows, [(0,), (1,), (2,)], [0.1, 0.0, 0.0], neighbours=3, full_vote=0.0)
    assert distant.confidence == 1.0 and distant.scores[0] == np.float32(0.1)


def engine(tmp_path, weights, examples, **options) -> ToolSearch:
    settings = SearchSettings(cache_dir=tmp_path, weights=weights, **options)
    search = ToolSearch(settings, encoder=HashingEncoder())
    # As the gateway does: the examples also join their tools' expansion field.
    search.index(apply_expansions(CATALOG, examples=examples), examples=examples)
    search.complete()
    return search


def test_both_learned_signals_weigh_the_intent_confidence_of_each_query(tmp_path):
    weights = {"dense": 1.0, "bm25_expansion": 1.0, "intent": 3.0}
    search = engine(tmp_path, weights, EXAMPLES, intent_neighbours=2, intent_min_similarity=0.3,
                    intent_full_vote=0.5)
    # Two requests for notes, one nearly the query: their votes add up to more than 0.5 x 2.
    close = search.rankings("show my jotted reminders about the budget", depth=4)
    assert close.weight_scale == {"bm25_expansion": 1.0, "intent": 1.0}
    assert close.rankings["intent"][0].id == "notes__read_note"
    unrelated = search.rankings("convert celsius to kelvin", depth=4)
    assert unrelated.weight_scale == {"bm25_expansion": 0.0, "intent": 0.0}
    without_examples = engine(tmp_path, weights, ())
    assert without_examples.rankings("convert celsius to kelvin", depth=4).weight_scale == {}


def test_past_requests_unlike_the_query_leave_the_ranking_as_without_examples(tmp_path):
    zero_shot = {"dense": 1.0, "bm25_description": 0.5}
    learned = {**zero_shot, "bm25_expansion": 1.0, "intent": 3.0}
    # Requests for the mail tool sharing one word ("file") with a query about reading files: the
    # expansion field matches, but no request is close enough to vote.
    other = [Example(f"email the file report number {n} to my boss", ("mail__send_email",)) for n in range(3)]
    query = "read the contents of a file"
    search = engine(tmp_path, learned, other)
    assert search.rankings(query, depth=4).rankings["bm25_expansion"][0].id == "mail__send_email"
    with_examples = search.search(query, limit=4)
    without = engine(tmp_path, zero_shot, ()).search(query, limit=4)
    assert [(h.tool.id, h.score) for h in with_examples.hits] == [(h.tool.id, h.score) for h in without.hits]
    assert with_examples.hits[0].tool.id == "files__read_file"


def test_tuning_replays_each_querys_weight_factor():
    queries = [EvalQuery(id="1", text="first", relevant=("a",)), EvalQuery(id="2", text="second", relevant=("b",))]
    ranked = {"first": {"good": ["a", "x"], "learned": ["x", "a"]}, "second": {"good": ["x", "b"], "learned": ["b"]}}
    factors = {"first": {"learned": 0.0}, "second": {"learned": 1.0}}
    replay = record(lambda text, depth: (ranked[text], factors[text]), queries, ["good", "learned"], depth=2)
    # Learned is ignored on "first" (a stays first) and outvotes good on "second" (b first).
    assert score(replay, {"good": 1.0, "learned": 2.0}, 1.0, cut=1).mrr == 1.0
    assert score(replay, {"good": 1.0, "learned": 0.0}, 1.0, cut=1).mrr == 0.5


def test_a_full_vote_outside_zero_to_one_is_a_clear_error():
    with pytest.raises(ValueError, match="intent_full_vote must be between 0 and 1, got 1.5"):
        SearchSettings(intent_full_vote=1.5)
