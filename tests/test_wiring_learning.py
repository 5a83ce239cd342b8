"""Retrieval that learns, wired into the gateway: overlays and example files fill the expansion field,
usage is recorded from real sessions and used at the next build, and `--expand` asks a client's
model (a deterministic sampling callback) for phrases in the background."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from support.gateway_session import app_config_here, here_over
from support.registries import fast_search_settings, write_registry
from mcp import Client, StdioServerParameters
from support.serve_process import serve_command, served_over_http
from support.wiring import NOTE, SEND, catalog_where, echoed, ids, scripted

from toolscout.app import App
from toolscout.cli import main
from toolscout.gateway import Gateway
from toolscout.learning import ExpansionCache, UsageStore
from toolscout.learning.options import LearningOptions
from toolscout.registry.loading import load_registries
from toolscout.search import ToolSearch
from toolscout.serving.learning_hooks import Learning, LearningSources, SamplingExpansion
from toolscout.serving.server import build_server

pytestmark = pytest.mark.anyio

PLAN = {"name": "plan_trip", "description": "Book flights and hotels for a journey.",
        "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}}}
TOOLS = [SEND, NOTE, PLAN]
# Words that appear in no tool's name, description or schema.
OVERLAY_PHRASE = "let the boss know how things are going"
EXAMPLE_QUERY = "jot down what grandma said"


def office_registry(tmp_path: Path) -> Path:
    entry, _ = scripted(tmp_path, "office", TOOLS)
    return write_registry(tmp_path / "servers.json", {"office": entry})


def gateway_over(registry: Path, sources: LearningSources) -> Gateway:
    return Gateway(load_registries([registry]), ToolSearch(fast_search_settings()), here_over(registry), enrich=sources)


async def test_overlay_phrases_and_example_files_make_tools_findable_in_the_users_words(tmp_path: Path) -> None:
    registry = office_registry(tmp_path)
    overlay = tmp_path / "mine.overlay.json"
    overlay.write_text(json.dumps({"version": 1, "tools": {"office__send_*": {"phrases": [OVERLAY_PHRASE]}}}))
    examples = tmp_path / "examples.jsonl"
    examples.write_text(json.dumps({"query": EXAMPLE_QUERY, "tools": ["office__read_note"]}) + "\n")
    plain = App(app_config_here(registry, learning=LearningOptions()))
    learned = App(app_config_here(registry, learning=LearningOptions(overlays=(overlay,), examples=(examples,))))
    with anyio.fail_after(30):
        async with plain, learned:
            await plain.gateway.ready(20)
            await learned.gateway.ready(20)
            async with Client(plain.server, mode="legacy") as before, \
                    Client(learned.server, mode="legacy") as after:
                without = [ids(await before.call_tool("search_tools", {"query": q})) for q in (OVERLAY_PHRASE, EXAMPLE_QUERY)]
                with_ = [ids(await after.call_tool("search_tools", {"query": q})) for q in (OVERLAY_PHRASE, EXAMPLE_QUERY)]
    assert without == [[], []]
    assert with_[0][0] == "office__send_report"
    assert with_[1][0] == "office__read_note"


def test_search_reads_the_overlay_kept_next_to_its_registry_and_reports_a_broken_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    registry = office_registry(tmp_path)
    overlay = tmp_path / "servers.overlay.json"
    overlay.write_text(json.dumps({"version": 1, "tools": {"office__send_report": {"phrases": [OVERLAY_PHRASE]}}}))
    assert main(["search", OVERLAY_PHRASE, "--registry", str(registry), "--model", "none", "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    overlay.write_text(json.dumps({"version": 1, "tools": {"office__send_report": {"phrases": [5]}}}))
    code = main(["search", OVERLAY_PHRASE, "--registry", str(registry), "--model", "none"])
    error = capsys.readouterr().err
    assert found["tools"][0]["id"] == "office__send_report"
    assert code == 2 and "servers.overlay.json is not valid" in error and "phrases" in error


async def test_a_search_followed_by_a_successful_execution_is_learned_and_used_at_the_next_build(tmp_path: Path) -> None:
    registry = office_registry(tmp_path)
    query = "email the weekly status report to the team"
    with anyio.fail_after(30):
        # As `serve` without --no-learn: usage is recorded in the (test's own) data directory.
        config = app_config_here(registry, learning=LearningOptions(record=True))
        async with App(config) as app:
            await app.gateway.ready(20)
            async with Client(app.server, mode="legacy") as client:
                found = ids(await client.call_tool("search_tools", {"query": query}))
                # Not learned: a failed call, and a tool this search did not return.
                await client.call_tool("execute_tool", {"name": "office__send_report", "arguments": {}})
                await client.call_tool("execute_tool", {"name": "office__plan_trip", "arguments": {"city": "Oslo"}})
                ran = await client.call_tool("execute_tool", {"name": "office__send_report", "arguments": {"to": "a"}})
        # Leaving the app wrote what was pending.
        with UsageStore() as store:
            learned = [(entry.query, entry.tool_id) for entry in store.entries()]
        async with App(config) as app:  # the next build uses it
            catalog = await catalog_where(app.gateway, lambda c: "office__send_report" in c.by_id)
    assert "office__plan_trip" not in found
    assert echoed(ran)["tool"] == "send_report"
    assert learned == [(query, "office__send_report")]
    assert catalog.by_id["office__send_report"].expansion == (query,)


async def serve_and_use(registry: Path, data_dir: Path, *extra: str, model: Any = None) -> list[str]:
    """`toolscout serve` over stdio: one search and one successful execution of what it found; with a
    sampling `model`, then what a search for a phrase the model wrote finds, once re-indexed."""
    args = ["-m", "toolscout.cli", "serve", "--registry", str(registry), "--model", "none", *extra]
    env = {**os.environ, "TOOLSCOUT_DATA_DIR": str(data_dir), "TOOLSCOUT_STATE": str(data_dir / "state.sqlite3")}
    reindexed = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            reindexed.set()

    server = StdioServerParameters(command=sys.executable, args=args, env=env)
    async with Client(server, mode="legacy", sampling_callback=model, message_handler=on_message) as client:
        found = ids(await client.call_tool("search_tools", {"query": "book a hotel for my journey"}))
        assert found[0] == "office__plan_trip"
        echoed(await client.call_tool("execute_tool", {"name": found[0], "arguments": {"city": "Oslo"}}))
        while model is not None:
            found = ids(await client.call_tool("search_tools", {"query": "brief the boss on progress"}))
            if found:
                return found
            await reindexed.wait()
            reindexed = anyio.Event()
    return []


async def test_serve_records_usage_unless_started_with_no_learn_and_expand_uses_the_clients_model(tmp_path: Path) -> None:
    registry = office_registry(tmp_path)
    model = DeterministicModel()
    results: dict[str, list[str]] = {}

    async def run(name: str, *extra: str, model: Any = None) -> None:
        results[name] = await serve_and_use(registry, tmp_path / name, *extra, model=model)

    with anyio.fail_after(60):
        async with anyio.create_task_group() as tg:
            tg.start_soon(run, "opted-out", "--no-learn")
            tg.start_soon(lambda: run("learning", "--expand", model=model))
    with UsageStore(tmp_path / "learning" / "state.sqlite3") as store:
        learned = [(entry.query, entry.tool_id) for entry in store.entries()]
    with UsageStore(tmp_path / "opted-out" / "state.sqlite3") as store:
        assert store.entries() == []
    assert learned == [("book a hotel for my journey", "office__plan_trip")]
    # The first tool was expanded at once; the others wait their turn under the rate limit.
    assert results["learning"][0] == "office__send_report"


class DeterministicModel:
    """The client's sampling callback: phrases that are a function of the tool's name."""

    def __init__(self) -> None:
        self.prompts: list[str] = []

    async def __call__(self, context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        prompt = params.messages[0].content.text
        self.prompts.append(prompt)
        name = prompt.split("Tool: ", 1)[1].split(" ", 1)[0]
        phrases = {"send_report": ["brief the boss on progress"], "read_note": ["look up my scribbles"],
                   "plan_trip": ["organise a getaway"]}[name]
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(text=json.dumps(phrases)), model="deterministic"
        )


async def test_expand_asks_a_sampling_client_for_phrases_in_the_background_and_reindexes(tmp_path: Path) -> None:
    registry = office_registry(tmp_path)
    cache = ExpansionCache(tmp_path / "expansions.sqlite3")
    gateway = gateway_over(registry, LearningSources(cache=cache))
    model = DeterministicModel()
    with anyio.fail_after(30):
        async with gateway:
            await gateway.ready(20)
            expansion = SamplingExpansion(gateway, cache, requests_per_minute=60_000)
            async with Learning(gateway, expansion=expansion) as learning:
                server = build_server(gateway, observers=learning.observers)
                learning.install(server)
                async with Client(server, mode="legacy") as no_sampling:
                    await no_sampling.call_tool("search_tools", {"query": "anything"})
                asked_without_sampling = len(model.prompts)
                async with Client(server, mode="legacy", sampling_callback=model) as client:
                    await catalog_where(gateway, lambda c: all(tool.expansion for tool in c.tools))
                    found = ids(await client.call_tool("search_tools", {"query": "brief the boss on progress"}))
    cache.close()
    assert asked_without_sampling == 0
    assert len(model.prompts) == len(TOOLS)
    assert found[0] == "office__send_report"


async def test_over_http_usage_is_linked_within_a_client_session(tmp_path: Path) -> None:
    command = serve_command(office_registry(tmp_path), "--transport", "http", "--port", "0")
    env = {**os.environ, "TOOLSCOUT_DATA_DIR": str(tmp_path / "data")}
    with anyio.fail_after(60):
        async with served_over_http(command, env) as url:
            async with Client(url, mode="legacy") as first, Client(url, mode="legacy") as second:
                assert ids(await first.call_tool("search_tools", {"query": "book a hotel for my journey"}))[0] == "office__plan_trip"
                assert ids(await second.call_tool("search_tools", {"query": "email the weekly status report"}))[0] == "office__send_report"
                # Each runs the tool the *other* session's search found: no search of its own led there.
                echoed(await first.call_tool("execute_tool", {"name": "office__send_report", "arguments": {"to": "a"}}))
                echoed(await second.call_tool("execute_tool", {"name": "office__plan_trip", "arguments": {}}))
                echoed(await first.call_tool("execute_tool", {"name": "office__plan_trip", "arguments": {}}))
    with UsageStore() as store:  # the state store the served process shared (the test's own)
        assert [(entry.query, entry.tool_id) for entry in store.entries()] == [("book a hotel for my journey", "office__plan_trip")]


class IntentSearch(ToolSearch):
    """An engine with an intent signal's entry point: `index(tools, examples=...)`."""

    def index(self, tools: Any, *, examples: Any = ()) -> None:
        self.examples = list(examples)
        super().index(tools)


async def test_an_engine_that_learns_from_examples_gets_the_files_and_the_learned_ones_at_each_build(tmp_path: Path) -> None:
    from toolscout.learning import Example

    registry = office_registry(tmp_path)
    examples = tmp_path / "examples.jsonl"
    examples.write_text(json.dumps({"query": EXAMPLE_QUERY, "tools": ["office__read_note"]}) + "\n")
    store = UsageStore(tmp_path / "usage.sqlite3")
    store.record("book a hotel for my journey", "office__plan_trip", "office")
    engine = IntentSearch(fast_search_settings())
    gateway = Gateway(load_registries([registry]), engine, here_over(registry),
                      enrich=LearningSources.load([], [examples], usage=store))
    with anyio.fail_after(30):
        async with gateway:
            await gateway.ready(20)
    store.close()
    assert engine.examples == [Example(EXAMPLE_QUERY, ("office__read_note",)),
                               Example("book a hotel for my journey", ("office__plan_trip",))]
