import json

import anyio
import numpy as np
import pytest

from support.fake_encoder import HashingEncoder
from toolscout.index.base import Query
from toolscout.index.intent import IntentExamples, IntentRetriever, normalise_request
from toolscout.learning.examples import Example
from toolscout.search import SearchSettings, ToolSearch
from toolscout.search.engine import PENDING_NOTICE
from test_search_engine import tool


CATALOG = [
    tool("weather", "get_forecast", "Weather forecast for a city."),
    tool("mail", "send_email", "Send an email message to a recipient."),
    tool("files", "read_file", "Read the contents of a file on disk."),
    tool("notes", "read_note", "Return the text of a note."),
]
# Requests in the users' words, which share no word with their tools' descriptions.
EXAMPLES = [
    Example("what did I jot down about the quarterly budget", ("notes__read_note",)),
    Example("show my jotted reminders about budget", ("notes__read_note",)),
    Example("will I need an umbrella tomorrow", ("weather__get_forecast",)),
    Example("ping bob that the budget is late", ("mail__send_email", "notes__read_note")),
]
INTENT_ONLY = {"intent": 1.0}


def engine_with(tmp_path, weights=None, examples=EXAMPLES, encoder=None) -> ToolSearch:
    settings = SearchSettings(cache_dir=tmp_path, **({"weights": weights} if weights else {}))
    engine = ToolSearch(settings, encoder=encoder or HashingEncoder())
    engine.index(CATALOG, examples=examples)
    engine.complete()
    return engine


def test_a_query_near_past_requests_finds_the_tools_that_served_them(tmp_path):
    response = engine_with(tmp_path, INTENT_ONLY).search("anything jotted about the budget", limit=2)
    assert [hit.tool.id for hit in response.hits][0] == "notes__read_note"
    assert response.signals == ("intent",)
    assert response.hits[0].ranks["intent"] == 1


def test_each_tool_scores_the_sum_of_the_similarities_of_the_neighbours_naming_it():
    rows = np.eye(3, dtype=np.float32)
    retriever = IntentRetriever(rows, [(0,), (0, 1), (2,)], size=4, neighbours=2)
    query = np.array([0.6, 0.8, 0.0], dtype=np.float32)
    scores = retriever.scores(Query(text="q", tokens=(), embedding=query))
    # Neighbours: example 1 (0.8, tools 0 and 1) and example 0 (0.6, tool 0); example 2 is third.
    assert np.allclose(scores[:2], [1.4, 0.8])
    assert np.isneginf(scores[2]) and np.isneginf(scores[3])


def test_examples_less_similar_than_the_floor_do_not_vote():
    retriever = IntentRetriever(np.eye(3, dtype=np.float32), [(0,), (1,), (2,)], size=3, neighbours=3, min_similarity=0.7)
    scores = retriever.scores(Query(text="q", tokens=(), embedding=np.array([0.6, 0.8, 0.0], dtype=np.float32)))
    assert np.isneginf(scores[0]) and scores[1] == np.float32(0.8) and np.isneginf(scores[2])
    assert np.isneginf(retriever.scores(Query(text="q", tokens=(), embedding=np.zeros(3, np.float32)))).all()


def test_repeated_requests_merge_and_unknown_tools_are_ignored():
    examples = IntentExamples.of(
        [Example("Read my note!", ("a",)), Example("read my  note", ("b",)), Example("x", ("missing",))],
        {"a": 0, "b": 1},
    )
    assert examples.texts == ("Read my note!",) and examples.labels == ((0, 1),)
    assert normalise_request("  Read, my NOTE ") == "read my note"


def test_without_examples_the_intent_signal_is_off(tmp_path):
    response = engine_with(tmp_path, examples=()).search("weather forecast", limit=2)
    assert "intent" not in response.signals and "dense" in response.signals


def test_keyword_only_settings_never_build_the_intent_signal():
    engine = ToolSearch(SearchSettings.lexical_only(weights={"tfidf": 1.0, "intent": 1.0}))
    engine.index(CATALOG, examples=EXAMPLES)
    engine.complete()
    response = engine.search("jotted budget", limit=2)
    assert "intent" not in response.signals and response.notice is None and not engine.pending


def test_intent_is_pending_with_dense_until_complete_and_shares_one_query_embedding(tmp_path):
    encoder = HashingEncoder()
    engine = ToolSearch(SearchSettings(cache_dir=tmp_path), encoder=encoder)
    engine.index(CATALOG, examples=EXAMPLES)
    before = engine.search("umbrella tomorrow", limit=2)
    assert engine.pending and before.notice == PENDING_NOTICE and "intent" not in before.signals
    engine.complete()
    encoded = len(encoder.encoded)
    after = engine.search("umbrella tomorrow", limit=4)
    assert {"dense", "intent"} <= set(after.signals) and after.notice is None
    assert len(encoder.encoded) == encoded + 1
    voted = {hit.tool.id for hit in after.hits if hit.ranks.get("intent") == 1}
    assert voted == {"weather__get_forecast"}


def test_example_embeddings_come_from_the_disk_cache_after_a_restart(tmp_path):
    engine_with(tmp_path)
    encoder = HashingEncoder()
    restarted = engine_with(tmp_path, encoder=encoder)
    assert encoder.encoded == []
    assert "intent" in restarted.search("budget reminders", limit=1).signals


def test_reindexing_with_the_same_examples_needs_no_complete(tmp_path):
    engine = engine_with(tmp_path)
    engine.index(CATALOG, examples=EXAMPLES)
    assert not engine.pending
    assert "intent" in engine.search("budget", limit=1).signals


@pytest.mark.anyio
async def test_the_gateway_hands_example_files_to_the_intent_signal(tmp_path):
    from test_wiring_learning import EXAMPLE_QUERY, office_registry

    from toolscout.gateway import Gateway
    from toolscout.registry.loading import load_registries
    from toolscout.serving.learning_hooks import LearningSources

    examples = tmp_path / "examples.jsonl"
    examples.write_text(json.dumps({"query": EXAMPLE_QUERY, "tools": ["office__read_note"]}) + "\n")
    engine = ToolSearch(SearchSettings(cache_dir=tmp_path / "cache", weights=INTENT_ONLY), encoder=HashingEncoder())
    sources = LearningSources.load([], [examples])
    with anyio.fail_after(30):
        async with Gateway(load_registries([office_registry(tmp_path)]), engine, enrich=sources) as gateway:
            await gateway.ready(20)
            await gateway.wait_complete()
            response = await gateway.search("what did grandma say, jot it down", limit=1)
    assert response.signals == ("intent",)
    assert [hit.tool.id for hit in response.hits] == ["office__read_note"]
