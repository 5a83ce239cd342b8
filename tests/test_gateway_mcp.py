"""The gateway end to end: an MCP client session against toolscout's server, which aggregates real
upstream servers run as stdio subprocesses (two written for the tests, a paginated one, the
third-party mcp-server-time from PyPI, and one that fails to start).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from support.gateway_session import here_over
from support.registries import failing_server, fast_search_settings, python_server, time_server, write_registry
from mcp import Client

from toolscout.naming import MAX_ID_LENGTH, is_valid_id
from toolscout.gateway import Gateway, GatewayOptions
from toolscout.registry.loading import load_registries
from toolscout.search import ToolSearch
from toolscout.serving.server import build_server
from toolscout.upstream import State

pytestmark = pytest.mark.anyio

LONG_NAME = "generate_the_quarterly_financial_summary_report_for_the_selected_business_unit_and_period"


@pytest.fixture(scope="module")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_registry(
        tmp_path_factory.mktemp("registry") / "servers.json",
        {
            "notes": python_server("notes_server.py"),
            "weather": python_server("weather_server.py"),
            "paged": python_server("paged_server.py"),
            "time": time_server(),
            "broken": failing_server("fatal: NOTES_API_TOKEN is not set"),
        },
    )


@pytest.fixture(scope="module")
async def gateway(registry: Path) -> AsyncIterator[Gateway]:
    specs = load_registries([registry])
    # Our own servers in this process; the third-party one and the one that fails to start as processes.
    options = here_over(registry, GatewayOptions(start_timeout=30, max_restarts=0))
    async with Gateway(specs, ToolSearch(fast_search_settings()), options) as gateway:
        await gateway.ready(40)
        yield gateway


@pytest.fixture(scope="module")
def server(gateway: Gateway) -> Any:
    return build_server(gateway)


def _structured(result: types.CallToolResult) -> dict[str, Any]:
    assert not result.is_error, result.content
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def _text(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


async def _search(client: Client, query: str, **options: Any) -> list[dict[str, Any]]:
    return _structured(await client.call_tool("search_tools", {"query": query, **options}))["tools"]


async def test_the_agent_sees_exactly_two_annotated_meta_tools(server: Any) -> None:
    with anyio.fail_after(10):
        async with Client(server, mode="legacy") as client:
            tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(tools) == {"search_tools", "execute_tool"}
    assert tools["search_tools"].annotations.read_only_hint is True
    assert tools["execute_tool"].annotations.destructive_hint is True
    assert tools["execute_tool"].annotations.open_world_hint is True


async def test_instructions_and_every_search_answer_describe_the_live_catalog(server: Any) -> None:
    with anyio.fail_after(10):
        async with Client(server, mode="legacy") as client:
            instructions = client.instructions or ""
            answer = (await client.call_tool("search_tools", {"query": "weather"})).structured_content
    servers = "\n".join(answer["servers"])
    for text in (instructions, servers):
        assert "notes (5 tools" in text or "notes (4 tools" in text
        assert "weather (3 tools): Weather forecasts" in text
        assert "time (2 tools)" in text
    assert "Not available right now: broken" in instructions


async def test_search_ranks_the_right_tool_first_for_a_plain_request(server: Any) -> None:
    with anyio.fail_after(10):
        async with Client(server, mode="legacy") as client:
            forecast = await _search(client, "weather forecast for Paris this week")
            clock = await _search(client, "what is the current time in Tokyo")
    assert forecast[0]["id"] == "weather__get_forecast"
    assert forecast[0]["inputSchema"]["required"] == ["city"]
    assert forecast[0]["annotations"]["readOnlyHint"] is True
    assert forecast[0]["outputSchema"]["required"] == ["city", "days", "summary"]
    assert clock[0]["id"] == "time__get_current_time"
    assert {"id", "server", "name", "title", "description", "inputSchema", "score"} <= set(clock[0])


async def test_execute_proxies_arguments_and_returns_content_and_structured_content(server: Any) -> None:
    with anyio.fail_after(10):
        async with Client(server, mode="legacy") as client:
            result = await client.call_tool(
                "execute_tool", {"name": "notes__create_note", "arguments": {"title": "groceries", "body": "eggs"}}
            )
            clock = await client.call_tool(
                "execute_tool", {"name": "time__get_current_time", "arguments": {"timezone": "Asia/Tokyo"}}
            )
    note = _structured(result)
    assert note["title"] == "groceries" and note["body"] == "eggs" and note["tags"] == []
    assert json.loads(_text(result))["id"] == note["id"]
    assert _structured(clock)["timezone"] == "Asia/Tokyo"


async def test_arguments_sent_as_a_json_string_are_accepted(server: Any) -> None:
    with anyio.fail_after(10):
        async with Client(server, mode="legacy") as client:
            result = await client.call_tool(
                "execute_tool", {"name": "weather__get_forecast", "arguments": '{"city": "Oslo", "days": 2}'}
            )
    assert _structured(result) == {"city": "Oslo", "days": 2, "summary": ["day 1: sunny, 21 C", "day 2: sunny, 21 C"]}


async def test_arguments_passed_beside_the_name_instead_of_inside_arguments_are_accepted(server: Any) -> None:
    with anyio.fail_after(10):
        async with Client(server, mode="legacy") as client:
            result = await client.call_tool("execute_tool", {"name": "weather__get_current_weather", "city": "Oslo"})
    assert _text(result).startswith("Oslo: 18 C")


async def test_an_unknown_tool_is_an_error_listing_the_closest_ids(server: Any) -> None:
    with anyio.fail_after(10):
        async with Client(server, mode="legacy") as client:
            result = await client.call_tool("execute_tool", {"name": "get_forcast", "arguments": {}})
    assert result.is_error
    assert "weather__get_forecast" in _text(result)
    assert "search_tools" in _text(result)


async def test_a_misspelled_id_suggests_only_close_ids_and_an_unrelated_name_none(server: Any) -> None:
    with anyio.fail_after(10):
        async with Client(server, mode="legacy") as client:
            typo = await client.call_tool("execute_tool", {"name": "time__get_curent_time", "arguments": {}})
            unrelated = await client.call_tool("execute_tool", {"name": "send_email", "arguments": {}})
    assert typo.is_error and "Did you mean: time__get_current_time?" in _text(typo)
    assert unrelated.is_error and "Did you mean" not in _text(unrelated)
    assert "No tool is called 'send_email'" in _text(unrelated) and "search_tools" in _text(unrelated)


async def test_a_meta_tool_passed_to_execute_tool_is_told_to_be_called_directly(server: Any) -> None:
    with anyio.fail_after(10):
        async with Client(server, mode="legacy") as client:
            result = await client.call_tool("execute_tool", {"name": "search_tools", "arguments": {"query": "weather"}})
    assert result.is_error
    assert "'search_tools' is one of this server's own two tools" in _text(result)
    assert "call search_tools directly" in _text(result) and "No tool is called" not in _text(result)


async def test_an_unknown_search_argument_is_refused_naming_the_arguments_there_are(server: Any) -> None:
    with anyio.fail_after(10):
        async with Client(server, mode="legacy") as client:
            result = await client.call_tool("search_tools", {"query": "weather", "k": 2})
    assert result.is_error
    assert "search_tools has no argument \"k\"" in _text(result) and "'limit' (how many tools" in _text(result)


async def test_a_call_to_a_server_that_is_down_names_it_without_a_stray_colon(server: Any) -> None:
    with anyio.fail_after(60):
        async with Client(server, mode="legacy") as client:
            result = await client.call_tool("execute_tool", {"name": "broken__anything", "arguments": {}})
    assert result.is_error
    assert "upstream 'broken': not available (" in _text(result) and ": is not" not in _text(result)


async def test_invalid_arguments_are_refused_naming_the_field_the_reason_and_the_schema(server: Any) -> None:
    with anyio.fail_after(10):
        async with Client(server, mode="legacy") as client:
            result = await client.call_tool(
                "execute_tool", {"name": "weather__get_forecast", "arguments": {"city": "Oslo", "days": 30}}
            )
            broken_json = await client.call_tool(
                "execute_tool", {"name": "weather__get_forecast", "arguments": '{"city": Oslo}'}
            )
    text = _text(result)
    assert result.is_error
    assert "'days'" in text and "30 is greater than the maximum of 10" in text and '"maximum": 10' in text
    assert broken_json.is_error and "not valid JSON" in _text(broken_json)


async def test_an_upstream_error_result_keeps_its_words_and_names_its_server(server: Any) -> None:
    with anyio.fail_after(10):
        async with Client(server, mode="legacy") as client:
            result = await client.call_tool("execute_tool", {"name": "notes__delete_note", "arguments": {"note_id": 999}})
    assert result.is_error
    assert "there is no note with id 999" in _text(result)


async def test_an_upstream_that_fails_to_start_is_down_with_its_stderr_while_the_others_serve(
    gateway: Gateway, server: Any
) -> None:
    # A call to it (an earlier test's) starts another attempt: wait for that one to fail too.
    with anyio.fail_after(30):
        while (statuses := {status.name: status for status in gateway.statuses()})["broken"].state is State.STARTING:
            await anyio.sleep(0.05)
    assert statuses["broken"].state is State.DOWN
    assert "fatal: NOTES_API_TOKEN is not set" in (statuses["broken"].reason or "")
    assert all(statuses[name].state is State.UP for name in ("notes", "weather", "paged", "time"))
    with anyio.fail_after(10):
        async with Client(server, mode="legacy") as client:
            result = await client.call_tool("search_tools", {"query": "delete a note", "servers": ["notes", "broken"]})
    assert "broken" in _structured(result)["notice"]


async def test_two_upstreams_with_the_same_tool_name_both_stay_reachable(server: Any) -> None:
    with anyio.fail_after(10):
        async with Client(server, mode="legacy") as client:
            cities = await client.call_tool("execute_tool", {"name": "weather__search", "arguments": {"name": "lis"}})
            notes = await client.call_tool("execute_tool", {"name": "notes__search", "arguments": {"text": "zzz"}})
    assert _text(cities) == "Lisbon"
    assert _text(notes) == "no notes match"


async def test_every_page_of_a_paginated_tool_list_is_indexed(gateway: Gateway, server: Any) -> None:
    paged = [tool for tool in gateway.catalog.tools if tool.server == "paged"]
    assert len(paged) == 25
    with anyio.fail_after(10):
        async with Client(server, mode="legacy") as client:
            found = await _search(client, "convert a temperature to kelvin", servers=["paged"], limit=3)
    assert found[0]["id"] == "paged__convert_to_kelvin"


async def test_an_over_long_tool_name_gets_a_short_valid_id_that_round_trips(gateway: Gateway, server: Any) -> None:
    (record,) = [tool for tool in gateway.catalog.tools if tool.name == LONG_NAME]
    assert len(record.id) <= MAX_ID_LENGTH and is_valid_id(record.id)
    with anyio.fail_after(10):
        async with Client(server, mode="legacy") as client:
            result = await client.call_tool(
                "execute_tool", {"name": record.id, "arguments": {"unit": "sales", "quarter": 2}}
            )
    assert _structured(result) == {"tool": LONG_NAME, "arguments": {"unit": "sales", "quarter": 2}}


async def test_search_arguments_are_checked_with_clear_errors(server: Any) -> None:
    with anyio.fail_after(10):
        async with Client(server, mode="legacy") as client:
            empty = await client.call_tool("search_tools", {"query": "  "})
            too_many = await client.call_tool("search_tools", {"query": "notes", "limit": 51})
            unknown = await client.call_tool("search_tools", {"query": "notes", "servers": ["nope"]})
    assert empty.is_error and "'query' must be a non-empty string" in _text(empty)
    assert too_many.is_error and "from 1 to 50" in _text(too_many)
    assert unknown.is_error and "nope" in _text(unknown) and "notes, paged, time, weather" in _text(unknown)


async def test_max_tokens_packs_results_into_the_budget_and_counts_those_left_out(server: Any) -> None:
    with anyio.fail_after(10):
        async with Client(server, mode="legacy") as client:
            full = _structured(await client.call_tool("search_tools", {"query": "convert units", "limit": 6}))
            packed = _structured(
                await client.call_tool("search_tools", {"query": "convert units", "limit": 6, "max_tokens": 250})
            )
            nothing = _structured(
                await client.call_tool("search_tools", {"query": "convert units", "limit": 6, "max_tokens": 5})
            )
    assert len(full["tools"]) == 6 and full["omitted"] == 0
    assert 0 < len(packed["tools"]) < 6
    assert packed["omitted"] == 6 - len(packed["tools"])
    assert "max_tokens=250" in packed["notice"]
    assert nothing["tools"] == [] and nothing["omitted"] == 6


async def test_a_tool_added_at_run_time_becomes_searchable_and_clients_are_told(server: Any) -> None:
    told = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            told.set()

    with anyio.fail_after(20):
        async with Client(server, mode="legacy", message_handler=on_message) as client:
            before = await _search(client, "move a note into the cold storage archive")
            assert "notes__archive_note" not in [tool["id"] for tool in before]
            await client.call_tool("execute_tool", {"name": "notes__enable_archive_tools", "arguments": {}})
            await told.wait()
            answer = (await client.call_tool("search_tools", {"query": "move a note into the cold storage archive"}))
    after = answer.structured_content
    assert after["tools"][0]["id"] == "notes__archive_note"
    assert any(line.startswith("notes (5 tools") for line in after["servers"])
