"""An upstream that misbehaves never disturbs the gateway or the calls on other upstreams.

While the hostile upstream answers with garbage, floods its stdout, storms notifications,
crashes or hangs, a burst of concurrent calls on a healthy upstream must all return their own,
uncorrupted results; the hostile call gets a clear error naming its upstream.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from support.registries import python_server, write_registry
from support.gateway_session import gateway_session, text_of, wait_until_serving

from toolscout.upstream import Limits

pytestmark = pytest.mark.anyio

# tool of the hostile upstream -> (its arguments, whether the call must fail, a phrase of its result)
MISBEHAVIOURS: dict[str, tuple[dict[str, Any], bool, str]] = {
    "malformed_result": ({}, True, "returned an invalid result for 'malformed_result'"),
    "endless_line": ({}, True, "16 times the 1 MiB limit on one message"),
    "junk_lines": ({}, True, "not JSON-RPC on stdout"),
    "notification_storm": ({"count": 1000}, False, "sent 1000 of each"),
    "crash": ({}, True, "exited with code 3"),
    "hang": ({}, True, "did not answer 'hang' within 8 s"),
}


@pytest.fixture(scope="module")
async def session(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple[Any, Any]]:
    registry = write_registry(
        tmp_path_factory.mktemp("hostile") / "servers.json",
        {"hostile": python_server("hostile_server.py", timeout=8), "paged": python_server("paged_server.py")},
    )
    async with gateway_session(registry, limits=Limits(max_line_bytes=1024 * 1024), max_restarts=20) as opened:
        yield opened


@pytest.mark.parametrize("misbehaviour", list(MISBEHAVIOURS))
async def test_a_misbehaving_upstream_fails_its_own_call_while_concurrent_calls_elsewhere_are_unaffected(
    session: tuple[Any, Any], misbehaviour: str
) -> None:
    gateway, client = session
    arguments, fails, phrase = MISBEHAVIOURS[misbehaviour]
    healthy: dict[int, Any] = {}
    hostile: list[Any] = []

    async def call_healthy(i: int) -> None:
        healthy[i] = await client.call_tool(
            "execute_tool", {"name": "paged__convert_to_meters", "arguments": {"value": i, "from_unit": f"unit-{i}"}}
        )

    async def call_hostile() -> None:
        hostile.append(await client.call_tool("execute_tool", {"name": f"hostile__{misbehaviour}", "arguments": arguments}))

    with anyio.fail_after(60):
        await wait_until_serving(gateway, client, "hostile__echo", {"text": "ready?"})  # the previous case may have brought it down
        async with anyio.create_task_group() as tg:
            tg.start_soon(call_hostile)
            for i in range(30):
                tg.start_soon(call_healthy, i)
        echoed = await client.call_tool("execute_tool", {"name": "paged__convert_to_feet", "arguments": {"value": 1, "from_unit": "m"}})

    (result,) = hostile
    assert result.is_error is fails, text_of(result)
    assert phrase in text_of(result)
    if fails:
        assert text_of(result).startswith("upstream 'hostile': ")
    for i, answer in healthy.items():
        assert not answer.is_error
        assert answer.structured_content == {"tool": "convert_to_meters", "arguments": {"value": i, "from_unit": f"unit-{i}"}}
    assert not echoed.is_error
