"""An upstream's sampling and elicitation during execute_tool reach the client that made the call,
and only it, with the upstream named; its answer goes back. Real sessions with the App `serve`
builds: the library server (tests/upstreams; it asks the 2026-07-28 way, "input required") and the
reference "everything" server from npm (it asks on the session, the handshake way). Our own
servers run in this process (the relay is the subject, not the transport); the npm one as a process."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from support.gateway_session import app_config, app_config_here, text_of
from support.registries import python_server, write_registry

from toolscout.app import App
from toolscout.gateway import GatewayOptions

pytestmark = pytest.mark.anyio


class Person:
    """A client's sampling and elicitation callbacks: what it was asked, and a fixed answer."""

    def __init__(self, pick: str = "dune", agree: bool = True) -> None:
        self.asked: list[str] = []
        self._pick, self._agree = pick, agree

    async def sample(self, context: Any, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        self.asked.append(params.system_prompt or "")
        return types.CreateMessageResult(role="assistant", content=types.TextContent(text=self._pick), model="test")

    async def elicit(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        self.asked.append(params.message)
        return types.ElicitResult(action="accept", content={"agree": self._agree})


def execute(tool: str, **arguments: Any) -> dict[str, Any]:
    return {"name": tool, "arguments": arguments}


async def test_elicitation_and_sampling_reach_the_calling_client_named_and_its_answer_goes_back(tmp_path: Path) -> None:
    registry = write_registry(tmp_path / "r.json", {"library": python_server("library_server.py")})
    person, other = Person(pick="emma"), Person()
    with anyio.fail_after(60):
        async with App(app_config_here(registry)) as app:
            await app.gateway.ready(30)
            async with Client(app.server, mode="legacy", sampling_callback=person.sample,
                              elicitation_callback=person.elicit) as client, \
                    Client(app.server, mode="legacy", sampling_callback=other.sample,
                           elicitation_callback=other.elicit) as bystander:
                borrowed = await client.call_tool("execute_tool", execute("library__borrow", title="dune"))
                recommended = await client.call_tool("execute_tool", execute("library__recommend"))
                rare = await client.read_resource("toolscout://library/library://vault/emma")
                await bystander.call_tool("search_tools", {"query": "borrow a book"})
    assert text_of(borrowed) == "lent dune" and text_of(recommended) == "the model recommends emma"
    assert rare.contents[0].text == "the rare book emma"  # a resource read may ask too
    assert person.asked == [
        "Upstream server 'library' asks: Agree to the lending terms for dune?",
        "(Asked by the upstream server 'library' through toolscout.)",
        "Upstream server 'library' asks: Handle emma with gloves?",
    ]
    assert other.asked == []  # never another client


async def test_a_client_without_the_capability_gets_a_clear_error_in_the_result_not_a_hang(tmp_path: Path) -> None:
    registry = write_registry(tmp_path / "r.json", {"library": python_server("library_server.py")})
    able = Person()
    with anyio.fail_after(60):
        async with App(app_config_here(registry)) as app:
            await app.gateway.ready(30)
            async with Client(app.server, mode="legacy", sampling_callback=able.sample) as sampler, \
                    Client(app.server, mode="legacy") as plain:
                refused = await plain.call_tool("execute_tool", execute("library__recommend"))
                asked_elsewhere = list(able.asked)
                no_elicitation = await sampler.call_tool("execute_tool", execute("library__borrow", title="emma"))
    assert refused.is_error
    assert "did not declare the sampling capability" in text_of(refused)
    assert asked_elsewhere == []  # the client that can sample was not asked in its place
    assert no_elicitation.is_error and "did not declare the elicitation capability" in text_of(no_elicitation)


@pytest.mark.skipif(shutil.which("npx") is None, reason="needs npx (Node.js) for the reference everything server")
async def test_a_handshake_era_upstreams_requests_on_the_session_reach_the_calling_client(tmp_path: Path) -> None:
    registry = write_registry(tmp_path / "r.json", {
        "everything": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything@2026.8.31"]},
    })
    person = Person(pick="a haiku")
    with anyio.fail_after(120):
        async with App(app_config(registry, gateway=GatewayOptions(start_timeout=90, max_restarts=0))) as app:
            await app.gateway.ready(90)
            async with Client(app.server, mode="legacy", sampling_callback=person.sample,
                              elicitation_callback=person.elicit) as client:
                sampled = await client.call_tool(
                    "execute_tool", execute("everything__trigger-sampling-request", prompt="write a haiku", maxTokens=20)
                )
                elicited = await client.call_tool("execute_tool", execute("everything__trigger-elicitation-request"))
            async with Client(app.server, mode="legacy") as plain:
                refused = await plain.call_tool(
                    "execute_tool", execute("everything__trigger-sampling-request", prompt="hi", maxTokens=5)
                )
    assert "a haiku" in text_of(sampled)
    assert person.asked[0].startswith("(Asked by the upstream server 'everything' through toolscout.)")
    assert person.asked[1].startswith("Upstream server 'everything' asks: ")
    assert not elicited.is_error
    assert refused.is_error and "did not declare the sampling capability" in text_of(refused)


async def test_a_2026_07_28_client_gets_the_upstreams_input_required_as_its_own_and_retries(tmp_path: Path) -> None:
    registry = write_registry(tmp_path / "r.json", {
        "library": python_server("library_server.py"), "conformance": python_server("conformance_server.py"),
    })
    person, context = Person(pick="dune"), Person()

    async def give_context(ctx: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        context.asked.append(params.message)
        return types.ElicitResult(action="accept", content={"context": "a rainy day"})

    with anyio.fail_after(60):
        async with App(app_config_here(registry)) as app:
            await app.gateway.ready(30)
            # No back-channel on this protocol: the questions travel in the results, and the client retries.
            async with Client(app.server, mode="2026-07-28", sampling_callback=person.sample,
                              elicitation_callback=person.elicit) as client:
                recommended = await client.call_tool("execute_tool", execute("library__recommend"))
                borrowed = await client.call_tool("execute_tool", execute("library__borrow", title="emma"))
            async with Client(app.server, mode="2026-07-28", elicitation_callback=give_context) as client:
                prompt = await client.get_prompt("conformance__test_input_required_result_prompt", {})
                rare = await client.read_resource("toolscout://library/library://vault/dune")
            async with Client(app.server, mode="2026-07-28") as unable:
                refused = await unable.call_tool("execute_tool", execute("library__recommend"))
    assert text_of(recommended) == "the model recommends dune" and text_of(borrowed) == "lent emma"
    assert person.asked == [
        "(Asked by the upstream server 'library' through toolscout.)",
        "Upstream server 'library' asks: Agree to the lending terms for emma?",
    ]
    assert context.asked == [
        "Upstream server 'conformance' asks: What context should the prompt use?",
        "Upstream server 'library' asks: Handle dune with gloves?",
    ]
    assert prompt.messages[0].content.text == "Use this context: a rainy day"
    assert rare.contents[0].text == "the rare book dune"
    assert refused.is_error and "did not declare the sampling capability" in text_of(refused)
