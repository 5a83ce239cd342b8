"""A tool that deletes or resets never outranks a similar constructive one unless the request asks to remove."""

from __future__ import annotations

from dataclasses import replace

import pytest

from toolscout.catalog import ToolRecord
from toolscout.search import SearchSettings, ToolSearch
from toolscout.search.destructive import asks_to_destroy, demote_destructive, is_destructive

# Short destructive descriptions win on word overlap alone: "chart" is most of "Remove a chart".
CHARTS = [
    ToolRecord(id="x__delete_chart", name="delete_chart", server="x", description="Remove a chart; its data stays."),
    ToolRecord(
        id="x__create_chart",
        name="create_chart",
        server="x",
        description="Add or replace a chart from a block of cells. Returns its name and the cells it covers.",
        # Servers mark any tool that may overwrite as destructive; that does not make it a removal.
        annotations={"readOnlyHint": False, "destructiveHint": True},
    ),
]


def _tool(name: str, description: str = "", **annotations: bool) -> ToolRecord:
    return ToolRecord(id=f"s__{name}", name=name, server="s", description=description, annotations=annotations or None)


@pytest.mark.parametrize(
    ("tool", "destructive"),
    [
        (_tool("delete_chart"), True),
        (_tool("DeleteCollection"), True),
        (_tool("git_reset", "Unstages all staged changes"), True),
        (_tool("hangup_call", "Terminates an active call."), True),
        (_tool("create_chart", "Add or replace a chart", destructiveHint=True), False),
        (_tool("list_deleted_items", "List items deleted in the last 30 days"), False),
        (_tool("drop_table", "Drops a table", readOnlyHint=True), False),  # annotations say it is read-only
    ],
)
def test_a_tool_is_destructive_when_its_name_or_description_starts_with_a_destructive_verb(
    tool: ToolRecord, destructive: bool
) -> None:
    assert is_destructive(tool) is destructive


def test_a_request_asks_to_destroy_when_it_names_a_destructive_action_in_any_form() -> None:
    assert asks_to_destroy("undo my last staged change")
    assert asks_to_destroy("Deleting the rows I added yesterday")
    assert not asks_to_destroy("make a chart from spreadsheet data")
    assert not asks_to_destroy("show me what changed in the repo")


def test_make_a_chart_finds_the_tool_that_makes_one_and_remove_finds_the_one_that_removes() -> None:
    engine = ToolSearch(SearchSettings.lexical_only())
    engine.index(CHARTS)
    assert engine.search("make a chart", limit=2).hits[0].tool.id == "x__create_chart"
    assert engine.search("remove the chart", limit=2).hits[0].tool.id == "x__delete_chart"
    # Without the demotion, word overlap alone puts the removal first.
    plain = ToolSearch(replace(SearchSettings.lexical_only(), destructive_factor=1.0))
    plain.index(CHARTS)
    assert plain.search("make a chart", limit=2).hits[0].tool.id == "x__delete_chart"


def test_demotion_only_reorders_close_scores_and_keeps_order_otherwise() -> None:
    fused = [(0, 0.50), (1, 0.48), (2, 0.30), (3, 0.10)]
    destructive = [True, False, False, True]
    assert demote_destructive(fused, destructive, 0.9) == [(1, 0.48), (0, 0.45), (2, 0.30), (3, 0.09000000000000001)]
    assert demote_destructive(fused, destructive, 1.0) is fused
    assert demote_destructive(fused, [False] * 4, 0.9) is fused


def test_the_factor_must_be_a_fraction() -> None:
    with pytest.raises(ValueError, match="destructive_factor"):
        SearchSettings(destructive_factor=0)
    with pytest.raises(ValueError, match="destructive_factor"):
        SearchSettings(destructive_factor=1.5)
