"""What an agent reads about the servers behind toolscout, through a real MCP session: a server
that says nothing of itself is described by what its tools do (not by a list of tool names), and
counts read "1 tool", never "1 tools", in the server instructions and the search_tools
description."""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import pytest
from support.gateway_session import gateway_session, here_over
from support.registries import UPSTREAMS, write_registry
from support.wiring import scripted

pytestmark = pytest.mark.anyio

LEDGER_TOOLS = [
    {"name": "record_expense", "description": "Record an expense in the household ledger. Amounts are in euros."},
    {"name": "list_expenses", "description": "List the expenses of a month, newest first."},
    {"name": "export_ledger_to_spreadsheet_file",
     "description": "Export the whole ledger as a spreadsheet file that accounting software can import and read."},
    {"name": "delete_expense", "description": "Delete an expense by its id; this cannot be undone."},
]
CLOCK_TOOLS = [{"name": "tell_time", "description": "Tell the current time in a city."}]


def silent_server(folder: Path, label: str, tools: list[dict]) -> dict:
    """A registry entry for a scripted server that gives no instructions and no description."""
    spec = folder / f"{label}.spec.json"
    spec.write_text(json.dumps({"instructions": None, "tools": tools}), encoding="utf-8")
    return {"command": sys.executable, "args": [str(UPSTREAMS / "scripted_server.py"), str(spec), label]}


@pytest.fixture(scope="module")
async def texts(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple[str, str]]:
    """The server instructions an agent is given, and the servers a search answer lists (as lines)."""
    folder = tmp_path_factory.mktemp("purposes")
    clock, _ = scripted(folder, "clock", CLOCK_TOOLS, instructions="Tells the time anywhere in the world.")
    registry = write_registry(folder / "servers.json", {
        "ledger": silent_server(folder, "ledger", LEDGER_TOOLS),
        "clock": clock,
    })
    with anyio.fail_after(60):
        async with gateway_session(registry, in_process=here_over(registry).in_process) as (_, client):
            answer = (await client.call_tool("search_tools", {"query": "record an expense"})).structured_content
            yield client.instructions or "", "\n".join(f"- {line}" for line in answer["servers"])


async def test_a_server_without_words_of_its_own_is_described_by_what_its_tools_do(texts: tuple[str, str]) -> None:
    instructions, answered = texts
    # A search answer shortens the same line.
    assert "- ledger (4 tools): Record an expense in the household ledger; list the expenses" in answered
    for text in (instructions,):
        line = next(line for line in text.splitlines() if line.startswith("- ledger "))
        assert line.startswith("- ledger (4 tools): ")
        assert "Record an expense in the household ledger" in line
        assert "list the expenses of a month" in line
        assert "delete an expense by its id" in line
        assert "record_expense" not in line and "tools:" not in line
        assert "and more" in line  # the fourth tool's long phrase is not shown


async def test_a_server_that_describes_itself_keeps_its_own_words(texts: tuple[str, str]) -> None:
    for text in texts:
        assert "- clock (1 tool): Tells the time anywhere in the world" in text


async def test_counts_of_one_read_in_the_singular(texts: tuple[str, str]) -> None:
    instructions, _ = texts
    for text in texts:
        assert "1 tools" not in text and "1 servers" not in text
    assert "(5 tools from 2 servers)" in instructions
