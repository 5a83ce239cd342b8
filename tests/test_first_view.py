"""What a client is told at the start is complete within the ready wait, and honest after it: an
upstream still starting is said to be starting (not missing), and once it is up every later
session's instructions and every search answer name it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from support.registries import python_server, write_registry
from support.serve_process import serve_command, served_over_http

pytestmark = pytest.mark.anyio


async def test_a_late_upstream_is_starting_not_missing_and_joins_every_later_view(tmp_path: Path) -> None:
    flag = tmp_path / "start-now"
    registry = write_registry(tmp_path / "servers.json", {
        "notes": python_server("notes_server.py"),
        "slow": python_server("hostile_server.py", "--start-after", str(flag)),
    })
    told = anyio.Event()

    async def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            told.set()

    # The wait is served in full (slow never starts on its own): long enough for notes on a busy machine.
    command = serve_command(registry, "--transport", "http", "--port", "0", "--ready-wait", "15")
    with anyio.fail_after(90):
        async with served_over_http(command) as url:
            async with Client(url, mode="legacy", message_handler=on_message) as early:
                first = early.instructions or ""
                before = (await early.call_tool("search_tools", {"query": "echo some text"})).structured_content
                flag.touch()
                await told.wait()
                after = (await early.call_tool("search_tools", {"query": "echo some text"})).structured_content
            async with Client(url, mode="legacy") as later:
                second = later.instructions or ""
    # Within the wait: notes is described; slow is starting, which is not the same as missing.
    assert "- notes (" in first
    assert "Still starting: slow" in first and "Not available" not in first
    assert [line.split(" (")[0] for line in before["servers"]] == ["notes"]
    assert "Still starting" in before["notice"] and "slow" in before["notice"]
    # Once up, nothing says it is missing.
    assert any(line.startswith("slow (") for line in after["servers"])
    # Its tools are searched now (which of its two echoing tools comes first is the model's call).
    found = [tool["id"] for tool in after["tools"]]
    assert found[0].startswith("slow__") and "slow__echo" in found
    assert "slow" not in (after["notice"] or "")
    assert "- slow (" in second and "Still starting" not in second
