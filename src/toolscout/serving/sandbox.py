"""The one seam to pydantic-monty, the sandbox `run_code` scripts run in.

    outcome = await run_script(code, {"call_tool": call_tool}, limits, slots)
    outcome.printed   # what the script printed
    outcome.value     # its last expression's value (None if it ended with a statement)

Monty is a Python-subset interpreter written for code from models: no file system, network,
environment or imports beyond a few pure modules unless the host hands them in. Each script runs
in a worker subprocess of its own pool, so a crash, an allocator abort or a runaway loop ends the
worker and never the gateway; starting a worker costs a few milliseconds (benchmarks/code_mode.py),
little beside one tool call, and a pool per script leaves no state from one script to the next.

The host functions (`search_tools`, `call_tool`) are answered here, one suspension at a time, so
that the wall-time and tool-call limits are checked at each call and a script over either is
ended outright, not handed an exception it could catch and carry on after. The interpreter's own
limits (execution time, memory, recursion) are enforced inside the worker, and the pool's
request timeout kills a worker that stops answering.

Nothing else of toolscout imports pydantic_monty, and this module is imported only when code mode
is on (`serving/code_mode.py`).

A sharp edge of pydantic-monty 1.4.0: a closed pool's I/O threads may still wake the event loop for
a few milliseconds, and a process that leaves its event loop and exits within that time can abort
in interpreter finalization (SIGABRT, exit status 134). `serve` never does (stopping its upstreams
takes longer; tested by exiting right after an answer); a short program calling `run_script` last
should give its loop a moment (`await anyio.sleep(0.05)`) before it returns.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import anyio
from pydantic_monty import (
    AsyncFunctionSnapshot,
    AsyncMonty,
    CollectString,
    MontyComplete,
    MontyCrashedError,
    MontyError,
    MontyRuntimeError,
    MontySyntaxError,
)

from toolscout.errors import ScriptError, ToolCallError
from toolscout.serving.options import CodeModeLimits

__all__ = ["HostFunction", "ScriptOutcome", "run_script"]

HostFunction = Callable[..., Awaitable[Any]]

# Past the interpreter's own time limit, how long the pool waits for a worker before killing it.
_STALL_GRACE_SECONDS = 5.0
# Host calls the pool serves per script besides tool calls (name lookups): a margin, not a limit.
_SUSPENSION_MARGIN = 100


@dataclass(frozen=True)
class ScriptOutcome:
    printed: str
    value: Any
    calls: int


async def run_script(
    code: str, functions: Mapping[str, HostFunction], limits: CodeModeLimits, slots: anyio.CapacityLimiter
) -> ScriptOutcome:
    """Run `code` with `functions` callable from it; ScriptError saying what went wrong if it fails.

    `slots` bounds how many scripts run at once (one worker each). Shielded from cancellation: a
    feed cancelled while its worker computes cannot be closed cleanly, and every limit below
    already bounds how long a script can take.
    """
    with anyio.CancelScope(shield=True):
        async with slots:
            return await _run(code, functions, limits)


async def _run(code: str, functions: Mapping[str, HostFunction], limits: CodeModeLimits) -> ScriptOutcome:
    printed = CollectString(max_bytes=limits.max_result_bytes)
    pool = AsyncMonty(min_processes=1, max_processes=1, request_timeout=limits.cpu_seconds + _STALL_GRACE_SECONDS)
    try:
        async with pool, pool.checkout(
            script_name="script.py",
            limits={
                "max_feed_duration_secs": limits.cpu_seconds,
                "max_memory": limits.memory_bytes,
                "max_recursion_depth": limits.max_recursion_depth,
                "max_suspensions": limits.max_tool_calls + _SUSPENSION_MARGIN,
            },
            # time.sleep returns at once: waiting would only hold a worker and the wall-time budget.
            os_policy={"sleep": "zero"},
        ) as session:
            snapshot = await session.feed_start(code, external_lookup=dict(functions), print_callback=printed)
            calls, value = await _drive(snapshot, functions, limits)
    except MontyCrashedError as exc:
        raise ScriptError(
            f"The sandbox running the script stopped ({exc}); the script did not finish. The gateway "
            "is unharmed and the next script gets a fresh sandbox."
        ) from None
    except (MontyRuntimeError, MontySyntaxError) as exc:
        raise ScriptError(f"The script failed:\n{exc.display('traceback')}{_limit_hint(exc)}") from None
    except MontyError as exc:
        raise ScriptError(f"The script could not be run: {exc}") from None
    return ScriptOutcome(printed=_printed(printed), value=value, calls=calls)


async def _drive(snapshot: Any, functions: Mapping[str, HostFunction], limits: CodeModeLimits) -> tuple[int, Any]:
    """Answer the script's host calls until it completes: (tool calls made, its last value)."""
    deadline = anyio.current_time() + limits.wall_seconds
    calls = 0
    while not isinstance(snapshot, MontyComplete):
        if not (isinstance(snapshot, AsyncFunctionSnapshot) and snapshot.function_name in functions):
            snapshot = await snapshot.resume_auto()
            continue
        calls += 1
        if calls > limits.max_tool_calls:
            raise ScriptError(
                f"The script was stopped: it made more than {limits.max_tool_calls} tool calls, this "
                "gateway's limit per script. Do fewer calls per script, or split the work in several."
            )
        answer: dict[str, Any] | None = None
        with anyio.move_on_after(deadline - anyio.current_time()):
            answer = await _answer(functions[snapshot.function_name], snapshot.args, snapshot.kwargs)
        if answer is None or anyio.current_time() > deadline:
            raise ScriptError(
                f"The script was stopped: it ran past its {limits.wall_seconds:g} s wall-time limit "
                "(tool calls included). Do less per script, or split the work in several."
            )
        snapshot = await snapshot.resume(answer)
    return calls, snapshot.output


async def _answer(function: HostFunction, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    """What a host call returns into the script: its value, or an exception the script may catch."""
    try:
        inspect.signature(function).bind(*args, **kwargs)
    except TypeError as exc:
        return {"exc_type": "TypeError", "message": f"{function.__name__}(): {exc}"}
    try:
        return {"return_value": await function(*args, **kwargs)}
    except ToolCallError as exc:
        # Refused or failed exactly as execute_tool would have answered: the same words.
        return {"exc_type": "RuntimeError", "message": str(exc)}


def _printed(collected: CollectString) -> str:
    return str(getattr(collected, "output", "") or "")


def _limit_hint(exc: MontyError) -> str:
    """A line on which limit stopped the script, when one did (the error alone reads like a bug)."""
    shown = exc.display("type-msg") if isinstance(exc, MontyRuntimeError) else ""
    if shown.startswith("TimeoutError: feed time limit"):
        return "\nThe script computed for longer than this gateway allows; make it do less."
    if shown.startswith("MemoryError"):
        return "\nThe script used more memory (or printed more) than this gateway allows; keep less in memory."
    if shown.startswith("RecursionError"):
        return "\nThe script recursed deeper than this gateway allows."
    return ""
