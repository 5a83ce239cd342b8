import json

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.server.mcpserver import Context, MCPServer

from toolscout.catalog import ToolRecord
from toolscout.errors import SamplingUnavailableError
from toolscout.learning.expansion_cache import ExpansionCache
from toolscout.learning.sampling import (
    MAX_GENERATED_PHRASES,
    Expander,
    build_expansion_prompt,
    parse_expansion_reply,
)
from toolscout.learning.sampling_mcp import sampling_ask

LOG = ToolRecord(
    id="git__git_log", name="git_log", server="git", description="Shows the commit logs.",
    input_schema={"type": "object", "properties": {
        "repo_path": {"type": "string", "description": "Path to the repository"},
        "max_count": {"type": "integer"},
    }, "required": ["repo_path"]},
)
NOW = ToolRecord(id="time__get_current_time", name="get_current_time", server="time",
                 description="Current time in a timezone.")
CONVERT = ToolRecord(id="markitdown__convert", name="convert_to_markdown", server="markitdown",
                     description="Converts a document to Markdown.")
PHRASES = ["what changed recently", "commit history", "who edited this file"]


class FakeTime:
    """A clock whose sleep advances it: rate limiting is observable without waiting."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


class Model:
    """A deterministic stand-in for the client's model, recording what it was asked."""

    def __init__(self, reply: str = json.dumps(PHRASES), fail_on: str | None = None) -> None:
        self.reply, self.fail_on, self.prompts = reply, fail_on, []

    async def __call__(self, prompt: str) -> str:
        self.prompts.append(prompt)
        if self.fail_on and self.fail_on in prompt:
            raise RuntimeError("the model is overloaded")
        return self.reply


def expander(tmp_path, ask, time: FakeTime, **kwargs) -> Expander:
    cache = ExpansionCache(tmp_path / "expansions.sqlite3")
    return Expander(cache, ask, clock=time.clock, sleep=time.sleep, progress=None, **kwargs)


# --- prompt and reply ------------------------------------------------------------------------

def test_the_prompt_describes_the_tool_and_asks_for_a_json_array():
    prompt = build_expansion_prompt(LOG)
    assert "git_log" in prompt and "Shows the commit logs." in prompt
    assert "- repo_path (string): Path to the repository" in prompt
    assert "JSON array of strings" in prompt


def test_the_prompt_stays_bounded_for_a_huge_tool():
    huge = ToolRecord(id="a__t", name="t", server="a", description="word " * 10_000, input_schema={
        "type": "object",
        "properties": {f"p{i}": {"type": "string", "description": "x " * 500} for i in range(100)},
    })
    assert len(build_expansion_prompt(huge)) < 4_000


@pytest.mark.parametrize("reply", [
    '["commit history", "what changed recently"]',
    '```json\n["commit history", "what changed recently"]\n```',
    'Sure! Here they are:\n["commit history", "what changed recently"]\nHope that helps.',
    '{"phrases": ["commit history"], "examples": ["what changed recently"]}',
    "- commit history\n- \"what changed recently\",",
    "Here are some phrases:\n1. commit history\n2) what changed recently",
    "commit history\nwhat changed recently",
])
def test_replies_in_json_or_list_form_give_the_same_phrases(reply):
    assert parse_expansion_reply(reply) == ["commit history", "what changed recently"]


def test_parsed_phrases_are_deduplicated_bounded_and_not_overlong():
    reply = json.dumps(["Log", "log ", "x" * 500, 7] + [f"phrase {i}" for i in range(100)])
    phrases = parse_expansion_reply(reply)
    assert phrases[:2] == ["Log", "phrase 0"]
    assert len(phrases) == MAX_GENERATED_PHRASES


# --- the expander ----------------------------------------------------------------------------

def test_each_tool_is_expanded_once_and_a_second_run_asks_nothing(tmp_path):
    time, model = FakeTime(), Model()
    seen = []
    runner = expander(tmp_path, model, time, on_expanded=lambda record, phrases: seen.append(record.id))

    async def twice():
        with anyio.fail_after(5):
            return await runner.run([LOG, NOW]), await runner.run([LOG, NOW])

    first, second = anyio.run(twice)
    assert (first.expanded, second.expanded, len(model.prompts)) == (2, 0, 2)
    assert seen == ["git__git_log", "time__get_current_time"]
    assert runner.cache.lookup([LOG])[LOG.fingerprint] == tuple(PHRASES)


def test_requests_are_spaced_by_the_rate_limit(tmp_path):
    time = FakeTime()
    runner = expander(tmp_path, Model(), time, requests_per_minute=6)
    report = anyio.run(runner.run, [LOG, NOW, CONVERT])
    assert report.expanded == 3
    assert time.sleeps == [10.0, 10.0]


def test_a_failing_tool_is_skipped_and_the_others_are_expanded(tmp_path):
    model = Model(fail_on="get_current_time")
    runner = expander(tmp_path, model, FakeTime())
    report = anyio.run(runner.run, [LOG, NOW, CONVERT])
    assert (report.expanded, report.failed, report.stopped) == (2, 1, None)
    assert runner.cache.missing([LOG, NOW, CONVERT]) == [NOW]


def test_repeated_failures_stop_the_run(tmp_path):
    model = Model(fail_on="Tool:")
    runner = expander(tmp_path, model, FakeTime(), max_consecutive_failures=2)
    report = anyio.run(runner.run, [LOG, NOW, CONVERT])
    assert (report.failed, len(model.prompts)) == (2, 2)
    assert "2 expansion requests failed in a row" in report.stopped


def test_sampling_being_unavailable_stops_the_run_at_once(tmp_path):
    calls = []

    async def refuse(prompt: str) -> str:
        calls.append(prompt)
        raise SamplingUnavailableError("no sampling here")

    report = anyio.run(expander(tmp_path, refuse, FakeTime()).run, [LOG, NOW])
    assert len(calls) == 1
    assert report.stopped == "sampling is not available: no sampling here"


def test_a_changed_tool_is_expanded_again(tmp_path):
    model = Model()
    runner = expander(tmp_path, model, FakeTime())
    anyio.run(runner.run, [LOG])
    changed = ToolRecord(id=LOG.id, name=LOG.name, server=LOG.server, description="Shows history.")
    anyio.run(runner.run, [changed])
    assert len(model.prompts) == 2
    assert runner.cache.missing([changed]) == []


# --- through a real MCP client session -------------------------------------------------------

def make_server(cache_path, time: FakeTime) -> MCPServer:
    """A server whose tool expands a small catalog through the client's sampling capability."""
    server = MCPServer("expanding-server")

    @server.tool()
    async def expand_catalog(ctx: Context) -> str:
        with ExpansionCache(cache_path) as cache:
            runner = Expander(cache, sampling_ask(ctx.session), clock=time.clock, sleep=time.sleep,
                              progress=None)
            report = await runner.run([LOG, NOW])
        return json.dumps({"expanded": report.expanded, "stopped": report.stopped})

    return server


class SamplingClientModel:
    """The client's sampling callback: a deterministic function of the request."""

    def __init__(self) -> None:
        self.requests: list[types.CreateMessageRequestParams] = []

    async def __call__(self, context, params: types.CreateMessageRequestParams) -> types.CreateMessageResult:
        self.requests.append(params)
        prompt = params.messages[0].content.text
        name = prompt.split("Tool: ", 1)[1].split(" ", 1)[0]
        text = json.dumps([f"phrase for {name}", "ask the assistant"])
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(type="text", text=text), model="deterministic"
        )


async def call_expand(server: MCPServer, **client_options) -> dict:
    with anyio.fail_after(10):
        async with Client(server, **client_options) as client:
            result = await client.call_tool("expand_catalog", {})
    assert not result.is_error, result.content
    return json.loads(result.content[0].text)


def test_sampling_through_a_client_session_fills_the_cache_once(tmp_path):
    cache_path, model = tmp_path / "expansions.sqlite3", SamplingClientModel()
    server = make_server(cache_path, FakeTime())

    first = anyio.run(lambda: call_expand(server, sampling_callback=model, mode="legacy"))
    assert first == {"expanded": 2, "stopped": None}
    assert len(model.requests) == 2
    assert model.requests[0].max_tokens > 0 and model.requests[0].system_prompt
    with ExpansionCache(cache_path) as cache:
        assert cache.lookup([LOG])[LOG.fingerprint] == ("phrase for git_log", "ask the assistant")
        assert cache.lookup([NOW])[NOW.fingerprint] == ("phrase for get_current_time", "ask the assistant")

    second = anyio.run(lambda: call_expand(server, sampling_callback=model, mode="legacy"))
    assert second == {"expanded": 0, "stopped": None}
    assert len(model.requests) == 2


def test_a_client_without_sampling_stops_the_expander_without_error(tmp_path):
    cache_path = tmp_path / "expansions.sqlite3"
    report = anyio.run(lambda: call_expand(make_server(cache_path, FakeTime()), mode="legacy"))
    assert report["expanded"] == 0
    assert "sampling capability" in report["stopped"]


def test_a_connection_without_a_back_channel_stops_the_expander(tmp_path):
    # The 2026-07-28 protocol has no standalone channel for server-initiated requests.
    cache_path, model = tmp_path / "expansions.sqlite3", SamplingClientModel()
    report = anyio.run(lambda: call_expand(make_server(cache_path, FakeTime()), sampling_callback=model))
    assert report["expanded"] == 0
    assert "back-channel" in report["stopped"]
    assert model.requests == []
