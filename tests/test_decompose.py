from toolscout.catalog import ToolRecord
from toolscout.search import SearchSettings, ToolSearch
from toolscout.search.sentences import add_best_part, request_parts


def test_a_request_of_one_sentence_has_no_parts():
    assert request_parts("Find the weather forecast for Paris and send it by email.") == []


def test_a_request_of_several_sentences_is_split_into_the_ones_that_name_a_need():
    text = "I am planning a trip to Paris. Can you get the weather forecast? Thanks! Also convert 100 USD to EUR."
    assert request_parts(text) == [
        "I am planning a trip to Paris.",
        "Can you get the weather forecast?",
        "Also convert 100 USD to EUR.",
    ]


def test_an_item_gains_the_weight_times_its_best_part_score_and_the_order_follows():
    fused = [("a", 1.0), ("b", 0.5)]
    parts = [[("b", 0.4), ("c", 0.1)], [("b", 0.2), ("c", 0.9)]]
    assert add_best_part(fused, parts, 1.0) == [("a", 1.0), ("b", 0.9), ("c", 0.9)]


def tool(server: str, name: str, description: str) -> ToolRecord:
    return ToolRecord(id=f"{server}__{name}", name=name, server=server, description=description)


# Each of many tools shares two words with the long first sentence; one serves the short second need.
WEATHER_WORDS = "temperature humidity wind rain snow pressure sunrise sunset visibility clouds storms fog".split()
CATALOG = [
    *(
        tool(f"weather{i}", f"report_{i}", f"Report {a} and {b} for a place.")
        for i, (a, b) in enumerate(zip(WEATHER_WORDS, WEATHER_WORDS[1:] + WEATHER_WORDS[:1]))
    ),
    tool("money", "exchange", "Exchange rates between currencies, e.g. USD to EUR."),
    tool("calendar", "add_event", "Add an event to a calendar."),
]
REQUEST = f"Tell me the {', '.join(WEATHER_WORDS)} for each city of my trip. Then convert my budget to local currencies."


def top(sentence_weight: float, limit: int) -> list[str]:
    engine = ToolSearch(SearchSettings.lexical_only(sentence_weight=sentence_weight))
    engine.index(CATALOG)
    return [hit.tool.id for hit in engine.search(REQUEST, limit=limit).hits]


def test_a_short_second_need_of_a_long_request_reaches_the_top_results():
    assert "money__exchange" in top(1.0, limit=5)
    assert "money__exchange" not in top(0.0, limit=5)
