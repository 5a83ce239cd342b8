"""execute_tool as agents really call it, through a real MCP session: tool names spelt the ways
agents spell them, argument mistakes named with what was meant, and upstream failures that say
which server answered. Upstreams: scripted ones (they echo each call) and the notes and weather
servers (both have a tool called `search`)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from support.registries import python_server, write_registry
from support.gateway_session import gateway_session, in_process_of, text_of
from mcp import Client
from support.wiring import scripted

pytestmark = pytest.mark.anyio

AMOUNT = {"type": "number", "description": "How much was spent, in euros."}
LEDGER_TOOLS = [
    {"name": "record_expense", "description": "Record an expense in the ledger.",
     "inputSchema": {"type": "object", "properties": {"amount": AMOUNT, "note": {"type": "string"}},
                     "required": ["amount"]}},
    {"name": "attach_files", "description": "Attach files to an expense.",
     "inputSchema": {"type": "object", "properties": {"files": {"type": "array", "items": {"type": "string"}}},
                     "required": ["files"]}},
    {"name": "set_label", "description": "Label an expense.",
     "inputSchema": {"type": "object", "properties": {"label": {"type": "string"}}, "additionalProperties": False}},
    {"name": "query", "description": "Query the ledger with any filters.",
     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "additionalProperties": True}},
]


@pytest.fixture(scope="module")
async def session(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Client]:
    folder = tmp_path_factory.mktemp("agent-calls")
    ledger, _ = scripted(folder, "ledger", LEDGER_TOOLS)
    registry = write_registry(folder / "servers.json", {
        "ledger": ledger,
        "notes": python_server("notes_server.py"),
        "weather": python_server("weather_server.py"),
    })
    async with gateway_session(registry, in_process=in_process_of(registry)) as (_, client):
        yield client


async def execute(client: Client, name: str, arguments: dict[str, Any] | None = None) -> Any:
    return await client.call_tool("execute_tool", {"name": name, "arguments": arguments or {}})


def reached(result: Any) -> tuple[str, str]:
    assert not result.is_error, text_of(result)
    echoed = json.loads(result.content[0].text)
    return echoed["server"], echoed["tool"]


# --- 1. tool names as agents send them -------------------------------------------------------


@pytest.mark.parametrize("name", [
    "ledger__record_expense",            # the id
    "record_expense",                    # the upstream's name, one tool has it
    "ledger.record_expense",
    "ledger/record_expense",
    "ledger:record_expense",
    "mcp__ledger__record_expense",       # how some clients name MCP tools
    "mcp__toolscout__ledger__record_expense",
])
async def test_every_usual_spelling_of_a_tool_reaches_it(session: Client, name: str) -> None:
    assert reached(await execute(session, name, {"amount": 3})) == ("ledger", "record_expense")


async def test_a_name_several_tools_share_is_answered_with_their_ids(session: Client) -> None:
    result = await execute(session, "search", {"text": "x"})
    assert result.is_error
    text = text_of(result)
    assert "notes__search" in text and "weather__search" in text and "2 tools" in text
    # Qualified, it is unambiguous.
    ok = await execute(session, "weather.search", {"name": "Par"})
    assert not ok.is_error and "Paris" in text_of(ok)


async def test_an_unknown_name_suggests_close_ones(session: Client) -> None:
    result = await execute(session, "record_expence", {"amount": 3})
    assert result.is_error and "ledger__record_expense" in text_of(result)


async def test_search_results_carry_the_callable_name_under_name(session: Client) -> None:
    result = await session.call_tool("search_tools", {"query": "record an expense in the ledger"})
    top = result.structured_content["tools"][0]
    assert top["name"] == top["id"] == "ledger__record_expense"
    assert top["upstream_name"] == "record_expense"
    tools = {tool.name: tool for tool in (await session.list_tools()).tools}
    assert "search_tools returned" in tools["execute_tool"].input_schema["properties"]["name"]["description"]
    # What an agent copies from the result is what execute_tool takes.
    assert reached(await execute(session, top["name"], {"amount": 1})) == ("ledger", "record_expense")


# --- 2. argument hints -----------------------------------------------------------------------


async def test_a_misspelt_parameter_is_named_with_the_one_meant_and_its_schema(session: Client) -> None:
    result = await execute(session, "ledger__record_expense", {"amout": 3})
    text = text_of(result)
    assert result.is_error
    assert "unexpected parameter 'amout'; did you mean 'amount'?" in text
    assert "How much was spent" in text  # the schema fragment of `amount`


async def test_a_parameter_named_after_another_word_form_is_pointed_to_it(session: Client) -> None:
    result = await execute(session, "ledger__attach_files", {"file_path": "a.txt"})
    assert result.is_error and "unexpected parameter 'file_path'; did you mean 'files'?" in text_of(result)


async def test_an_extra_key_a_silent_schema_does_not_name_passes_with_a_note(session: Client) -> None:
    result = await execute(session, "ledger__record_expense", {"amount": 3, "currency": "EUR"})
    assert reached(result) == ("ledger", "record_expense")
    assert "'currency' is not a parameter of 'ledger__record_expense'" in text_of(result)


async def test_extras_follow_what_the_schema_says_about_them(session: Client) -> None:
    refused = await execute(session, "ledger__set_label", {"label": "x", "colour": "red"})
    assert refused.is_error and "unexpected parameter 'colour'" in text_of(refused)
    welcome = await execute(session, "ledger__query", {"text": "x", "since": "2024"})
    assert reached(welcome) == ("ledger", "query") and "Note:" not in text_of(welcome)


async def test_messages_speak_json_not_python(session: Client) -> None:
    result = await session.call_tool("execute_tool", {"name": "ledger__record_expense", "arguments": '"3"'})
    text = text_of(result)
    assert result.is_error and "a string" in text and "str" not in text.replace("string", "")


# --- 3. failures name their server -----------------------------------------------------------


async def test_an_upstream_error_says_which_server_answered(session: Client) -> None:
    result = await execute(session, "notes__delete_note", {"note_id": 999})
    text = text_of(result)
    assert result.is_error
    assert text.startswith("Upstream server 'notes' answered 'notes__delete_note' with an error: ")
    assert "there is no note with id 999" in text
