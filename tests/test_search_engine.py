import threading

import pytest

from support.fake_encoder import HashingEncoder
from toolscout.catalog import ToolRecord
from toolscout.search import SearchSettings, ToolSearch
from toolscout.search.engine import PENDING_NOTICE
from toolscout.search.settings import parse_weights


def tool(server: str, name: str, description: str) -> ToolRecord:
    return ToolRecord(id=f"{server}__{name}", name=name, server=server, description=description)


CATALOG = [
    tool("weather", "get_forecast", "Weather forecast for a city: temperature, rain and wind."),
    tool("weather", "get_alerts", "Severe weather alerts and warnings for a region."),
    tool("mail", "send_email", "Send an email message to a recipient."),
    tool("github", "search_issues", "Search issues and pull requests in GitHub repositories."),
    tool("github", "create_pull_request", "Open a pull request from a branch."),
    tool("files", "read_file", "Read the contents of a file on disk."),
    tool("gitlab", "search_issues", "Search issues in GitLab projects."),
]


def lexical_engine(**overrides) -> ToolSearch:
    engine = ToolSearch(SearchSettings.lexical_only(**overrides))
    engine.index(CATALOG)
    return engine


def ids(response) -> list[str]:
    return [hit.tool.id for hit in response.hits]


def test_keyword_search_ranks_the_tool_that_matches_the_need_first():
    assert ids(lexical_engine().search("weather forecast for Paris", limit=3))[0] == "weather__get_forecast"


def test_a_query_that_is_a_tool_id_ranks_that_tool_first():
    response = lexical_engine().search("files__read_file", limit=3)
    assert ids(response)[0] == "files__read_file"
    assert response.hits[0].ranks["exact_name"] == 1


def test_a_query_containing_an_identifier_like_name_ranks_every_tool_of_that_name_first():
    top = ids(lexical_engine().search("use search_issues to look for weather bugs", limit=3))
    assert set(top[:2]) == {"github__search_issues", "gitlab__search_issues"}


def test_the_exact_name_boost_can_be_turned_off():
    engine = lexical_engine(exact_name_boost=False)
    assert "exact_name" not in engine.search("files__read_file", limit=3).hits[0].ranks


def test_the_servers_filter_applies_before_the_cut():
    # Without the filter the weather tools would fill every slot.
    response = lexical_engine().search("weather alerts forecast email", limit=1, servers={"mail"})
    assert ids(response) == ["mail__send_email"]


def test_an_empty_or_blank_query_finds_nothing():
    engine = lexical_engine()
    assert engine.search("").hits == () and engine.search("   ").hits == ()
    assert engine.search("the of and").hits == ()


def test_a_limit_larger_than_the_catalog_returns_every_match():
    response = lexical_engine(candidates=1).search("search issues github gitlab weather", limit=100)
    assert 0 < len(response.hits) <= len(CATALOG)


def test_hits_carry_the_rank_each_signal_gave_them():
    weights = {"bm25_name": 1.0, "bm25_description": 1.0, "tfidf": 1.0}
    hit = lexical_engine(weights=weights).search("send an email", limit=1).hits[0]
    assert hit.ranks["bm25_name"] == 1 and hit.ranks["bm25_description"] == 1 and hit.ranks["tfidf"] == 1


def test_an_empty_catalog_answers_with_no_hits():
    engine = ToolSearch(SearchSettings.lexical_only())
    engine.index([])
    assert engine.search("anything").hits == ()


def test_dense_signal_is_pending_until_complete_and_the_answer_says_so(tmp_path):
    engine = ToolSearch(SearchSettings(cache_dir=tmp_path), encoder=HashingEncoder())
    engine.index(CATALOG)
    before = engine.search("weather forecast", limit=2)
    assert engine.pending and before.notice == PENDING_NOTICE and "dense" not in before.signals
    engine.complete()
    after = engine.search("weather forecast", limit=2)
    assert not engine.pending and after.notice is None and "dense" in after.signals
    assert after.hits[0].ranks["dense"] >= 1


def test_complete_running_in_a_thread_while_searches_continue(tmp_path):
    engine = ToolSearch(SearchSettings(cache_dir=tmp_path), encoder=HashingEncoder())
    engine.index(CATALOG)
    worker = threading.Thread(target=engine.complete)
    worker.start()
    for _ in range(20):
        assert engine.search("send email", limit=1).hits[0].tool.id == "mail__send_email"
    worker.join(timeout=30)
    assert not engine.pending


def test_a_model_that_cannot_be_loaded_leaves_keyword_search_working(tmp_path):
    engine = ToolSearch(SearchSettings(cache_dir=tmp_path, model="no-such-model-package"))
    engine.index(CATALOG)
    engine.complete()
    response = engine.search("send email", limit=1)
    assert ids(response) == ["mail__send_email"]
    assert not engine.pending and "no-such-model-package" in response.notice


def test_weights_parse_from_cli_strings_and_unknown_signals_are_refused():
    assert parse_weights("dense=1, bm25_name=0.5") == {"dense": 1.0, "bm25_name": 0.5}
    with pytest.raises(ValueError, match="unknown signal.*'bm42'.*known signals"):
        parse_weights("bm42=1")
    with pytest.raises(ValueError, match="not a number"):
        parse_weights("dense=high")
    with pytest.raises(ValueError, match="unknown signal"):
        SearchSettings(weights={"bm42": 1.0})
