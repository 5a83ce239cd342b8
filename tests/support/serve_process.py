"""`toolscout serve` run as a real subprocess over HTTP, for the tests that need the command itself."""

from __future__ import annotations

import re
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio


def serve_command(registry: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "toolscout.cli", "serve", "--registry", str(registry), "--model", "none", *extra]


@asynccontextmanager
async def served_over_http(
    command: list[str], env: Mapping[str, str] | None = None, log: list[str] | None = None
) -> AsyncIterator[str]:
    """Start `command` (a `serve --transport http --port 0`), yield the URL it serves; always stop it.

    Its stderr is read all along (a full pipe would stall it); with `log`, its chunks are kept there.
    """
    async with await anyio.open_process(command, env=dict(env) if env is not None else None) as process:
        try:
            url, seen = await _served_url(process)
            if log is not None:
                log.append(seen)
            async with anyio.create_task_group() as tg:
                tg.start_soon(_drain, process, log)
                yield url
                tg.cancel_scope.cancel()
        finally:
            process.terminate()  # so that it stops its upstreams; killed if that takes too long
            with anyio.move_on_after(15):
                await process.wait()
            if process.returncode is None:
                process.kill()


async def served_url(process: Any) -> str:
    """Read the server's stderr until it logs the address it listens on."""
    url, _ = await _served_url(process)
    return url


async def _served_url(process: Any) -> tuple[str, str]:
    """Read the server's stderr until it logs the address it listens on: (URL, what it read)."""
    seen = ""
    assert process.stderr is not None
    async for chunk in process.stderr:
        seen += chunk.decode(errors="replace")
        if match := re.search(r"streamable HTTP at (http://\S+/mcp)", seen):
            return match.group(1), seen
    raise AssertionError(f"toolscout serve exited without serving:\n{seen}")


async def _drain(process: Any, log: list[str] | None) -> None:
    async for chunk in process.stderr:
        if log is not None:
            log.append(chunk.decode(errors="replace"))
