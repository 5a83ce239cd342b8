"""Resources, resource templates, prompts, completions and logging relayed through toolscout, over
real MCP sessions with the App `serve` builds, against the library server (tests/upstreams) and
the reference "everything" server from npm."""

from __future__ import annotations

import re
import shutil
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, MCPError
from mcp.client.subscriptions import ResourceUpdated
from support.gateway_session import app_config, app_config_here
from support.registries import python_server, write_registry

from toolscout.app import App, PinOptions
from toolscout.cli import main
from toolscout.gateway import GatewayOptions
from toolscout.serving.proxied import RESOURCE_NOT_FOUND, LogRate

pytestmark = pytest.mark.anyio

README = "toolscout://library/library://readme"
BOOKS = "toolscout://library/library://books/{title}"


class Received(list[Any]):
    """Every notification a client received, and a way to wait for one of a kind."""

    def __init__(self) -> None:
        super().__init__()
        self._arrived = anyio.Event()

    async def __call__(self, message: Any) -> None:
        self.append(message)
        self._arrived.set()
        self._arrived = anyio.Event()

    async def first(self, kind: type) -> Any:
        """The first message of `kind`, once it has arrived (the caller bounds the wait)."""
        while not any(isinstance(m, kind) for m in self):
            await self._arrived.wait()
        return next(m for m in self if isinstance(m, kind))


@asynccontextmanager
async def library(
    tmp_path: Path, *flags: str, env: dict[str, str] | None = None, **config: Any
) -> AsyncIterator[tuple[App, Client, Received]]:
    """toolscout over the library server (and the notes server: two upstreams), a client session
    on it, and every notification and log message that client received. Both run in this process
    unless the library needs its command line or environment (flags, `env`)."""
    library_entry = python_server("library_server.py", *flags, **({"env": env} if env else {}))
    registry = write_registry(tmp_path / "r.json", {"library": library_entry, "notes": python_server("notes_server.py")})
    received = Received()
    async with App(app_config_here(registry, **config)) as app:
        await app.gateway.ready(30)
        async with Client(app.server, mode="legacy", message_handler=received) as client:
            yield app, client, received


async def test_resources_and_templates_are_listed_under_namespaced_uris_that_read_back_from_their_owner(tmp_path: Path) -> None:
    with anyio.fail_after(60):
        async with library(tmp_path) as (_, client, _):
            resources = (await client.list_resources()).resources
            templates = (await client.list_resource_templates()).resource_templates
            readme = await client.read_resource(README)
            dune = await client.read_resource(BOOKS.replace("{title}", "dune"))
            big = await client.read_resource("toolscout://library/library://big")
            own = await client.read_resource("library://books/emma")  # only one upstream offers it
            with pytest.raises(MCPError) as unknown:
                await client.read_resource("gopher://nowhere")
            with pytest.raises(MCPError) as unknown_server:
                await client.read_resource("toolscout://nowhere/library://readme")
    assert {r.uri for r in resources} == {README, "toolscout://library/library://big"}
    shown = next(r for r in resources if r.uri == README)
    assert (shown.title, shown.description, shown.mime_type) == ("Read me", "What this library holds.", "text/plain")
    assert sorted(t.uri_template for t in templates) == [BOOKS, "toolscout://library/library://vault/{title}"]
    assert readme.contents[0].uri == README and "holds 2 books" in readme.contents[0].text
    assert dune.contents[0].text.startswith("Dune, by Frank Herbert")
    # Cut to max_result_bytes like a tool result, with a note saying so.
    assert sum(len(c.text) for c in big.contents[:-1]) <= 256 * 1024
    assert "over the 256 KiB limit (max_result_bytes)" in big.contents[-1].text
    assert own.contents[0].uri == "toolscout://library/library://books/emma" and own.contents[0].text == "Emma, by Jane Austen."
    assert unknown.value.code == RESOURCE_NOT_FOUND and "toolscout://SERVER/URI" in unknown.value.error.message
    assert unknown_server.value.code == RESOURCE_NOT_FOUND


async def test_an_upstream_whose_resources_cannot_be_listed_still_serves_its_tools(tmp_path: Path) -> None:
    with anyio.fail_after(60):
        async with library(tmp_path, "--broken-resources") as (_, client, _):
            resources = (await client.list_resources()).resources
            prompts = [p.name for p in (await client.list_prompts()).prompts]
            added = await client.call_tool("execute_tool", {"name": "library__add_book", "arguments": {"title": "a", "text": "b"}})
    assert resources == [] and prompts == []
    assert not added.is_error


async def test_prompts_are_listed_with_namespaced_names_and_their_arguments_checked(tmp_path: Path) -> None:
    with anyio.fail_after(60):
        async with library(tmp_path) as (_, client, _):
            prompts = (await client.list_prompts()).prompts
            got = await client.get_prompt("library__discuss", {"title": "dune", "style": "long"})
            with pytest.raises(MCPError) as missing:
                await client.get_prompt("library__discuss", {"style": "long"})
            with pytest.raises(MCPError) as extra:
                await client.get_prompt("library__discuss", {"title": "dune", "mood": "sad"})
            own = await client.get_prompt("discuss", {"title": "emma"})  # its own name: one upstream has it
            with pytest.raises(MCPError) as unknown:
                await client.get_prompt("chat", {"title": "dune"})
    assert [p.name for p in prompts] == ["library__discuss"]
    assert [(a.name, a.required) for a in prompts[0].arguments] == [("title", True), ("style", False)]
    assert got.messages[0].content.text == "Discuss the book 'dune' in a long style."
    assert "missing required argument(s): title" in missing.value.error.message
    assert "It takes: title, style (optional)" in missing.value.error.message
    assert "unknown argument(s): mood" in extra.value.error.message
    assert own.messages[0].content.text == "Discuss the book 'emma' in a short style."
    assert "Unknown prompt 'chat'" in unknown.value.error.message and "library__discuss" in unknown.value.error.message


async def test_an_upstreams_own_uri_that_two_upstreams_offer_must_be_namespaced(tmp_path: Path) -> None:
    registry = write_registry(tmp_path / "r.json", {
        "library": python_server("library_server.py"), "annex": python_server("library_server.py"),
    })
    with anyio.fail_after(60):
        async with App(app_config_here(registry)) as app:
            await app.gateway.ready(30)
            async with Client(app.server, mode="legacy") as client:
                with pytest.raises(MCPError) as ambiguous:
                    await client.read_resource("library://readme")
                annex = await client.read_resource("toolscout://annex/library://readme")
                prompts = [p.name for p in (await client.list_prompts()).prompts]
    assert "offered by several servers (annex, library)" in ambiguous.value.error.message
    assert annex.contents[0].uri == "toolscout://annex/library://readme"
    assert prompts == ["annex__discuss", "library__discuss"]


async def test_completions_are_routed_to_the_upstream_that_owns_the_prompt_or_template(tmp_path: Path) -> None:
    with anyio.fail_after(60):
        async with library(tmp_path) as (_, client, _):
            by_template = await client.complete(types.ResourceTemplateReference(uri=BOOKS), {"name": "title", "value": "d"})
            by_prompt = await client.complete(types.PromptReference(name="library__discuss"), {"name": "title", "value": "e"})
            with pytest.raises(MCPError) as unknown:
                await client.complete(types.PromptReference(name="notes__discuss"), {"name": "title", "value": ""})
    assert by_template.completion.values == ["dune"]
    assert by_prompt.completion.values == ["emma"]
    assert "Unknown prompt 'notes__discuss'" in unknown.value.error.message


async def test_log_messages_reach_a_client_that_set_a_level_tagged_with_their_server(tmp_path: Path) -> None:
    token = "lib-7f3a9c2e51d84b06"
    with anyio.fail_after(60):
        async with library(tmp_path, env={"LIBRARY_TOKEN": token}) as (_, client, received):
            await client.call_tool("execute_tool", {"name": "library__chatter", "arguments": {"count": 2}})
            before = [m for m in received if isinstance(m, types.LoggingMessageNotification)]
            with pytest.warns(Warning):  # the SDK marks logging deprecated in 2026-07-28
                await client.set_logging_level("info")
            await client.call_tool("execute_tool", {"name": "library__chatter", "arguments": {"count": 3}})
    logs = [m.params for m in received if isinstance(m, types.LoggingMessageNotification)]
    assert before == []  # nobody asked: nothing relayed
    assert [(p.logger, p.data) for p in logs] == [
        ("library/worker", "working on step 0 with token ***"),  # the registry's secret never reaches a client
        ("library/worker", "working on step 1"),
        ("library/worker", "working on step 2"),
    ]


async def test_a_registry_secret_an_upstream_echoes_in_what_it_offers_or_returns_never_reaches_a_client(tmp_path: Path) -> None:
    token = "lib-7f3a9c2e51d84b06"
    with anyio.fail_after(60):
        async with library(tmp_path, env={"LIBRARY_TOKEN": token}) as (app, legacy, _):
            ledger = await legacy.read_resource(BOOKS.replace("{title}", "ledger"))
            templates = (await legacy.list_resource_templates()).resource_templates
            found = await legacy.call_tool("search_tools", {"query": "write log messages while working"})
            async with Client(app.server, mode="2026-07-28") as modern:
                prompt = await modern.get_prompt("library__discuss", {"title": "dune", "style": "signed"})
    assert ledger.contents[0].text == "The ledger, kept under key ***."
    assert prompt.messages[0].content.text == "Discuss the book 'dune' in a signed style. Sign it with ***."
    # The definitions it lists, too: in resources/templates/list, and as search_tools shows a tool.
    books = next(t for t in templates if t.uri_template == BOOKS)
    assert books.description == "The text of one book by its title. The ledger is kept under key ***."
    chatter = next(t for t in found.structured_content["tools"] if t["id"] == "library__chatter")
    assert chatter["description"].endswith("The ledger is kept under key ***.")
    assert token not in str(found.structured_content)


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_icons_annotations_resource_links_and_structured_output_pass_through_unchanged(
    tmp_path: Path, mode: str
) -> None:
    icon = types.Icon(src="data:image/png;base64,iVBORw0KGgo=", mime_type="image/png", sizes=["16x16"])
    for_readers = types.Annotations(audience=["user"], priority=0.8)
    with anyio.fail_after(60):
        async with library(tmp_path) as (app, _, _):
            async with Client(app.server, mode=mode) as client:
                readme = next(r for r in (await client.list_resources()).resources if r.uri == README)
                discuss = (await client.list_prompts()).prompts[0]
                card = await client.call_tool("execute_tool", {"name": "library__card", "arguments": {"title": "dune"}})
                found = await client.call_tool("search_tools", {"query": "catalogue card of a book", "limit": 1})
    assert (readme.icons, readme.annotations) == ([icon], for_readers)
    assert discuss.icons == [icon]
    link, text = card.content
    assert isinstance(link, types.ResourceLink)  # the upstream's own URI, as it sent it
    assert (link.uri, link.name, link.mime_type, link.icons, link.annotations) == (
        "library://books/dune", "dune", "text/plain", [icon], for_readers)
    assert isinstance(text, types.TextContent) and text.annotations == types.Annotations(audience=["assistant"])
    assert card.structured_content == {"title": "dune", "held": True} and not card.is_error
    assert found.structured_content["tools"][0]["annotations"]["readOnlyHint"] is True


def test_log_messages_are_bounded_in_rate_per_upstream() -> None:
    now = [0.0]
    rate = LogRate(burst=3, rate=1.0, clock=lambda: now[0])
    first = [rate.allow("chatty") for _ in range(5)]
    other = rate.allow("quiet")
    now[0] += 2.0
    later = [rate.allow("chatty") for _ in range(3)]
    assert first == [True, True, True, False, False] and other
    assert later == [True, True, False] and rate.dropped["chatty"] == 3


async def test_subscribed_resource_updates_and_list_changes_reach_the_client(tmp_path: Path) -> None:
    with anyio.fail_after(60):
        async with library(tmp_path) as (app, client, received):
            with pytest.warns(Warning):  # the SDK marks resources/subscribe removed in 2026-07-28
                await client.subscribe_resource(README)
            await client.call_tool("execute_tool", {"name": "library__add_book", "arguments": {"title": "ulysses", "text": "Joyce."}})
            updated = await received.first(types.ResourceUpdatedNotification)
            await client.call_tool("execute_tool", {"name": "library__shelve", "arguments": {"title": "emma"}})
            await received.first(types.ResourceListChangedNotification)
            listed = {r.uri for r in (await client.list_resources()).resources}
    assert updated.params.uri == README
    assert "toolscout://library/library://shelf/emma" in listed


async def test_a_prompt_with_hidden_instructions_is_withheld_and_a_changed_one_quarantined(tmp_path: Path) -> None:
    state = str(tmp_path / "state.sqlite3")
    pins = PinOptions(state)
    # The variants come through the environment: the same command line, so the same server identity.
    poisoned_server, reworded_server = {"LIBRARY_FLAGS": "--poisoned"}, {"LIBRARY_FLAGS": "--reworded"}
    with anyio.fail_after(90):
        async with library(tmp_path, env=poisoned_server, pins=pins, allow_flagged=False) as (app, client, _):
            first = [p.name for p in (await client.list_prompts()).prompts]
            with pytest.raises(MCPError) as poisoned:
                await client.get_prompt("library__summarize_library", {})
        async with library(tmp_path, env=reworded_server, pins=pins, allow_flagged=False) as (app, client, _):
            second = [p.name for p in (await client.list_prompts()).prompts]
            with pytest.raises(MCPError) as changed:
                await client.get_prompt("library__discuss", {"title": "dune"})
        approved = main(["approve", "--state", state, "--server", "library", "prompt:discuss", "--yes"])
        async with library(tmp_path, env=reworded_server, pins=pins, allow_flagged=False) as (app, client, _):
            after = (await client.get_prompt("library__discuss", {"title": "dune"})).messages
    assert first == ["library__discuss"]
    assert "withheld" in poisoned.value.error.message and "hidden instructions" in poisoned.value.error.message
    assert "id_rsa" not in poisoned.value.error.message
    assert second == []
    assert "definition changed" in changed.value.error.message
    assert re.search(
        rf"`toolscout approve --server library@[0-9a-f]{{8}} prompt:discuss --state {re.escape(state)}`",
        changed.value.error.message,
    )
    assert approved == 0 and after


def test_tools_flagged_lists_a_poisoned_prompt_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    registry = write_registry(tmp_path / "r.json", {"library": python_server("library_server.py", "--poisoned")})
    assert main(["tools", "--registry", str(registry), "--flagged"]) == 0
    flagged = capsys.readouterr().out
    assert "library__summarize_library: " in flagged and "library__discuss" not in flagged


@pytest.mark.skipif(shutil.which("npx") is None, reason="needs npx (Node.js) for the reference everything server")
async def test_the_reference_everything_servers_resources_prompts_and_completions_pass_through(tmp_path: Path) -> None:
    registry = write_registry(tmp_path / "r.json", {
        "everything": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything@2026.8.31"]},
    })
    with anyio.fail_after(120):
        async with App(app_config(registry, gateway=_patient())) as app:
            await app.gateway.ready(90)
            async with Client(app.server, mode="legacy") as client:
                resources = (await client.list_resources()).resources
                templates = (await client.list_resource_templates()).resource_templates
                prompts = (await client.list_prompts()).prompts
                first = await client.read_resource(resources[0].uri)
                simple = await client.get_prompt("everything__simple-prompt", {})
                template = next(t for t in templates if "{" in t.uri_template)
                variable = template.uri_template.split("{", 1)[1].split("}", 1)[0]
                completion = await client.complete(
                    types.ResourceTemplateReference(uri=template.uri_template), {"name": variable, "value": "1"}
                )
                links = await client.call_tool("execute_tool", {"name": "everything__get-resource-links", "arguments": {"count": 2}})
                structured = await client.call_tool(
                    "execute_tool", {"name": "everything__get-structured-content", "arguments": {"location": "Chicago"}}
                )
    assert resources and all(r.uri.startswith("toolscout://everything/") for r in resources)
    assert first.contents and first.contents[0].uri == resources[0].uri
    assert "everything__simple-prompt" in {p.name for p in prompts}
    assert simple.messages
    assert isinstance(completion.completion.values, list)
    # Resource links and structured output pass through unchanged.
    assert sum(isinstance(block, types.ResourceLink) for block in links.content) == 2
    assert structured.structured_content and not structured.is_error


def _patient() -> Any:
    return GatewayOptions(start_timeout=90, max_restarts=0)


async def test_a_2026_07_28_clients_listen_stream_follows_a_resource_at_its_upstream(tmp_path: Path) -> None:
    with anyio.fail_after(60):
        async with library(tmp_path) as (app, client, _):
            async with Client(app.server, mode="2026-07-28") as modern:
                async with modern.listen(resource_subscriptions=[README]) as stream:
                    await client.call_tool("execute_tool", {"name": "library__add_book", "arguments": {"title": "kim", "text": "Kipling."}})
                    event = await anext(aiter(stream))
    assert isinstance(event, ResourceUpdated) and event.uri == README
