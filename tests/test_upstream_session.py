"""One upstream reached in memory (`transports.InMemory`): its lifecycle, its listing and the
requests of its session, with no process or port."""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.server.mcpserver import Context, MCPServer
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from toolscout.errors import UpstreamError
from toolscout.registry.spec import ServerSpec
from toolscout.upstream.connection import Upstream
from toolscout.upstream.status import State
from toolscout.upstream.transports import InMemory

pytestmark = pytest.mark.anyio

SECRET = "s3cret-key-42"


def _library() -> MCPServer:
    server = MCPServer("library")

    @server.tool()
    def echo(text: str) -> str:
        """Say the text back."""
        return f"echo: {text}"

    @server.tool()
    def leak() -> str:
        """Answer with the registry's secret in the text."""
        return f"the key is {SECRET}"

    @server.tool()
    async def recommend(ctx: Context) -> str | types.InputRequiredResult:
        """Recommend a book, asking the client's model."""
        request = types.CreateMessageRequestParams(
            messages=[types.SamplingMessage(role="user", content=types.TextContent(text="dune or emma?"))], max_tokens=5,
        )
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            if not ctx.input_responses:
                return types.InputRequiredResult(input_requests={"pick": types.CreateMessageRequest(params=request)})
            result = ctx.input_responses["pick"]
        else:
            result = await ctx.session.create_message(messages=request.messages, max_tokens=request.max_tokens)
        return f"the model picks {result.content.text}"

    return server


class _Reader:
    """A client that answers sampling requests, and remembers which upstream asked."""

    asks_back = True

    def __init__(self, answer: str) -> None:
        self.answer = answer
        self.asked_by: list[str] = []

    async def sample(self, server: str, params: types.CreateMessageRequestParams) -> Any:
        self.asked_by.append(server)
        return types.CreateMessageResult(role="assistant", content=types.TextContent(text=self.answer), model="fake")

    async def elicit(self, server: str, params: types.ElicitRequestParams) -> Any:
        return types.ErrorData(code=types.INVALID_REQUEST, message="no user here")


def _upstream() -> Upstream:
    spec = ServerSpec(name="library", transport="http", url="http://in-memory.invalid/mcp", secrets=frozenset({SECRET}))
    return Upstream(spec, transport=InMemory(_library()), start_timeout=10, call_timeout=10)


async def _serving(upstream: Upstream, tg: anyio.abc.TaskGroup) -> None:
    tg.start_soon(upstream.run)
    with anyio.fail_after(10):
        await upstream.settled.wait()
    assert upstream.state is State.UP, upstream.reason


async def test_an_upstream_reached_in_memory_lists_its_tools_and_answers_a_call_through_its_session() -> None:
    upstream = _upstream()
    async with anyio.create_task_group() as tg:
        await _serving(upstream, tg)
        assert sorted(tool.name for tool in upstream.tools) == ["echo", "leak", "recommend"]
        result = await upstream.session.call("echo", {"text": "hi"})
        assert result.content[0].text == "echo: hi"
        upstream.stop()


async def test_what_an_upstream_answers_reaches_the_caller_with_the_registry_secret_hidden() -> None:
    upstream = _upstream()
    async with anyio.create_task_group() as tg:
        await _serving(upstream, tg)
        result = await upstream.session.call("leak", {})
        assert result.content[0].text == "the key is ***"
        upstream.stop()


async def test_the_caller_given_with_a_call_is_the_client_its_upstream_asks_to_sample() -> None:
    upstream = _upstream()
    reader = _Reader("dune")
    async with anyio.create_task_group() as tg:
        await _serving(upstream, tg)
        result = await upstream.session.call("recommend", {}, caller=reader)
        assert result.content[0].text == "the model picks dune"
        assert reader.asked_by == ["library"]
        upstream.stop()


async def test_an_upstream_asking_to_sample_during_a_call_no_client_made_is_refused() -> None:
    upstream = _upstream()
    async with anyio.create_task_group() as tg:
        await _serving(upstream, tg)
        with pytest.raises(UpstreamError, match="library"):
            await upstream.session.call("recommend", {})
        upstream.stop()


async def test_a_request_before_the_upstream_is_up_names_it_and_says_it_is_not_available() -> None:
    upstream = _upstream()
    with pytest.raises(UpstreamError, match=r"library.*not available"):
        await upstream.session.call("echo", {"text": "hi"})
