"""What run_code's sandbox refuses, and its limits: a script that escapes, loops, allocates,
recurses, crashes its worker or calls too much is stopped with a clear error, and the gateway
keeps serving every other client meanwhile."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import psutil
import pytest
from mcp import Client
from support.code_mode import calls_seen, crm_and_mail
from support.gateway_session import text_of
from support.registries import fast_search_settings

from toolscout.gateway import Gateway
from toolscout.registry.loading import load_registries
from toolscout.search import ToolSearch
from toolscout.serving.options import CodeModeLimits
from toolscout.serving.server import CallObserver, build_server

pytestmark = pytest.mark.anyio

CALL_CRM = "call_tool('crm__list_customers', {'region': 'north'})"


@asynccontextmanager
async def code_mode_server(folder: Path, limits: CodeModeLimits, observers: list[CallObserver] | None = None) -> AsyncIterator[Any]:
    """The MCP server of a gateway over the crm and mail upstreams, with run_code under `limits`."""
    async with Gateway(load_registries([crm_and_mail(folder)]), ToolSearch(fast_search_settings())) as gateway:
        await gateway.ready(30)
        yield build_server(gateway, observers=observers or [], code_mode=limits)


async def _run(client: Client, code: str) -> types.CallToolResult:
    return await client.call_tool("run_code", {"code": code})


ESCAPES = {
    "open('/etc/passwd').read()": "PermissionError",
    "import os\nos.getenv('HOME')": "'import os' is refused",
    "import os\nos.environ['PATH']": "'import os' is refused",
    "from os import system\nsystem('touch {marker}')": "'import os' is refused",
    "import socket": "'import socket' is refused",
    "import subprocess": "'import subprocess' is refused",
    "__import__('subprocess')": "name '__import__' is not defined",
    "from pathlib import Path\nPath('{marker}').write_text('x')": "'import pathlib' is refused",
}


async def test_files_imports_and_the_environment_are_refused_with_a_clear_error_and_nothing_reaches_the_host(tmp_path: Path) -> None:
    marker = tmp_path / "written-by-a-script"
    answers = {}
    with anyio.fail_after(60):
        async with code_mode_server(tmp_path, CodeModeLimits()) as server, Client(server, mode="legacy") as client:
            for code in ESCAPES:
                answers[code] = await _run(client, code.format(marker=marker))
    for code, expected in ESCAPES.items():
        assert answers[code].is_error, code
        # Refused before it runs (a host module), or failed inside the sandbox.
        text = text_of(answers[code])
        assert ("is refused: a script runs in a sandbox" in text or "The script failed" in text) and expected in text, text
        assert "toolscout/" not in text_of(answers[code])  # the script's traceback, never the gateway's
    assert not marker.exists()


async def test_an_endless_loop_is_stopped_at_the_time_limit_while_another_client_is_served(tmp_path: Path) -> None:
    script_running = anyio.Event()
    finished: list[str] = []

    def watch(ctx: object, name: str, arguments: dict[str, Any], result: types.CallToolResult) -> None:
        if name == "execute_tool":
            script_running.set()

    async def loop_forever(client: Client) -> None:
        finished.append(text_of(await _run(client, f"{CALL_CRM}\nwhile True:\n    pass")))

    with anyio.fail_after(60):
        async with code_mode_server(tmp_path, CodeModeLimits(cpu_seconds=1), [watch]) as server, \
                Client(server, mode="legacy") as looping, Client(server, mode="legacy") as other:
            async with anyio.create_task_group() as tg:
                tg.start_soon(loop_forever, looping)
                await script_running.wait()
                searched = await other.call_tool("search_tools", {"query": "send an email"})
                finished.append("search answered")
    assert not searched.is_error
    assert finished[0] == "search answered"
    assert "TimeoutError: feed time limit exceeded" in finished[1] and "computed for longer" in finished[1]


async def test_a_memory_bomb_and_deep_recursion_are_stopped_at_their_limits(tmp_path: Path) -> None:
    limits = CodeModeLimits(memory_bytes=16 * 1024 * 1024, cpu_seconds=5)
    with anyio.fail_after(60):
        async with code_mode_server(tmp_path, limits) as server, Client(server, mode="legacy") as client:
            bomb = await _run(client, "blocks = []\nwhile True:\n    blocks.append('x' * 100000)")
            deep = await _run(client, "def down(n):\n    return down(n + 1)\ndown(0)")
            after = await _run(client, "sum(range(10))")
    assert bomb.is_error and "MemoryError: memory limit exceeded" in text_of(bomb)
    assert deep.is_error and "RecursionError" in text_of(deep)
    assert after.structured_content["value"] == 45


async def test_a_crashed_worker_is_reported_and_the_next_script_gets_a_fresh_one(tmp_path: Path) -> None:
    def kill_the_sandbox(ctx: object, name: str, arguments: dict[str, Any], result: types.CallToolResult) -> None:
        if name == "execute_tool":  # while the script waits for this call's answer
            for child in psutil.Process().children(recursive=True):
                if child.name() == "monty":
                    child.kill()

    observers: list[CallObserver] = [kill_the_sandbox]
    with anyio.fail_after(60):
        async with code_mode_server(tmp_path, CodeModeLimits(), observers) as server, Client(server, mode="legacy") as client:
            crashed = await _run(client, f"{CALL_CRM}\n'not reached'")
            observers.clear()
            searched = await client.call_tool("search_tools", {"query": "list customers"})
            after = await _run(client, "'a fresh sandbox'")
    assert crashed.is_error and "sandbox running the script stopped" in text_of(crashed)
    assert not searched.is_error
    assert after.structured_content["value"] == "a fresh sandbox"


async def test_a_script_over_its_tool_calls_or_its_wall_time_is_stopped(tmp_path: Path) -> None:
    with anyio.fail_after(60):
        async with code_mode_server(tmp_path, CodeModeLimits(max_tool_calls=2)) as server, Client(server, mode="legacy") as client:
            too_many = await _run(client, f"for _ in range(3):\n    {CALL_CRM}")
        calls_after_limit = len(calls_seen(tmp_path, "crm"))
        async with code_mode_server(tmp_path, CodeModeLimits(wall_seconds=0.5, max_tool_calls=100_000)) as server, \
                Client(server, mode="legacy") as client:
            too_long = await _run(client, f"while True:\n    {CALL_CRM}")
    assert too_many.is_error and "more than 2 tool calls" in text_of(too_many)
    assert calls_after_limit == 2
    assert too_long.is_error and "0.5 s wall-time limit" in text_of(too_long)


async def test_scripts_of_two_clients_run_at_once_up_to_the_worker_count(tmp_path: Path) -> None:
    finished: list[str] = []

    async def run(client: Client, label: str, code: str) -> None:
        await _run(client, code)
        finished.append(label)

    with anyio.fail_after(60):
        async with code_mode_server(tmp_path, CodeModeLimits(cpu_seconds=1, workers=2)) as server, \
                Client(server, mode="legacy") as slow, Client(server, mode="legacy") as quick:
            async with anyio.create_task_group() as tg:
                tg.start_soon(run, slow, "slow", "while True:\n    pass")
                tg.start_soon(run, quick, "quick", f"{CALL_CRM}['server']")
    assert finished == ["quick", "slow"]


async def test_a_large_answer_is_cut_at_the_result_limit_and_bad_input_is_a_clear_error(tmp_path: Path) -> None:
    limits = CodeModeLimits(max_result_bytes=1024)
    with anyio.fail_after(60):
        async with code_mode_server(tmp_path, limits) as server, Client(server, mode="legacy") as client:
            large = await _run(client, "'y' * 5000")
            printed = await _run(client, "for _ in range(100):\n    print('z' * 100)")
            no_code = await client.call_tool("run_code", {"script": "1"})
            broken = await _run(client, "print(1")
    assert not large.is_error and "[cut at 1,024 bytes" in text_of(large) and large.structured_content["truncated"]
    assert printed.is_error and "MemoryError" in text_of(printed)
    assert no_code.is_error and "takes one argument, 'code'" in text_of(no_code)
    assert broken.is_error and "SyntaxError" in text_of(broken)
