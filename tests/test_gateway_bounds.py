"""Hard bounds: argument size, result size, calls in flight per upstream, stdout line length.

Bounds the gateway keeps whatever the transport are tested with the hostile server in this
process; those of the stdio channel (its line cap, a session ending mid-call) with it as a process."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest
from support.registries import python_server, write_registry
from support.gateway_session import gateway_session, in_process_of, text_of

from toolscout.upstream import Limits

pytestmark = pytest.mark.anyio


def _registry(tmp_path: Path, **entry: object) -> Path:
    return write_registry(tmp_path / "servers.json", {"hostile": python_server("hostile_server.py", **entry)})


async def test_arguments_over_the_size_limit_are_refused_before_reaching_the_upstream(tmp_path: Path) -> None:
    with anyio.fail_after(30):
        registry = _registry(tmp_path)
        async with gateway_session(registry, limits=Limits(max_argument_bytes=1000), in_process=in_process_of(registry)) as (_, client):
            big = await client.call_tool("execute_tool", {"name": "hostile__echo", "arguments": {"text": "a" * 2000}})
            as_string = await client.call_tool("execute_tool", {"name": "hostile__echo", "arguments": "x" * 5000})
            small = await client.call_tool("execute_tool", {"name": "hostile__echo", "arguments": {"text": "a" * 900}})
    assert big.is_error and as_string.is_error
    assert "over the limit of 1,000 bytes (max_argument_bytes)" in text_of(big)
    assert "max_argument_bytes" in text_of(as_string)
    assert not small.is_error and text_of(small) == "a" * 900


async def test_an_oversized_result_is_cut_to_the_limit_with_a_note_not_dropped(tmp_path: Path) -> None:
    limit = 64 * 1024
    with anyio.fail_after(30):
        registry = _registry(tmp_path)
        async with gateway_session(registry, limits=Limits(max_result_bytes=limit), in_process=in_process_of(registry)) as (_, client):
            result = await client.call_tool("execute_tool", {"name": "hostile__big_text", "arguments": {"kib": 200}})
            fits = await client.call_tool("execute_tool", {"name": "hostile__big_text", "arguments": {"kib": 10}})
    assert not result.is_error
    kept, note = result.content[0].text, result.content[-1].text
    assert len(kept) <= limit and kept == ("0123456789abcdef" * 64 * 200)[: len(kept)]
    assert "over the 64 KiB limit (max_result_bytes)" in note and "upstream 'hostile'" in note
    assert result.structured_content is None  # the 200 KiB structured copy did not fit either
    assert len(fits.content) == 1 and len(fits.content[0].text) == 10 * 1024


async def test_calls_beyond_the_concurrency_limit_of_an_upstream_wait_their_turn(tmp_path: Path) -> None:
    peaks: list[int] = []

    async def hold(client: object) -> None:
        result = await client.call_tool("execute_tool", {"name": "hostile__hold", "arguments": {"seconds": 0.3}})
        peaks.append(int(text_of(result)))

    with anyio.fail_after(30):
        registry = _registry(tmp_path)
        async with gateway_session(registry, limits=Limits(max_concurrent_calls=2), in_process=in_process_of(registry)) as (_, client):
            async with anyio.create_task_group() as tg:
                for _ in range(6):
                    tg.start_soon(hold, client)
    assert len(peaks) == 6 and max(peaks) == 2


async def test_a_call_that_waits_too_long_for_a_free_slot_fails_saying_so(tmp_path: Path) -> None:
    running = anyio.Event()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        running.set()

    with anyio.fail_after(30):
        registry = _registry(tmp_path, timeout=2)
        async with gateway_session(registry, limits=Limits(max_concurrent_calls=1), in_process=in_process_of(registry)) as (_, client):
            async with anyio.create_task_group() as tg:
                # Alive (its progress restarts its timeout) and holding the only slot for as long as it runs.
                tg.start_soon(lambda: client.call_tool(
                    "execute_tool", {"name": "hostile__busy_forever", "arguments": {}}, progress_callback=on_progress
                ))
                await running.wait()
                queued = await client.call_tool("execute_tool", {"name": "hostile__echo", "arguments": {"text": "hi"}})
                tg.cancel_scope.cancel()
    assert queued.is_error
    assert "upstream 'hostile': 'echo' waited 2 s for one of the 1 call slots" in text_of(queued)


async def test_an_endless_stdout_line_ends_the_session_with_the_reason_instead_of_filling_memory(tmp_path: Path) -> None:
    with anyio.fail_after(60):
        async with gateway_session(
            _registry(tmp_path, timeout=300), limits=Limits(max_line_bytes=1024 * 1024), max_restarts=0
        ) as (_, client):
            result = await client.call_tool("execute_tool", {"name": "hostile__endless_line", "arguments": {}})
    assert result.is_error
    assert "upstream 'hostile': closed the connection during 'endless_line'" in text_of(result)
    assert "16 times the 1 MiB limit on one message (max_line_bytes)" in text_of(result)


async def test_a_result_over_the_line_limit_is_cut_like_the_others_and_the_other_calls_go_on(tmp_path: Path) -> None:
    with anyio.fail_after(60):
        async with gateway_session(
            _registry(tmp_path, timeout=300), limits=Limits(max_line_bytes=1024 * 1024), max_restarts=2
        ) as (gateway, client):
            results: dict[str, object] = {}

            async def call(key: str, name: str, arguments: dict) -> None:
                results[key] = await client.call_tool("execute_tool", {"name": name, "arguments": arguments})

            async with anyio.create_task_group() as tg:
                tg.start_soon(call, "held", "hostile__hold", {"seconds": 2})
                tg.start_soon(call, "huge", "hostile__big_text", {"kib": 3 * 1024})
            after = await client.call_tool("execute_tool", {"name": "hostile__echo", "arguments": {"text": "still here"}})
            [status] = gateway.statuses()
    huge, held = results["huge"], results["held"]
    # Answered, cut, and still the success it was: the same as a result under the line limit.
    assert not huge.is_error, text_of(huge)
    kept, note = huge.content[0].text, huge.content[-1].text
    assert kept.startswith("0123456789abcdef") and len(kept.encode()) <= 256 * 1024
    assert "upstream 'hostile' was" in note and "over the 256 KiB limit (max_result_bytes)" in note
    assert "ask the tool for less at a time" in note
    assert not held.is_error  # the call in flight beside it was not failed
    assert text_of(after) == "still here" and status.restarts == 0


async def test_a_20_mb_result_is_cut_to_the_result_limit_and_is_not_an_error(tmp_path: Path) -> None:
    with anyio.fail_after(60):
        async with gateway_session(_registry(tmp_path, timeout=300), max_restarts=0) as (_, client):
            # 20 MiB of text, twice on the wire (text and structured content): over the 16 MiB line cap.
            big = await client.call_tool("execute_tool", {"name": "hostile__big_text", "arguments": {"kib": 20 * 1024}})
            after = await client.call_tool("execute_tool", {"name": "hostile__echo", "arguments": {"text": "still here"}})
    assert not big.is_error, text_of(big)[:300]
    kept, note = big.content[0].text, big.content[-1].text
    assert len(kept.encode()) == 256 * 1024 and kept.startswith("0123456789abcdef")
    assert "over the 256 KiB limit (max_result_bytes)" in note and "was 40 MiB" in note
    assert big.structured_content is None
    assert text_of(after) == "still here"


@pytest.mark.parametrize(("tool", "reason"), [
    ("crash", "exited with code 3"),  # the process exits in the middle of the call
    ("junk_lines", "lines in a row that are not JSON-RPC on stdout"),
])
async def test_an_upstream_whose_session_ends_mid_call_is_answered_at_once_naming_why(
    tmp_path: Path, tool: str, reason: str
) -> None:
    # The call timeout is five minutes; the test's bound is far below it, so only noticing the end passes.
    with anyio.fail_after(30):
        async with gateway_session(_registry(tmp_path, timeout=300), max_restarts=0) as (_, client):
            result = await client.call_tool("execute_tool", {"name": f"hostile__{tool}", "arguments": {}})
    assert result.is_error
    assert reason in text_of(result)
