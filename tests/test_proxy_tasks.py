"""Tasks (long-running calls) are not passed through, and say so: real sessions with the App `serve`
builds, in front of an upstream that offers tasks (tests/upstreams/tasks_server.py), once on each
protocol era."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, MCPError
from mcp_types.jsonrpc import METHOD_NOT_FOUND
from support.gateway_session import app_config_here, text_of
from support.registries import python_server, write_registry

from toolscout.app import App
from toolscout.upstream.tasks import TASK_METHOD_REFUSAL, TASKS_EXTENSION

pytestmark = pytest.mark.anyio


def registry(tmp_path: Path) -> Path:
    # The same server twice: `reels` speaks only the handshake era, `studio` the newest protocol.
    return write_registry(tmp_path / "r.json", {
        "reels": python_server("tasks_server.py", "--handshake-only"), "studio": python_server("tasks_server.py"),
    })


def execute(tool: str, **arguments: Any) -> dict[str, Any]:
    return {"name": tool, "arguments": arguments}


async def test_a_tool_its_upstream_runs_only_as_a_task_is_refused_at_once_naming_it(tmp_path: Path) -> None:
    with anyio.fail_after(60):
        async with App(app_config_here(registry(tmp_path))) as app:
            await app.gateway.ready(30)
            async with Client(app.server, mode="legacy") as client:
                answers = {
                    tool: await client.call_tool("execute_tool", execute(tool, name="trailer"))
                    for tool in ("reels__render", "studio__render", "reels__archive", "studio__archive")
                }
    # A tool that may run as a task runs as an ordinary call.
    assert text_of(answers["reels__render"]) == text_of(answers["studio__render"]) == "rendered trailer"
    # Known from its definition (2025-11-25): refused before anything is sent upstream.
    assert answers["reels__archive"].is_error
    assert text_of(answers["reels__archive"]) == (
        "'reels__archive' runs only as a task (a long-running call whose result is fetched later), as upstream "
        "server 'reels' requires, and toolscout does not pass tasks through. Use search_tools to find another "
        "tool for the task."
    )
    # Known from the upstream's refusal (2026-07-28: the tasks extension is a required client capability).
    assert answers["studio__archive"].is_error
    assert text_of(answers["studio__archive"]) == (
        f"upstream 'studio': runs 'archive' only as a task ({TASKS_EXTENSION}), and toolscout does not pass "
        "tasks through; use search_tools to find another tool for the task."
    )


async def test_a_client_asking_for_a_task_gets_the_answer_when_the_call_ends(tmp_path: Path) -> None:
    opt_in = {"io.modelcontextprotocol/clientCapabilities": {"extensions": {TASKS_EXTENSION: {}}}}
    with anyio.fail_after(60):
        async with App(app_config_here(registry(tmp_path))) as app:
            await app.gateway.ready(30)
            async with Client(app.server, mode="legacy") as legacy:
                capabilities = [legacy.server_capabilities]
                # 2025-11-25: the `task` field of tools/call.
                asked = types.CallToolRequest(params=types.CallToolRequestParams(
                    name="execute_tool", arguments=execute("studio__render", name="teaser"),
                    task=types.TaskMetadata(ttl=60_000),
                ))
                handshake = await legacy.session.send_request(asked, types.CallToolResult)
            async with Client(app.server, mode="2026-07-28") as modern:
                capabilities.append(modern.server_capabilities)
                # 2026-07-28: the extension declared for this one request.
                stateless = await modern.call_tool("execute_tool", execute("reels__render", name="teaser"), meta=opt_in)
    assert text_of(handshake) == text_of(stateless) == "rendered teaser"
    assert not handshake.is_error and not stateless.is_error
    for advertised in capabilities:  # tasks are advertised in neither era
        assert advertised.tasks is None
        assert TASKS_EXTENSION not in (advertised.extensions or {})


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_task_methods_are_refused_saying_why(tmp_path: Path, mode: str) -> None:
    asked = [
        types.GetTaskRequest(params=types.GetTaskRequestParams(task_id="t1")),
        types.GetTaskPayloadRequest(params=types.GetTaskPayloadRequestParams(task_id="t1")),
        types.ListTasksRequest(),
        types.CancelTaskRequest(params=types.CancelTaskRequestParams(task_id="t1")),
    ]
    refusals: list[MCPError] = []
    with anyio.fail_after(60):
        async with App(app_config_here(registry(tmp_path))) as app:
            await app.gateway.ready(30)
            async with Client(app.server, mode=mode) as client:
                for request in asked:
                    with pytest.raises(MCPError) as refused:
                        await client.session.send_request(request, types.EmptyResult)
                    refusals.append(refused.value)
    assert [(e.code, e.message) for e in refusals] == [(METHOD_NOT_FOUND, TASK_METHOD_REFUSAL)] * len(asked)
