"""What a gateway searches of an upstream still starting: the tools it listed last (stored, or seen
earlier in this run), never those of one that is down, and its own listing once it is up."""

from __future__ import annotations

from toolscout.catalog import Catalog, ToolRecord
from toolscout.gateway.last_listed import LastListed
from toolscout.naming import NameMap
from toolscout.upstream.catalog_cache import SeenCatalog
from toolscout.upstream.status import State, UpstreamStatus


def status(name: str, state: State, tools: int = 0, summary: str = "") -> UpstreamStatus:
    return UpstreamStatus(name=name, transport="stdio", state=state, reason=None, tool_count=tools, summary=summary)


def catalog(*pairs: tuple[str, str], description: str = "") -> Catalog:
    ids = NameMap.of(pairs).by_pair
    return Catalog.of([ToolRecord(id=ids[pair], name=pair[1], server=pair[0], description=description) for pair in pairs])


STORED = SeenCatalog(
    seen_at=0.0,
    statuses=(status("git", State.UP, 1, "Git repositories"), status("time", State.UP, 1, "Clocks")),
    catalog=catalog(("git", "log"), ("time", "now"), description="as stored"),
)


def test_an_upstream_still_starting_is_searched_in_its_stored_tools_and_one_that_is_down_is_not() -> None:
    last = LastListed(STORED)
    live = catalog(("time", "now"), description="as listed now")
    searched = last.searchable(live, [status("git", State.STARTING), status("time", State.UP, 1)])
    assert [(t.server, t.name, t.description) for t in searched.tools] == [
        ("git", "log", "as stored"), ("time", "now", "as listed now"),
    ]
    assert [s.summary for s in last.described([status("git", State.STARTING, summary="no tools")])] == ["Git repositories"]
    assert last.searchable(live, [status("git", State.DOWN), status("time", State.UP, 1)]) == live


def test_what_an_upstream_lists_once_up_replaces_what_was_stored_for_its_next_start() -> None:
    last = LastListed(STORED)
    last.searchable(catalog(("git", "log"), ("git", "diff"), description="listed"), [status("git", State.UP, 2)])
    searched = last.searchable(Catalog(), [status("git", State.STARTING)])
    assert [(t.name, t.description) for t in searched.tools] == [("log", "listed"), ("diff", "listed")]


def test_without_a_stored_catalog_nothing_is_searched_before_an_upstream_lists() -> None:
    last = LastListed(None)
    assert not last.from_store
    assert last.searchable(Catalog(), [status("git", State.STARTING)]).tools == ()
