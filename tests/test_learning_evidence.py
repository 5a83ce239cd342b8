"""Learning from use stores only real successes, through a real MCP session: a search restricted
to other servers, a tool the query did not rank high, a failed call and a call the agent then
corrected are not examples; and example ids that match no tool are reported once, once their
server is up."""

from __future__ import annotations

import logging
from pathlib import Path

import anyio
import pytest
from mcp import Client
from support.gateway_session import here_over
from support.registries import fast_search_settings, write_registry
from support.wiring import ids, scripted

from toolscout.catalog import ToolRecord
from toolscout.gateway import Gateway
from toolscout.learning import Example, UsageStore, UsageTracker
from toolscout.registry.loading import load_registries
from toolscout.search import ToolSearch
from toolscout.serving.learning_hooks import Learning, LearningSources
from toolscout.serving.server import build_server

pytestmark = pytest.mark.anyio

GIT = [
    {"name": "git_log", "description": "Show the commit log of the git repository: recent commits and their messages.",
     "inputSchema": {"type": "object", "properties": {"max_count": {"type": "integer"}}}},
    {"name": "git_status", "description": "Show the working tree status of the git repository.",
     "inputSchema": {"type": "object", "properties": {}}},
    *({"name": f"git_{verb}", "description": f"Show the git {verb} of the repository log over time.",
       "inputSchema": {"type": "object", "properties": {}}} for verb in ("diff", "branches", "tags", "blame", "reflog")),
]
TIME = [
    {"name": "get_current_time", "description": "Get the current time in a time zone.",
     "inputSchema": {"type": "object", "properties": {"timezone": {"type": "string"}}, "required": ["timezone"]}},
]


async def test_only_real_successes_are_stored_as_examples(tmp_path: Path) -> None:
    git, _ = scripted(tmp_path, "git", GIT)
    time, _ = scripted(tmp_path, "time", TIME)
    registry = write_registry(tmp_path / "servers.json", {"git": git, "time": time})
    store = UsageStore(tmp_path / "usage.sqlite3")
    gateway = Gateway(load_registries([registry]), ToolSearch(fast_search_settings()), here_over(registry),
                      enrich=LearningSources(usage=store))

    async def search(client: Client, query: str, **options: object) -> list[str]:
        return ids(await client.call_tool("search_tools", {"query": query, **options}))

    async def run(client: Client, name: str, arguments: dict[str, object]) -> bool:
        return not (await client.call_tool("execute_tool", {"name": name, "arguments": arguments})).is_error

    with anyio.fail_after(40):
        async with gateway:
            await gateway.ready(30)
            async with Learning(gateway, tracker=UsageTracker(store)) as learning:
                async with Client(build_server(gateway, observers=learning.observers), mode="legacy") as client:
                    # Restricted to the time server, "git log" finds the time tool; running it
                    # succeeds, but the unfiltered search would never rank it for git requests.
                    unfiltered = await search(client, "show me the git log over time", limit=10)
                    assert "time__get_current_time" not in unfiltered[:5]
                    assert await search(client, "show me the git log over time", servers=["time"]) == ["time__get_current_time"]
                    assert await run(client, "time__get_current_time", {"timezone": "UTC"})
                    # A failed call (a required argument missing) is no success.
                    assert "time__get_current_time" in await search(client, "current time in a time zone")
                    assert not await run(client, "time__get_current_time", {})
                    # Ran git_status for "recent commits", then asked again in other words and
                    # ran git_log: the first was corrected.
                    assert "git__git_status" in await search(client, "list the recent commits of the repository")
                    assert await run(client, "git__git_status", {})
                    assert "git__git_log" in await search(client, "list recent commits in the repository")
                    assert await run(client, "git__git_log", {})
                    # An unfiltered search, then a successful call of what it ranked first: learned.
                    assert (await search(client, "what time is it in Tokyo"))[0] == "time__get_current_time"
                    assert await run(client, "time__get_current_time", {"timezone": "Asia/Tokyo"})
            learned = sorted((entry.query, entry.tool_id) for entry in store.entries())
    store.close()
    assert learned == [
        ("list recent commits in the repository", "git__git_log"),
        ("what time is it in Tokyo", "time__get_current_time"),
    ]


def test_the_tracker_rule(tmp_path: Path) -> None:
    with UsageStore(tmp_path / "usage.sqlite3") as store:
        tracker = UsageTracker(store)
        # Filtered: recorded only if the unfiltered search ranks the tool high.
        tracker.on_search("s", "show me the git log", ["time__now"], filtered=True)
        assert not tracker.on_execute_success("s", "time__now", ranks_high=lambda query, tool: False)
        tracker.on_search("s", "what is the time", ["time__now"], filtered=True)
        assert tracker.on_execute_success("s", "time__now", ranks_high=lambda query, tool: True)
        # Unfiltered but far down a long list: not evidence without the same check.
        deep = [f"x__t{i}" for i in range(20)]
        tracker.on_search("s", "a long list", deep)
        assert not tracker.on_execute_success("s", "x__t15")
        assert tracker.on_execute_success("s", "x__t2")
        # A correction withdraws the earlier pair, even one observed before.
        store.record("rename a file", "fs__copy")
        tracker.on_search("s", "rename a file", ["fs__copy", "fs__move"])
        assert tracker.on_execute_success("s", "fs__copy")
        tracker.on_search("s", "rename the file", ["fs__move", "fs__copy"])
        assert tracker.on_execute_success("s", "fs__move")
        assert [(e.query, e.tool_id, e.count) for e in store.entries(tool_id="fs__copy")] == [("rename a file", "fs__copy", 1)]
        # A next step of a task (another request) corrects nothing.
        tracker.on_search("s", "delete the old backup folder", ["fs__delete"])
        assert tracker.on_execute_success("s", "fs__delete")
        assert store.entries(tool_id="fs__move")


def test_example_ids_matching_no_tool_are_reported_once_after_their_server_is_up(
    caplog: pytest.LogCaptureFixture,
) -> None:
    sources = LearningSources(examples=[Example("jot this down", ("office__write_note", "office__scribble", "mail__send"))])
    office = [ToolRecord(id="office__write_note", name="write_note", server="office")]
    with caplog.at_level(logging.INFO):
        sources([])  # nothing is up yet: nothing to say
        sources(office)  # office is up and has no scribble: said
        sources(office)  # said already
    reports = [r.getMessage() for r in caplog.records if "match no tool" in r.getMessage()]
    assert reports == ["1 example tool id(s) match no tool of their server, e.g. office__scribble"]
