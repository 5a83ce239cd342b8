"""An upstream that stops reading (its only thread blocked) is found out by a ping and restarted."""

from __future__ import annotations

import logging
from pathlib import Path

import anyio
import pytest
from support.registries import python_server, write_registry
from support.gateway_session import gateway_session, text_of, wait_until_serving
from support.waiting import wait_until

from toolscout.commands.tools import _served_line
from toolscout.upstream.published import _status_row

pytestmark = pytest.mark.anyio


async def test_a_wedged_upstream_is_restarted_after_a_timed_out_call_and_says_so(tmp_path: Path) -> None:
    registry = write_registry(tmp_path / "servers.json", {"wedging": python_server("wedging_server.py", timeout=1)})
    with anyio.fail_after(60):
        async with gateway_session(registry, max_restarts=2) as (gateway, client):
            # The answer comes at the call's timeout (1 s), before the ping's 5 s could run out.
            with anyio.fail_after(4.5):
                wedged = await client.call_tool("execute_tool", {"name": "wedging__wedge", "arguments": {}})
            # Without the restart every later call would time out like the first one.
            await wait_until_serving(gateway, client, "wedging__echo", {"text": "back"})
            echoed = await client.call_tool("execute_tool", {"name": "wedging__echo", "arguments": {"text": "hi"}})
            [status] = gateway.statuses()
    assert wedged.is_error
    error = text_of(wedged)
    assert "upstream 'wedging'" in error and "did not answer 'wedge' within 1 s" in error
    assert "being pinged now, and is restarted if it does not answer within 5 s" in error
    assert not echoed.is_error and text_of(echoed) == "hi"
    assert status.restarts == 1 and status.last_restart_reason is not None
    assert status.last_restart_reason.startswith("stopped answering")
    # What `toolscout tools --running` prints for a serving gateway with this status.
    line = _served_line({"pid": 4711, "transport": "stdio", **_status_row(status)})
    assert "up, 2 tools, restarted 1 time" in line and "stopped answering" in line


async def test_a_slow_tool_on_an_upstream_that_answers_pings_is_not_restarted(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    registry = write_registry(tmp_path / "servers.json", {"fragile": python_server("fragile_server.py", timeout=1)})
    caplog.set_level(logging.INFO, logger="toolscout")
    with anyio.fail_after(40):
        async with gateway_session(registry, max_restarts=2) as (gateway, client):
            slow = await client.call_tool("execute_tool", {"name": "fragile__wait_forever", "arguments": {}})
            await wait_until(lambda: "still answers pings" in caplog.text, timeout=10)
            echoed = await client.call_tool("execute_tool", {"name": "fragile__echo", "arguments": {"text": "ok"}})
            [status] = gateway.statuses()
    assert "did not answer 'wait_forever' within 1 s; it is being pinged now" in text_of(slow)
    assert text_of(echoed) == "ok"
    assert status.restarts == 0
