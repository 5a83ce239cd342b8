"""The third meta-tool, `run_code`: an agent's short Python script over the tools, run in a sandbox
(`sandbox.py`), with only what it prints and its last value coming back.

Inside the script, `search_tools(query, k=5)` and `call_tool(tool_id, arguments)` are the
client's own `search_tools` and `execute_tool` calls, made through `MetaTools.call_tool` with the
script's request: the same profile, withheld tools, argument validation, metrics, observers (the
learning hook) and request id as if the agent had made them itself. No rule has a second path.

Imported only when code mode is on (`serve --code-mode`); `tools/list` shows run_code only then.
"""

from __future__ import annotations

import ast

import json
from typing import TYPE_CHECKING, Any, Protocol

import anyio
import mcp_types as types

from toolscout.errors import ScriptError, ToolCallError
from toolscout.serving.meta_tools import DEFAULT_LIMIT, EXECUTE_TOOL, RUN_CODE, SEARCH_TOOL
from toolscout.serving.options import CodeModeLimits
from toolscout.serving.sandbox import ScriptOutcome, run_script

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext

__all__ = ["RUN_CODE", "CodeMode", "run_code_tool"]

# A script is a few dozen lines; a much longer one is a document pasted in by mistake.
MAX_CODE_CHARS = 20_000


def run_code_tool(limits: CodeModeLimits) -> types.Tool:
    """The definition agents read: when to use it, what the script has, and its limits."""
    return types.Tool(
        name=RUN_CODE,
        title="Run a script over the tools",
        description=(
            "Run a short Python script that calls tools itself, and get back only what it prints and the "
            "value of its last expression. Use it for a task of several tool calls whose intermediate "
            "results you do not need to read: the rows of one tool filtered and passed to another, a "
            "lookup per item of a list, a summary of a large result. For a single call, use "
            f"{EXECUTE_TOOL}.\n"
            f"The script has: search_tools(query, k={DEFAULT_LIMIT}) -> a list of tools (dicts with 'id', "
            "'description' and 'inputSchema', as search_tools returns them), call_tool(tool_id, arguments) -> "
            "the tool's structured result (a dict) or its text, print(), and a subset of Python with json, re, "
            "math, datetime, collections, itertools and functools. A refused or failed call raises "
            "RuntimeError with the reason, which the script may catch. No files, network, environment, "
            "subprocesses or other imports.\n"
            f"Limits per script: {limits.wall_seconds:g} s in all, {limits.cpu_seconds:g} s of computing, "
            f"{limits.memory_bytes // (1024 * 1024)} MiB of memory, {limits.max_tool_calls} tool calls, "
            f"{limits.max_result_bytes // 1024} KiB of output."
        ),
        input_schema={
            "type": "object",
            "properties": {
                "code": {
                    "type": "string", "minLength": 1, "maxLength": MAX_CODE_CHARS,
                    "description": "Python source; its last expression's value is returned with what it prints.",
                },
            },
            "required": ["code"],
        },
        annotations=types.ToolAnnotations(
            title="Run a script over the tools", read_only_hint=False, destructive_hint=True, open_world_hint=True
        ),
    )


class MetaToolCalls(Protocol):
    """What a script's calls go through: the client's own meta-tool calls (`server.MetaTools`)."""

    async def call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult: ...


class CodeMode:
    """Runs `run_code` scripts for one server, at most `limits.workers` at once."""

    def __init__(self, meta: MetaToolCalls, limits: CodeModeLimits) -> None:
        self._meta = meta
        self.limits = limits
        self.tool = run_code_tool(limits)
        self._slots = anyio.CapacityLimiter(limits.workers)

    async def run(self, ctx: ServerRequestContext[Any], arguments: dict[str, Any]) -> types.CallToolResult:
        code = _code(arguments)
        outcome = await run_script(code, self._functions(ctx), self.limits, self._slots)
        return _answer(outcome, self.limits.max_result_bytes)

    def _functions(self, ctx: ServerRequestContext[Any]) -> dict[str, Any]:
        """The script's host functions, each one meta-tool call of this client's own."""

        async def call_meta(name: str, arguments: dict[str, Any]) -> types.CallToolResult:
            answer = await self._meta.call_tool(ctx, types.CallToolRequestParams(name=name, arguments=arguments))
            if isinstance(answer, types.InputRequiredResult):
                raise ToolCallError(
                    f"'{arguments.get('name')}' needs input from the client, which a script cannot give; "
                    f"call it with {EXECUTE_TOOL} instead."
                )
            if answer.is_error:
                raise ToolCallError(_text_of(answer))  # execute_tool's own words, raised in the script
            return answer

        async def search_tools(query: str, k: int = DEFAULT_LIMIT) -> list[dict[str, Any]]:
            result = await call_meta(SEARCH_TOOL, {"query": query, "limit": k})
            return list((result.structured_content or {}).get("tools", []))

        async def call_tool(tool_id: str, arguments: dict[str, Any] | None = None) -> Any:
            result = await call_meta(EXECUTE_TOOL, {"name": tool_id, "arguments": arguments or {}})
            return _value_of(result)

        return {"search_tools": search_tools, "call_tool": call_tool}


def _code(arguments: dict[str, Any]) -> str:
    unknown = [key for key in arguments if key != "code"]
    if unknown:
        raise ScriptError(f"run_code takes one argument, 'code' (the script's Python source); got {unknown[0]!r} too.")
    code = arguments.get("code")
    if not isinstance(code, str) or not code.strip():
        raise ScriptError("'code' must be the Python source of the script, e.g. \"len(search_tools('weather'))\".")
    if len(code) > MAX_CODE_CHARS:
        raise ScriptError(f"'code' is {len(code):,} characters; a script may have at most {MAX_CODE_CHARS:,}.")
    refused = _host_imports(code)
    if refused:
        raise ScriptError(
            f"'import {refused[0]}' is refused: a script runs in a sandbox with no file system, processes, "
            "network or environment. Reach tools with search_tools(query, k) and call_tool(tool_id, arguments), "
            "and report with print()."
        )
    return code


# The host's file system, processes, network and interpreter. The sandbox has none of them (its
# stand-in `os` fails call by call); refusing the import says so once, before anything runs.
_HOST_MODULES = frozenset({
    "builtins", "ctypes", "importlib", "io", "multiprocessing", "os", "pathlib", "shutil", "signal",
    "socket", "subprocess", "sys", "threading",
})


def _host_imports(code: str) -> list[str]:
    """The host modules `code` imports (none if it does not parse: the sandbox reports that)."""
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return []
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name.split(".")[0] for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.append(node.module.split(".")[0])
    return [name for name in names if name in _HOST_MODULES]


def _value_of(result: types.CallToolResult) -> Any:
    """What call_tool returns into the script: the structured result, else the text."""
    if result.structured_content is not None:
        return result.structured_content
    return _text_of(result)


def _text_of(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


def _answer(outcome: ScriptOutcome, max_bytes: int) -> types.CallToolResult:
    """The run_code result: printed text and last value, as text and structured content, capped."""
    value = _jsonable(outcome.value)
    shown = json.dumps(value, ensure_ascii=False)
    text = outcome.printed + (shown if value is not None else "")
    structured: dict[str, Any] = {"printed": outcome.printed, "value": value, "tool_calls": outcome.calls}
    if len(text.encode()) > max_bytes:
        cut = text.encode()[:max_bytes].decode(errors="ignore")
        text = f"{cut}\n[cut at {max_bytes:,} bytes, this gateway's limit: print or return less]"
        structured = {"printed": cut, "value": None, "tool_calls": outcome.calls, "truncated": True}
    return types.CallToolResult(content=[types.TextContent(text=text or "(the script printed nothing and returned None)")],
                                structured_content=structured)


def _jsonable(value: Any) -> Any:
    """The value as JSON can carry it: sets and tuples as lists, anything else as its repr."""
    try:
        return json.loads(json.dumps(value, default=lambda v: list(v) if isinstance(v, (set, frozenset)) else repr(v)))
    except (TypeError, ValueError):
        return repr(value)
